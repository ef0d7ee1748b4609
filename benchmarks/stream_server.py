"""BENCHMARK DOUBLE: a zero-cost streaming server shaped like vLLM's OpenAI server. Not a vLLM.

Why: to measure a load *client* (ours against ``vllm bench serve``), the server must cost next to
nothing and know exactly when it sent each byte. Every chat or completions request gets what
vLLM's server sends when streaming — a role chunk, K content chunks (K = ``max_tokens``), a usage
chunk, ``data: [DONE]`` — over chunked HTTP/1.1 keep-alive.

Injected latency is on an absolute schedule from the request's arrival: the first content chunk
leaves at arrival + TTFT, the k-th at arrival + TTFT + (k-1)·ITL, whatever else the server is
doing; ``--ttft-per-inflight-ms`` adds that much TTFT per request already in flight (a server
that slows down with concurrency, for the over-saturation test). ``GET /stats`` reports what it
emitted: requests, chunks, and how late each first content chunk left against its schedule, so a
client's timing error can be told from the server's.

    python benchmarks/stream_server.py --port 8123 --ttft-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import threading
import time

_MAX_TOKENS = re.compile(rb'"max_(?:completion_)?tokens"\s*:\s*(\d+)')
_STREAM_FALSE = re.compile(rb'"stream"\s*:\s*false')


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(obj: dict) -> bytes:
    return _chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


class _Rendered:
    """Pre-rendered bytes per (api, K): the server formats nothing per request."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._cache: dict[tuple[bool, int], tuple[bytes, bytes, bytes, bytes]] = {}

    def get(self, chat: bool, k: int) -> tuple[bytes, bytes, bytes, bytes]:
        """(headers, role chunk, one content chunk, usage + [DONE] + last chunk)."""
        key = (chat, k)
        if key not in self._cache:
            base = {"id": "cmpl-bench", "created": 0, "model": self.model}
            if chat:
                base["object"] = "chat.completion.chunk"
                role = _event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
                tok = _event({**base, "choices": [{"index": 0, "delta": {"content": " tok"}, "finish_reason": None}]})
            else:
                base["object"] = "text_completion"
                role = b""
                tok = _event({**base, "choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
            usage = {"prompt_tokens": 8, "completion_tokens": k, "total_tokens": 8 + k}
            tail = _event({**base, "choices": [], "usage": usage}) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
            head = (
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            self._cache[key] = (head, role, tok, tail)
        return self._cache[key]


class StreamServer:
    """The server; ``serve_forever`` in a process, or ``start_in_thread`` inside a test."""

    def __init__(
        self,
        *,
        ttft_ms: float = 0.0,
        itl_ms: float = 0.0,
        ttft_per_inflight_ms: float = 0.0,
        model: str = "stream-double",
        max_tokens_cap: int = 4096,
    ) -> None:
        self.ttft = ttft_ms / 1000.0
        self.itl = itl_ms / 1000.0
        self.per_inflight = ttft_per_inflight_ms / 1000.0
        self.max_tokens_cap = max_tokens_cap
        self.rendered = _Rendered(model)
        self.model = model
        self.requests = 0
        self.chunks = 0
        self.inflight = 0
        self.max_inflight = 0
        self.first_late_s: list[float] = []  # first content chunk: actual send − scheduled send
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()

    # -- protocol ---------------------------------------------------------------------------
    def _protocol(self) -> asyncio.Protocol:
        server = self

        class Proto(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.t = transport
                self.buf = b""

            def data_received(self, data: bytes) -> None:
                arrival = time.monotonic()
                self.buf += data
                while True:
                    end = self.buf.find(b"\r\n\r\n")
                    if end < 0:
                        return
                    head = self.buf[:end]
                    lower = head.lower()
                    at = lower.find(b"content-length:")
                    length = 0
                    if at >= 0:
                        eol = lower.find(b"\r\n", at)
                        length = int(head[at + 15 : eol if eol >= 0 else len(head)])
                    if len(self.buf) < end + 4 + length:
                        return
                    body = self.buf[end + 4 : end + 4 + length]
                    self.buf = self.buf[end + 4 + length :]
                    server._handle(self.t, head, body, arrival)

        return Proto()

    def _handle(self, t: asyncio.BaseTransport, head: bytes, body: bytes, arrival: float) -> None:
        line = head.split(b"\r\n", 1)[0]
        if line.startswith(b"GET"):
            path = line.split(b" ")[1]
            if path.endswith(b"/stats"):
                payload = json.dumps(self.stats()).encode()
            elif path.endswith(b"/v1/models"):
                payload = json.dumps({"object": "list", "data": [{"id": self.model, "max_model_len": 4096}]}).encode()
            else:
                payload = b""
            t.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(payload), payload)
            )  # type: ignore[attr-defined]
            return
        m = _MAX_TOKENS.search(body)
        k = max(1, min(self.max_tokens_cap, int(m.group(1)) if m else 16))
        chat = b"chat/completions" in line
        head_b, role, tok, tail = self.rendered.get(chat, k)
        self.requests += 1
        self.chunks += k
        ttft = self.ttft + self.per_inflight * self.inflight
        if ttft <= 0 and self.itl <= 0:
            t.write(head_b + role + tok * k + tail)  # type: ignore[attr-defined]
            return
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        t.write(head_b)  # headers now; the role chunk leaves with the first token, as vLLM sends it
        loop = self._loop
        assert loop is not None
        first_at = arrival + ttft

        def send(i: int) -> None:
            if t.is_closing():  # the client hung up: stop this request's schedule
                self.inflight -= 1
                return
            if i == 0 and len(self.first_late_s) < 100000:
                self.first_late_s.append(time.monotonic() - first_at)
            data = role + tok if i == 0 else tok
            if i == k - 1:
                t.write(data + tail)  # type: ignore[attr-defined]
                self.inflight -= 1
            else:
                t.write(data)  # type: ignore[attr-defined]
                loop.call_at(first_at + (i + 1) * self.itl, send, i + 1)

        loop.call_at(first_at, send, 0)

    def stats(self) -> dict:
        late = sorted(self.first_late_s)
        pick = (lambda q: round(late[min(len(late) - 1, int(q * len(late)))] * 1000, 3)) if late else (lambda q: None)
        return {
            "requests": self.requests,
            "content_chunks": self.chunks,
            "ttft_ms": self.ttft * 1000,
            "itl_ms": self.itl * 1000,
            "ttft_per_inflight_ms": self.per_inflight * 1000,
            "max_inflight": self.max_inflight,
            "server_cpu_s": round(time.process_time(), 3),
            "first_chunk_late_ms": {
                "mean": round(1000 * sum(late) / len(late), 3) if late else None,
                "p50": pick(0.5),
                "p99": pick(0.99),
                "max": pick(1.0),
            },
        }

    # -- running --------------------------------------------------------------------------
    async def _serve(self, host: str, port: int, sock: socket.socket | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        if sock is not None:
            self._server = await self._loop.create_server(self._protocol, sock=sock, backlog=4096)
        else:
            self._server = await self._loop.create_server(self._protocol, host, port, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._server.serve_forever()

    def serve_forever(self, host: str = "127.0.0.1", port: int = 0) -> None:
        loop = _new_loop()
        try:
            loop.run_until_complete(self._serve(host, port))
        except (KeyboardInterrupt, asyncio.CancelledError):
            pass
        finally:
            loop.close()

    def start_in_thread(self, host: str = "127.0.0.1") -> StreamServer:
        """Start on a free port in a daemon thread; returns once it accepts connections."""
        threading.Thread(target=self.serve_forever, args=(host, 0), daemon=True).start()
        if not self._ready.wait(10):
            raise RuntimeError("stream server did not start")
        return self

    def close(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--ttft-ms", type=float, default=0.0)
    ap.add_argument("--itl-ms", type=float, default=0.0)
    ap.add_argument("--ttft-per-inflight-ms", type=float, default=0.0)
    ap.add_argument("--model", default="stream-double")
    args = ap.parse_args(argv)
    StreamServer(
        ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, ttft_per_inflight_ms=args.ttft_per_inflight_ms, model=args.model
    ).serve_forever(args.host, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
