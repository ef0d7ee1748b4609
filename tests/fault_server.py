"""TEST DOUBLE: a fault-injecting HTTP server for faults a real vLLM cannot be made to show.

This is NOT a vLLM and is never used as a serving target. It exists only so the client's typed
failures can be tested for: a hung endpoint, HTTP 500 with a body, malformed SSE, a stream cut
mid-way (no ``[DONE]``), nonsense JSON, a mid-stream error object, an echoed API key, a server
that trickles its reply one byte at a time, and a /metrics body of several MB.
Everything a real server can show (health, chat, tools, 400s, metrics) is tested against the
real vLLM CPU target instead.

Routes are chosen by path prefix ``/<fault>/...`` so one server serves every fault, e.g.
``http://127.0.0.1:PORT/hang/v1/chat/completions``. ``/hang`` blocks until ``release()`` or
``close()`` (an Event, no sleeps); ``hung`` is set once a request is held there. ``/trickle``
sends its headers, then one byte every ``trickle_gap_s`` until ``release()``/``close()`` or the
client hangs up: that pause between bytes *is* the fault, not synchronisation.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = {
    "id": "chatcmpl-test",
    "object": "chat.completion.chunk",
    "model": "fault-double",
    "choices": [{"index": 0, "delta": {"content": "tok"}, "finish_reason": None}],
}
FAULTS = (
    "ok",
    "hang",
    "status500",
    "malformed_sse",
    "cut_stream",
    "close_stream",
    "nonsense_json",
    "stream_error",
    "echo_auth",
    "bad_metrics",
    "trickle",
    "big_metrics",
    # load check (runbook 05): error bodies as vLLM and proxies send them
    "status503",
    "nccl500",
    "oom500",
    "context400",
    "load_mix",
)
#: ``/load_mix``: healthy GETs; POSTs cycle through these replies (a node failing under load).
LOAD_MIX = ("ok", "status503", "nccl500", "oom500", "context400", "hang")
BIG_METRICS_BYTES = 6 * 1024 * 1024


def big_metrics_body(size: int = BIG_METRICS_BYTES) -> bytes:
    """Valid Prometheus text of about ``size`` bytes (one histogram family, many label sets)."""
    lines = ["# HELP vllm:fault_double_seconds A large family.", "# TYPE vllm:fault_double_seconds histogram"]
    n, total = 0, 0
    while total < size:
        line = f'vllm:fault_double_seconds_bucket{{model_name="m",engine="{n}",le="+Inf"}} {n}'
        lines.append(line)
        total += len(line) + 1
        n += 1
    return ("\n".join(lines) + "\n").encode()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that time out and hang up are the point of these tests: no tracebacks."""


class FaultServer:
    """Start with ``FaultServer().start()``; ``base_url(fault)`` gives the URL prefix for a fault."""

    def __init__(self) -> None:
        self._release = threading.Event()
        self.hung = threading.Event()  # set when a request is being held by /hang
        self.trickling = threading.Event()  # set when /trickle has sent its first byte
        self.trickle_gap_s = 0.05
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        self.mix_count = 0
        self.mix_lock = threading.Lock()
        self.server_log: str | None = None  # /load_mix appends the server-side line of its fault here
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:
                server._dispatch(self)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                server._dispatch(self)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def base_url(self, fault: str = "ok") -> str:
        assert fault in FAULTS, fault
        return f"http://127.0.0.1:{self.port}/{fault}"

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def release(self) -> None:
        """Let every hung request finish."""
        self._release.set()

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- behaviour ---------------------------------------------------------------------------
    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        self.requests.append((h.command, h.path, dict(h.headers)))
        fault = h.path.strip("/").split("/", 1)[0]
        try:
            getattr(self, f"_fault_{fault}", self._fault_ok)(h)
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str = "application/json") -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    @staticmethod
    def _start_sse(h: BaseHTTPRequestHandler, chunked: bool = True) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Connection", "close")
        h.end_headers()

    @staticmethod
    def _chunk(h: BaseHTTPRequestHandler, text: str) -> None:
        data = text.encode()
        h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        h.wfile.flush()

    def _fault_ok(self, h: BaseHTTPRequestHandler) -> None:
        if h.path.endswith("/health"):
            self._send(h, 200, b"")
        else:
            self._send(h, 200, json.dumps({"object": "list", "data": [{"id": "fault-double"}]}).encode())

    def _fault_hang(self, h: BaseHTTPRequestHandler) -> None:
        self.hung.set()
        self._release.wait()  # released by the test (or close()), never by a timer
        self._send(h, 200, b"{}")

    def _fault_status500(self, h: BaseHTTPRequestHandler) -> None:
        body = {"error": {"message": "EngineCore encountered an issue: out of blocks", "type": "InternalServerError"}}
        self._send(h, 500, json.dumps(body).encode())

    def _fault_status503(self, h: BaseHTTPRequestHandler) -> None:
        body = {"error": {"message": "Service Unavailable: server overloaded", "type": "ServiceUnavailableError"}}
        self._send(h, 503, json.dumps(body).encode())

    def _fault_nccl500(self, h: BaseHTTPRequestHandler) -> None:
        msg = (
            "EngineCore failed: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
            "OpType=ALLREDUCE) ran for 600000 milliseconds before timing out. NCCL error: remote process exited"
        )
        self._send(h, 500, json.dumps({"error": {"message": msg, "type": "InternalServerError"}}).encode())

    def _fault_oom500(self, h: BaseHTTPRequestHandler) -> None:
        msg = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)"
        self._send(h, 500, json.dumps({"error": {"message": msg, "type": "InternalServerError"}}).encode())

    def _fault_context400(self, h: BaseHTTPRequestHandler) -> None:
        msg = (
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(4984 in the messages, 16 in the completion)."
        )
        body = {"error": {"message": msg, "type": "BadRequestError", "code": 400}}
        self._send(h, 400, json.dumps(body).encode())

    def _fault_load_mix(self, h: BaseHTTPRequestHandler) -> None:
        """GETs answer like a healthy server; each POST gets the next reply of LOAD_MIX."""
        if h.command == "GET":
            if h.path.endswith("/v1/models"):
                models = {"object": "list", "data": [{"id": "fault-double", "max_model_len": 512}]}
                self._send(h, 200, json.dumps(models).encode())
            else:
                self._send(h, 200 if h.path.endswith("/health") else 404, b"")
            return
        with self.mix_lock:
            kind = LOAD_MIX[self.mix_count % len(LOAD_MIX)]
            self.mix_count += 1
        if kind == "ok":
            self._start_sse(h)
            for _ in range(4):
                self._chunk(h, f"data: {json.dumps(CHUNK)}\n\n")
            self._chunk(h, "data: [DONE]\n\n")
            self._chunk(h, "")
            return
        if self.server_log and kind in ("nccl500", "oom500"):
            line = {
                "nccl500": "ERROR [rank3]: Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE)",
                "oom500": "ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            }[kind]
            with open(self.server_log, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        getattr(self, f"_fault_{kind}")(h)

    def _fault_nonsense_json(self, h: BaseHTTPRequestHandler) -> None:
        self._send(h, 200, b'{"choices": [ {"message": nonsense ]')

    def _fault_malformed_sse(self, h: BaseHTTPRequestHandler) -> None:
        self._start_sse(h)
        self._chunk(h, f"data: {json.dumps(CHUNK)}\n\n")
        self._chunk(h, "data: {not json at all\n\n")
        self._chunk(h, "")

    def _fault_cut_stream(self, h: BaseHTTPRequestHandler) -> None:
        """Chunked stream whose connection drops without the terminating chunk."""
        self._start_sse(h)
        for _ in range(3):
            self._chunk(h, f"data: {json.dumps(CHUNK)}\n\n")
        h.close_connection = True
        h.connection.shutdown(2)

    def _fault_close_stream(self, h: BaseHTTPRequestHandler) -> None:
        """Well-framed stream that simply ends without ``data: [DONE]``."""
        self._start_sse(h)
        for _ in range(3):
            self._chunk(h, f"data: {json.dumps(CHUNK)}\n\n")
        self._chunk(h, "")

    def _fault_stream_error(self, h: BaseHTTPRequestHandler) -> None:
        self._start_sse(h)
        self._chunk(h, f"data: {json.dumps(CHUNK)}\n\n")
        err = {"error": {"message": "request aborted by engine", "type": "BadRequestError", "code": 400}}
        self._chunk(h, f"data: {json.dumps(err)}\n\n")
        self._chunk(h, "data: [DONE]\n\n")
        self._chunk(h, "")

    def _fault_echo_auth(self, h: BaseHTTPRequestHandler) -> None:
        """A careless proxy that echoes the Authorization header in its error body."""
        body = {"error": {"message": f"unauthorised: {h.headers.get('Authorization')}"}}
        self._send(h, 401, json.dumps(body).encode())

    def _fault_bad_metrics(self, h: BaseHTTPRequestHandler) -> None:
        self._send(h, 200, b"<html>not prometheus</html>", "text/html")

    def _fault_big_metrics(self, h: BaseHTTPRequestHandler) -> None:
        self._send(h, 200, big_metrics_body(), "text/plain; version=0.0.4")

    def _fault_trickle(self, h: BaseHTTPRequestHandler) -> None:
        """Headers at once, then a never-ending body one byte per gap (no Content-Length)."""
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream" if h.path.endswith("/completions") else "application/json")
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.flush()
        pattern = b'{"data": [' + b" " * 64
        i = 0
        while not self._release.is_set():
            h.wfile.write(pattern[i % len(pattern) : i % len(pattern) + 1])
            h.wfile.flush()
            self.trickling.set()
            i += 1
            time.sleep(self.trickle_gap_s)  # the fault itself: the pause between bytes
        h.close_connection = True
