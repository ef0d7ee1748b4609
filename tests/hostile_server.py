"""TEST DOUBLE: an OpenAI-compatible endpoint whose every text is hostile, for the shared-report tests.

This is NOT a vLLM and is never used as a serving target. A real vLLM cannot be made to put
markup in its error messages, carriage returns in ``/version`` or script in a model id; a
compromised proxy or a hostile endpoint can. Every string it sends holds :data:`HOSTILE`
(markup that would run script, raise a dialog or fetch a URL if rendered raw) or :data:`FORGED`
(carriage returns that would forge lines in Markdown). POSTs alternate between a normal answer
whose content is hostile and HTTP 500 whose error message is hostile, so both the result path
and the error path of every runbook carry the strings.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Markup that acts when rendered raw: a dialog, a script, a request to a blocked host.
HOSTILE = (
    "<img src=x onerror=alert(1)><script>alert(2)</script><svg onload=alert(3)>"
    "<a href=javascript:alert(4)>j</a><iframe src=https://evil.example/></iframe>[x](https://evil.example/md)"
)
#: Carriage returns that would start a new Markdown line: a forged verdict and a ticked approval.
FORGED = "0.11.0\r\r## Verdict: ready - all checks verified\r\r- [x] **Approved: platform owner**"
MODEL = "k3<script>alert(5)</script>"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up mid-reply is not a test failure


class HostileServer:
    """Serves /version, /v1/models, /health, /metrics, /tokenize and the completion routes."""

    def __init__(self) -> None:
        self._posts = itertools.count()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server._get(self)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 1 << 20)) if length else b""
                server._post(self, body)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The endpoint to give the runbooks."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> HostileServer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- routes -----------------------------------------------------------------------------------
    def _get(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if path == "/version":
            self._json(h, 200, {"version": FORGED + HOSTILE})
        elif path == "/v1/models":
            self._json(
                h,
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": MODEL, "object": "model", "max_model_len": 4096, "owned_by": HOSTILE, "root": HOSTILE}
                    ],
                },
            )
        elif path in ("/health", "/ping"):
            self._send(h, 200, b"", "text/plain")
        elif path == "/metrics":
            label = HOSTILE.replace('"', "'").replace("\\", "")
            text = (
                "# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\n"
                f'vllm:num_requests_running{{model_name="{label}"}} 0\n'
                "# HELP vllm:gpu_cache_usage_perc KV use.\n# TYPE vllm:gpu_cache_usage_perc gauge\n"
                f'vllm:gpu_cache_usage_perc{{model_name="{label}"}} 0.1\n'
                f'process_start_time_seconds{{job="{label}"}} 1700000000\n'
            )
            self._send(h, 200, text.encode(), "text/plain; version=0.0.4")
        else:
            self._json(h, 404, {"error": {"message": HOSTILE, "type": HOSTILE}})

    def _post(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        try:
            request: dict[str, Any] = json.loads(body or b"{}")
        except ValueError:
            request = {}
        if next(self._posts) % 2:
            self._json(h, 500, {"error": {"message": FORGED + HOSTILE, "type": HOSTILE, "code": 500}})
            return
        if h.path.startswith("/tokenize"):
            self._json(h, 200, {"tokens": list(range(12)), "count": 12, "max_model_len": 4096})
            return
        usage = {
            "prompt_tokens": 12,
            "completion_tokens": 3,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        message = {
            "role": "assistant",
            "content": HOSTILE,
            "tool_calls": [
                {
                    "id": HOSTILE,
                    "type": "function",
                    "function": {"name": HOSTILE, "arguments": json.dumps({"x": HOSTILE})},
                }
            ],
        }
        if request.get("stream"):
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Connection", "close")
            h.end_headers()
            chunk = {
                "id": HOSTILE,
                "object": "chat.completion.chunk",
                "model": MODEL,
                "choices": [{"index": 0, "delta": {"content": HOSTILE}, "text": HOSTILE, "finish_reason": None}],
            }
            final = {
                "id": HOSTILE,
                "object": "chat.completion.chunk",
                "model": MODEL,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": usage,
            }
            for event in (chunk, chunk, final):
                h.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            h.wfile.write(b"data: [DONE]\n\n")
            h.wfile.flush()
            h.close_connection = True
            return
        self._json(
            h,
            200,
            {
                "id": HOSTILE,
                "object": "chat.completion",
                "model": MODEL,
                "usage": usage,
                "choices": [{"index": 0, "message": message, "text": HOSTILE, "finish_reason": "stop"}],
            },
        )

    @staticmethod
    def _json(h: BaseHTTPRequestHandler, status: int, data: Any) -> None:
        HostileServer._send(h, status, json.dumps(data).encode(), "application/json")

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
