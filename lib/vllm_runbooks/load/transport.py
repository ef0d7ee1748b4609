"""HTTP/1.1 keep-alive client on asyncio protocols, framing chunked SSE itself.

Why not httpx or aiohttp: a load client must not be the bottleneck it measures. ``vllm bench
serve`` (aiohttp) saturates one core at a few hundred to a few thousand requests/s and adds its own
queueing to TTFT at high concurrency; httpx is slower still. Here the bytes of one request pass
through one ``data_received`` call per network read: the chunked framing and the ``data:`` events
are cut out of the buffer in place, and each event is handed to the request's sink with the
``time.perf_counter()`` of the read that completed it — the closest a Python client gets to the
wire time. ``benchmarks/bench_load_engine.py`` measures the choice against the alternatives.

Bounded: headers are capped at 64 KiB, a reply at ``max_bytes``, one SSE event at
``MAX_EVENT_BYTES``, and the caller puts a deadline on every request twice: a timer
(``Connection.abort``) for a server that never answers, and ``send(deadline=…)``, which the read
loops check themselves — a hostile reply that keeps one ``data_received`` call busy holds the event
loop, and no timer runs until it returns. Every loop moves forward (a chunk size is 1-16 hex
digits within the cap) and searches only bytes it has not searched before, so a reply costs time
linear in its size.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEADER_BYTES = 64 * 1024
ERROR_BODY_BYTES = 64 * 1024
#: one SSE event (a vLLM chunk is under 1 KiB; a whole tool call is a few KiB): over this, the reply fails
MAX_EVENT_BYTES = 2**20
#: a chunk-size line with its extensions; a longer one is not HTTP
MAX_CHUNK_LINE = 1024
_HEX_DIGITS = b"0123456789abcdefABCDEF"

_HEAD, _BODY_CHUNKED, _BODY_LENGTH, _BODY_EOF, _IDLE = range(5)


class _Abort(Exception):
    """Raised inside the framing to end the request at once: (kind, message) for ``Sink.on_fail``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class Sink:
    """What a connection tells the request it carries (the engine's request state implements it)."""

    def on_headers(self, now: float, status: int, headers: dict[str, str]) -> None:  # pragma: no cover
        """Status line and headers arrived."""

    def on_event(self, now: float, payload: bytes) -> None:  # pragma: no cover
        """One SSE event's ``data`` (lines joined) arrived."""

    def on_body(self, data: bytes) -> None:  # pragma: no cover
        """Bytes of a non-SSE body (a JSON reply or an error body)."""

    def on_done(self, now: float) -> None:  # pragma: no cover
        """The reply is complete."""

    def on_fail(self, now: float, kind: str, message: str) -> None:  # pragma: no cover
        """The reply broke: ``kind`` is ``protocol``, ``connection``, ``too_large``, ``timeout`` or ``cancelled``."""


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: scheme, host, port and the path prefix of the base URL."""

    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        """Split a base URL (``http://host:port[/prefix]``; a trailing ``/v1`` is dropped)."""
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"endpoint must be an http(s) URL with a host, not {base_url!r}")
        if parts.username or parts.password:
            raise ValueError("endpoint carries credentials; give the key through api_key_env instead")
        prefix = parts.path.rstrip("/")
        if prefix.endswith("/v1"):
            prefix = prefix[:-3]
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, prefix)

    @property
    def host_header(self) -> str:
        """The Host header: the port only when it is not the scheme's default."""
        default = 443 if self.scheme == "https" else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The URL this endpoint was parsed from, normalised."""
        return f"{self.scheme}://{self.host_header}{self.prefix}"


def request_bytes(
    endpoint: Endpoint, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    """One HTTP/1.1 request, ready to write (built once per distinct payload, not per send)."""
    lines = [f"{method} {endpoint.prefix}{path} HTTP/1.1", f"Host: {endpoint.host_header}"]
    if body or method == "POST":
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.sink: Sink | None = None
        self._buf = bytearray()
        self._state = _IDLE
        self._sse = False
        self._events = bytearray()
        self._length = 0
        self._received = 0
        self._keep_alive = True
        self._body_cap = max_bytes
        self._head_scan = 0  # where the search for the end of the headers resumes
        self._cr = False  # the last SSE byte was a CR (its LF may open the next chunk)
        self._deadline = math.inf  # perf_counter time the read loops check themselves
        self._late: tuple[str, str] = ("timeout", "deadline passed")

    # -- asyncio.Protocol ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.sink is None:  # bytes nobody asked for: this connection cannot be trusted again
            self._close()
            return
        self._received += len(data)
        if self._received > self._body_cap + MAX_HEADER_BYTES:
            self._fail(now, "too_large", f"reply exceeds the {self._body_cap} byte cap")
            return
        self._buf += data
        try:
            if now > self._deadline:
                raise _Abort(*self._late)
            self._advance(now)
        except _Abort as exc:
            self._fail(time.perf_counter(), exc.kind, exc.message)
        except (ValueError, IndexError) as exc:
            self._fail(now, "protocol", f"broken HTTP framing: {exc}")

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        sink = self.sink
        if sink is None:
            return
        now = time.perf_counter()
        if self._state == _BODY_EOF:
            try:
                if self._buf:
                    self._body(bytes(self._buf), now)
                    self._buf.clear()
                self._finish(now)
            except _Abort as exc:
                self._fail(now, exc.kind, exc.message)
            return
        self.sink = None
        detail = f": {exc}" if exc else ""
        where = "before the reply" if self._state == _HEAD else "mid-reply"
        sink.on_fail(now, "connection", f"connection closed by the server {where}{detail}")

    # -- use --------------------------------------------------------------------------------------
    def send(
        self,
        raw: bytes,
        sink: Sink,
        body_cap: int | None = None,
        *,
        deadline: float | tuple[float, str, str] | None = None,
    ) -> None:
        """Write one request; the reply is delivered to ``sink``.

        ``deadline``: a ``time.perf_counter()`` time, or (time, kind, message) for ``on_fail``
        (default kind ``timeout``); checked inside every read loop, so it holds even while one
        hostile read keeps the event loop from running the caller's timer.
        """
        self.sink = sink
        self._state = _HEAD
        self._buf.clear()
        self._events.clear()
        self._received = 0
        self._head_scan = 0
        self._cr = False
        self._body_cap = body_cap or self.max_bytes
        if deadline is None:
            self._deadline, self._late = math.inf, ("timeout", "deadline passed")
        elif isinstance(deadline, tuple):
            self._deadline, self._late = deadline[0], (deadline[1], deadline[2])
        else:
            self._deadline, self._late = deadline, ("timeout", "no complete reply before the deadline")
        assert self.transport is not None
        self.transport.write(raw)

    def abort(self, kind: str, message: str) -> None:
        """End the request in flight now (deadline, cancellation); the connection is dropped."""
        if self.sink is not None:
            self._fail(time.perf_counter(), kind, message)
        else:
            self._close()

    @property
    def reusable(self) -> bool:
        """Open, idle and keep-alive: the pool may hand it out again."""
        return not self.closed and self._state == _IDLE and self._keep_alive

    # -- framing ----------------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        buf = self._buf
        if self._state == _HEAD:
            end = buf.find(b"\r\n\r\n", self._head_scan)
            if end < 0:
                if len(buf) > MAX_HEADER_BYTES:
                    raise ValueError("headers exceed 64 KiB")
                self._head_scan = max(0, len(buf) - 3)
                return
            head = bytes(buf[:end]).decode("latin-1").split("\r\n")
            del buf[: end + 4]
            status_line = head[0].split(" ", 2)
            if len(status_line) < 2 or not status_line[0].startswith("HTTP/"):
                raise ValueError(f"not an HTTP status line: {head[0][:80]!r}")
            status = int(status_line[1])
            headers: dict[str, str] = {}
            for line in head[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            self._keep_alive = headers.get("connection", "").lower() != "close" and status_line[0] != "HTTP/1.0"
            ok = 200 <= status < 300
            self._sse = ok and headers.get("content-type", "").startswith("text/event-stream")
            if not ok:
                self._body_cap = min(self._body_cap, ERROR_BODY_BYTES)
            if headers.get("transfer-encoding", "").lower().endswith("chunked"):
                self._state = _BODY_CHUNKED
            elif "content-length" in headers:
                self._length = int(headers["content-length"])
                if self._length > self._body_cap and ok:
                    raise ValueError(f"declared Content-Length {self._length} over the {self._body_cap} byte cap")
                self._state = _BODY_LENGTH
            else:
                self._state = _BODY_EOF
                self._keep_alive = False
            sink = self.sink
            if sink is not None:
                sink.on_headers(now, status, headers)
            if self._state == _BODY_LENGTH and self._length == 0:
                self._finish(now)
                return
        if self._state == _BODY_CHUNKED:
            self._chunks(buf, now)
        elif self._state == _BODY_LENGTH:
            take = min(len(buf), self._length)
            if take:
                self._body(bytes(buf[:take]), now)
                del buf[:take]
                self._length -= take
            if self._length == 0 and self.sink is not None:
                self._finish(now)
        elif self._state == _BODY_EOF and len(buf) > 65536:
            self._body(bytes(buf), now)
            buf.clear()

    def _chunks(self, buf: bytearray, now: float) -> None:
        """Cut the complete chunks out of ``buf``; their data goes to ``_body`` once per read.

        A size that is not 1-16 hex digits, or is over the reply cap, is a protocol error: ``-6``
        once moved the cursor backwards, a loop that never ended and never yielded.
        """
        pos, n, count, last = 0, len(buf), 0, False
        pieces: list[bytearray] = []
        clock, deadline, cap = time.perf_counter, self._deadline, self._body_cap
        while pos < n:  # an error ends the request and drops the connection: no cleanup on raise
            count += 1
            if not count & 63 and clock() > deadline:
                raise _Abort(*self._late)
            eol = buf.find(b"\r\n", pos, pos + MAX_CHUNK_LINE + 2)
            if eol < 0:
                if n - pos > MAX_CHUNK_LINE:
                    raise ValueError(f"chunk size line over {MAX_CHUNK_LINE} bytes")
                break  # the line is not complete yet
            line = buf[pos:eol]
            if line.lstrip(_HEX_DIGITS) or not 0 < len(line) <= 16:  # not only hex digits: int() takes -6
                line = _chunk_size_token(line)
            size = int(line, 16)
            if size > cap:
                raise ValueError(f"chunk size {size} over the {cap} byte cap")
            start = eol + 2
            if size == 0:
                # last chunk; trailers (rare) end with an empty line
                rest = eol if buf.startswith(b"\r\n", start) else buf.find(b"\r\n\r\n", eol)
                if rest < 0:
                    if n - start > MAX_HEADER_BYTES:
                        raise ValueError("trailers exceed 64 KiB")
                    break
                pos, last = rest + 4, True
                break
            stop = start + size
            if stop + 2 > n:
                break
            if buf[stop] != 13 or buf[stop + 1] != 10:
                raise ValueError("chunk data not followed by CRLF")
            pieces.append(buf[start:stop])
            pos = stop + 2
        if pos:
            del buf[:pos]
        if pieces:  # one call per read, whatever the number of chunks in it
            self._body(bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces), now)
        if last and self.sink is not None:
            self._finish(now)

    def _body(self, data: bytes, now: float) -> None:
        sink = self.sink
        if sink is None:
            return
        if not self._sse:
            sink.on_body(data)
            return
        if self._cr or 13 in data:  # CR and CRLF end lines too (a CRLF may straddle two chunks); 13: CR
            if self._cr and data[:1] == b"\n":
                data = data[1:]
            self._cr = data[-1:] == b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        ev = self._events
        if not ev and data.startswith(b"data: ") and data.find(b"\n") == len(data) - 2 and data.endswith(b"\n\n"):
            sink.on_event(now, data[6:-2])  # the usual case: one whole event in one chunk
            return
        scan = max(0, len(ev) - 1)  # the bytes before were searched already: only the new ones are
        ev += data
        start = 0
        clock, deadline = time.perf_counter, self._deadline
        while True:
            end = ev.find(b"\n\n", scan)
            if end < 0:
                break
            if end - start > MAX_EVENT_BYTES:
                raise _Abort("too_large", f"one SSE event exceeds the {MAX_EVENT_BYTES} byte cap")
            block = bytes(ev[start:end])
            start = scan = end + 2
            if block.startswith(b"data: ") and b"\n" not in block:
                sink.on_event(now, block[6:])
            else:
                payload = _event_data(block)
                if payload is not None:
                    sink.on_event(now, payload)
            if self.sink is None:
                return
            if clock() > deadline:
                raise _Abort(*self._late)
        if start:
            del ev[:start]
        if len(ev) > MAX_EVENT_BYTES:
            raise _Abort("too_large", f"one SSE event exceeds the {MAX_EVENT_BYTES} byte cap")

    def _finish(self, now: float) -> None:
        sink, self.sink = self.sink, None
        self._state = _IDLE
        if sink is None:
            return
        if self._sse and self._events.strip():  # a last event without its blank line
            payload = _event_data(bytes(self._events))
            self._events.clear()
            if payload is not None:
                sink.on_event(now, payload)
        if not self._keep_alive:
            self._close()
        sink.on_done(now)

    def _fail(self, now: float, kind: str, message: str) -> None:
        sink, self.sink = self.sink, None
        self._close()
        if sink is not None:
            sink.on_fail(now, kind, message)

    def _close(self) -> None:
        self.closed = True
        self._state = _IDLE
        if self.transport is not None:
            self.transport.close()


def _chunk_size_token(line: bytearray) -> bytearray:
    """The size of a chunk-size line with extensions or blanks (``1a ; name=value``), checked."""
    token = line.split(b";", 1)[0].strip(b" \t")
    if not 0 < len(token) <= 16 or token.lstrip(_HEX_DIGITS):
        raise ValueError(f"malformed chunk size {bytes(line[:40])!r}")
    return token


def _event_data(block: bytes) -> bytes | None:
    """The joined ``data`` lines of one SSE event (comments and other fields skipped)."""
    data = []
    for line in block.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line and not line.startswith(b":") and line.split(b":", 1)[0] not in (b"event", b"id", b"retry"):
            data.append(b"\x00" + line)  # not SSE: the sink's JSON decode reports it as malformed
    return b"\n".join(data) if data else None


class Pool:
    """Idle keep-alive connections to one endpoint; at most ``limit`` open at once."""

    def __init__(
        self, endpoint: Endpoint, *, limit: int, connect_timeout_s: float = 5.0, max_bytes: int = 16 * 2**20
    ) -> None:
        self.endpoint = endpoint
        self.limit = max(1, limit)
        self.connect_timeout_s = connect_timeout_s
        self.max_bytes = max_bytes
        self._idle: list[Connection] = []
        self._open = 0
        self.connects = 0
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if endpoint.scheme == "https" else None

    async def acquire(self) -> Connection:
        """An idle connection, else a new one (raises OSError / TimeoutError on connect failure)."""
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable:
                return conn
            self._open -= 1
        loop = asyncio.get_running_loop()
        factory: Callable[[], Connection] = lambda: Connection(self.max_bytes)  # noqa: E731
        self._open += 1
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(factory, self.endpoint.host, self.endpoint.port, ssl=self._ssl),
                self.connect_timeout_s,
            )
        except BaseException:
            self._open -= 1
            raise
        self.connects += 1
        return conn

    def release(self, conn: Connection) -> None:
        """Give a connection back; a closed or half-used one is dropped."""
        if conn.reusable and len(self._idle) < self.limit:
            self._idle.append(conn)
        else:
            self._open -= 1
            if not conn.closed:
                conn._close()

    def close(self) -> None:
        """Close the idle connections (requests in flight end with their own deadline)."""
        for conn in self._idle:
            conn._close()
        self._idle.clear()
        self._open = 0


__all__ = ["Connection", "Endpoint", "Pool", "Sink", "request_bytes"]
