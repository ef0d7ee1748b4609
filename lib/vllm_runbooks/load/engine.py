"""The load engine: bounded streaming requests at a fixed concurrency or on a seeded arrival schedule.

Why its own engine: a load check must measure the server, not the client. Every request is a
``RequestRecord`` with the time of each streamed chunk taken where the bytes arrive
(``transport``), connections are kept alive and reused, and the engine never runs unbounded:
a request count, a wall-clock limit, a per-request deadline and a stop condition evaluated after
every completed request all end it, and requests in flight at that moment are cut (recorded,
not counted as errors).

Sync entry point ``run_load`` runs the event loop in a worker thread (uvloop when installed), so it
works the same from a script, the CLI and a Jupyter kernel whose own loop is already running.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..records import Record, utc_now
from ..redact import mask_secret

try:  # every streamed chunk is parsed: msgspec's decoder is ~4x json.loads (see the benchmark)
    from msgspec.json import Decoder as _Decoder

    _loads = _Decoder().decode
except ImportError:  # pragma: no cover - msgspec is a declared dependency
    _loads = json.loads
from .errors import ErrorClass, classify
from .limits import ENGINE_LIMITS, problems, require
from .records import RequestRecord
from .transport import ERROR_BODY_BYTES, Connection, Endpoint, Pool, Sink, request_bytes

EXCERPT_CHARS = 600
ARRIVALS = ("poisson", "gamma", "constant")
CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


class Payload:
    """One request body to send (``stream`` bodies are read as SSE); its bytes are rendered once."""

    __slots__ = ("path", "body", "api", "stream", "_raw")

    def __init__(self, body: dict[str, Any], api: str = "chat", path: str | None = None) -> None:
        self.api = api
        self.path = path or (CHAT_PATH if api == "chat" else COMPLETIONS_PATH)
        self.body = body
        self.stream = bool(body.get("stream"))
        self._raw: tuple[Target, bytes] | None = None


class Target:
    """The one endpoint a load run may send to. The API key is read from the environment variable
    *named* ``api_key_env`` once, held only in the rendered request bytes, and masked in excerpts."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = "VLLM_API_KEY",
        connect_timeout_s: float = 5.0,
        max_bytes: int = 16 * 2**20,
    ) -> None:
        self.endpoint = Endpoint.parse(base_url)
        self.connect_timeout_s = connect_timeout_s
        self.max_bytes = max_bytes
        key = os.environ.get(api_key_env) if api_key_env else None
        self._headers = {"Accept": "text/event-stream, application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._mask_key = key if key and len(key) >= 4 else None

    def __repr__(self) -> str:
        return f"Target({self.endpoint.base_url!r})"

    @property
    def base_url(self) -> str:
        """The endpoint as a URL (credentials never appear: they are refused)."""
        return self.endpoint.base_url

    def raw(self, payload: Payload) -> bytes:
        """The request's bytes for this target, rendered once per payload (sending is then one write)."""
        cached = payload._raw
        if cached is None or cached[0] is not self:  # rendered for this target only
            body = json.dumps(payload.body, separators=(",", ":")).encode()
            cached = payload._raw = (self, request_bytes(self.endpoint, "POST", payload.path, body, self._headers))
        return cached[1]

    def get_bytes(self, path: str) -> bytes:
        """A GET request for this target (``/metrics`` sampling)."""
        return request_bytes(self.endpoint, "GET", path, b"", self._headers)

    def mask(self, text: str) -> str:
        """``text`` with this target's API key replaced by ``***`` (error bodies may echo it)."""
        return mask_secret(text, self._mask_key) if self._mask_key else text


@dataclass
class LoadSpec(Record):
    """How much load, how it arrives, and its bounds."""

    SCHEMA = "load_spec"
    requests: int = 100
    concurrency: int = 8  # most requests in flight at once
    rate: float | None = None  # requests/s on a schedule; None = closed loop at ``concurrency``
    arrival: str = "poisson"  # poisson | gamma | constant (only with ``rate``)
    gamma_shape: float = 1.0  # < 1 burstier than Poisson, > 1 smoother
    seed: int = 0
    warmup: int = 0  # first requests sent but excluded from statistics
    max_seconds: float = 60.0
    request_timeout_s: float = 60.0

    def problems(self) -> list[str]:
        """Values outside ``limits.ENGINE_LIMITS`` (``nan``, ``inf``, absurd sizes), as sentences."""
        out = problems({k: getattr(self, k) for k in ENGINE_LIMITS}, table="ENGINE_LIMITS")
        if self.arrival not in ARRIVALS:
            out.append(f"arrival must be one of {', '.join(ARRIVALS)}, not {self.arrival!r}")
        return out


@dataclass
class Live:
    """Running counts a stop condition reads after every completed request (cheap, no rescans)."""

    done: int = 0
    ok: int = 0
    failed: int = 0
    by_class: Counter = field(default_factory=Counter)
    ttfts: list[float] = field(default_factory=list)
    started: float = 0.0

    @property
    def error_rate(self) -> float:
        """Failed / done so far (0 before the first request ends)."""
        return self.failed / self.done if self.done else 0.0


StopFn = Callable[[Live], str | None]


@dataclass
class LoadRun(Record):
    """What one bounded load produced: the records, and why it ended."""

    SCHEMA = "load_run"
    spec: LoadSpec
    records: list[RequestRecord] = field(default_factory=list)
    started_at: str = ""
    duration_s: float = 0.0
    client_cpu_s: float = 0.0
    ended_by: str = "completed"  # completed | max_seconds | stop: <reason>
    cut: int = 0
    connects: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["records"] = [r.to_dict() for r in self.records]
        return data


class _Req(Sink):
    """Turns one reply into a RequestRecord as its bytes arrive."""

    __slots__ = ("rec", "fut", "sent", "last", "chat", "stream", "body", "done_seen", "err", "target", "content")

    def __init__(self, rec: RequestRecord, fut: asyncio.Future, sent: float, payload: Payload, target: Target) -> None:
        self.rec = rec
        self.fut = fut
        self.sent = sent
        self.last = sent
        self.chat = payload.api == "chat"
        self.stream = payload.stream
        self.body = bytearray()
        self.done_seen = False
        self.err: tuple[str, str, str] | None = None  # kind, message, excerpt
        self.target = target
        self.content = 0

    def on_headers(self, now: float, status: int, headers: dict[str, str]) -> None:
        self.rec.status = status

    def on_event(self, now: float, payload: bytes) -> None:
        if payload == b"[DONE]":
            self.done_seen = True
            return
        rec = self.rec
        rec.chunks += 1
        try:
            obj = _loads(payload)
        except ValueError:
            if self.err is None:
                self.err = ("malformed", "stream event is not JSON", payload[:EXCERPT_CHARS].decode("utf-8", "replace"))
            return
        if type(obj) is not dict:
            if self.err is None:
                self.err = ("malformed", "stream event is not a JSON object", payload[:EXCERPT_CHARS].decode())
            return
        choices = obj.get("choices")
        if choices:
            c0 = choices[0]
            if self.chat:
                d = c0.get("delta")
                produced = d and (
                    d.get("content") or d.get("reasoning_content") or d.get("reasoning") or d.get("tool_calls")
                )
            else:
                produced = c0.get("text")
            if produced:
                self.content += 1
                if rec.ttft_s is None:
                    rec.ttft_s = now - self.sent
                else:
                    rec.itl_s.append(now - self.last)
                self.last = now
        elif ("error" in obj or obj.get("object") == "error") and self.err is None:
            self.err = ("stream_error", "server reported an error mid-stream", payload[:EXCERPT_CHARS].decode())
        usage = obj.get("usage")
        if usage:
            self._usage(usage)

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        rec = self.rec
        rec.prompt_tokens = usage.get("prompt_tokens", rec.prompt_tokens)
        rec.output_tokens = usage.get("completion_tokens", rec.output_tokens)
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            rec.cached_tokens = details["cached_tokens"]

    def on_body(self, data: bytes) -> None:
        if len(self.body) < ERROR_BODY_BYTES:
            self.body += data[: ERROR_BODY_BYTES - len(self.body)]

    def on_done(self, now: float) -> None:
        rec = self.rec
        rec.e2e_s = now - self.sent
        status = rec.status or 0
        if not 200 <= status < 300:
            text = self.target.mask(self.body.decode("utf-8", "replace"))
            self._failed(classify(status, text), f"http_{status}", text)
        elif self.err is not None:
            kind, message, excerpt = self.err
            excerpt = self.target.mask(excerpt)
            self._failed(classify(status, excerpt, kind), kind, f"{message}: {excerpt}")
        elif self.stream and not self.done_seen:
            if self.body:  # a JSON reply where a stream was asked for
                self._plain(now)
            else:
                self._failed(
                    ErrorClass.SERVER_ERROR, "incomplete", f"stream ended after {rec.chunks} events without [DONE]"
                )
        elif not self.stream:
            self._plain(now)
        else:
            self._succeeded()
        self._resolve()

    def _plain(self, now: float) -> None:
        text = self.body.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except ValueError:
            self._failed(ErrorClass.SERVER_ERROR, "malformed", f"reply is not JSON: {self.target.mask(text)}")
            return
        if not isinstance(data, dict) or "error" in data:
            text = self.target.mask(text)
            self._failed(classify(self.rec.status, text, "stream_error"), "stream_error", text)
            return
        self.rec.ttft_s = self.rec.e2e_s
        self._usage(data.get("usage"))
        self._succeeded()

    def _succeeded(self) -> None:
        rec = self.rec
        rec.ok = True
        if rec.output_tokens is None:
            rec.output_tokens = self.content
        if rec.ttft_s is not None and rec.e2e_s is not None and (rec.output_tokens or 0) > 1:
            rec.tpot_s = (rec.e2e_s - rec.ttft_s) / (rec.output_tokens - 1)

    def _failed(self, cls: ErrorClass, kind: str, excerpt: str) -> None:
        rec = self.rec
        rec.ok = False
        rec.error_class = cls.value
        rec.error_kind = kind
        rec.error_excerpt = excerpt[:EXCERPT_CHARS]

    def on_fail(self, now: float, kind: str, message: str) -> None:
        rec = self.rec
        rec.e2e_s = now - self.sent
        if kind == "cancelled":
            rec.cut = True
            rec.error_kind = "cut"
            rec.error_excerpt = message[:EXCERPT_CHARS]
        else:
            body = self.target.mask(self.body.decode("utf-8", "replace"))
            self._failed(
                classify(rec.status, body, kind), kind, self.target.mask(message) + (f": {body}" if body else "")
            )
        self._resolve()

    def _resolve(self) -> None:
        if not self.fut.done():
            self.fut.set_result(None)


def arrival_offsets(
    n: int, rate: float, arrival: str = "poisson", gamma_shape: float = 1.0, seed: int = 0
) -> list[float]:
    """Seconds from the start at which each of ``n`` requests arrives (seeded, reproducible).

    Every argument is checked first: ``random.gammavariate`` never returns for a ``nan`` shape."""
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be a positive number of requests/s, not {rate}")
    if arrival not in ARRIVALS:
        raise ValueError(f"arrival must be poisson, gamma or constant, not {arrival!r}")
    require("requests", n, table="ENGINE_LIMITS")
    if arrival == "gamma":
        require("gamma_shape", gamma_shape, table="ENGINE_LIMITS")
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        out.append(t)
        if arrival == "constant":
            t += 1.0 / rate
        elif arrival == "gamma":
            t += rng.gammavariate(gamma_shape, 1.0 / (rate * gamma_shape))
        else:
            t += rng.expovariate(rate)
    return out


async def run_async(
    target: Target,
    payloads: Callable[[int], Payload] | Sequence[Payload],
    spec: LoadSpec,
    *,
    stage: str = "",
    level: int | None = None,
    stop: StopFn | None = None,
    side_tasks: Sequence[Callable[[asyncio.Event], Awaitable[Any]]] = (),
) -> LoadRun:
    """Send ``spec.requests`` requests; returns when all ended, the time is up, or ``stop`` says so.

    ``side_tasks`` (e.g. a /metrics sampler) run alongside and are given an event set at the end.
    A spec outside ``limits.ENGINE_LIMITS`` raises ValueError before anything is sent.
    """
    bad = spec.problems()
    if bad:
        raise ValueError("; ".join(bad))
    get = payloads if callable(payloads) else (lambda i: payloads[i % len(payloads)])  # type: ignore[index]
    loop = asyncio.get_running_loop()
    pool = Pool(
        target.endpoint, limit=spec.concurrency, connect_timeout_s=target.connect_timeout_s, max_bytes=target.max_bytes
    )
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    run = LoadRun(spec=spec, started_at=utc_now())
    records = run.records
    live = Live(started=t0)
    inflight: set[Connection] = set()
    stopping = asyncio.Event()
    reason: list[str] = []
    lvl = spec.concurrency if level is None else level
    total = max(0, int(spec.requests))
    run_end = t0 + spec.max_seconds  # also checked where a callback could not run (see transport)
    cut_message = "cut: the stage ended (max_seconds) while this request was in flight"

    def end(why: str) -> None:
        if not stopping.is_set():
            reason.append(why)
            stopping.set()
            for conn in list(inflight):
                conn.abort("cancelled", f"cut: the stage ended ({why}) while this request was in flight")

    async def one(i: int) -> None:
        p = get(i)
        rec = RequestRecord(i, stage, lvl, i < spec.warmup, p.api)
        records.append(rec)
        rec.sent_s = time.perf_counter() - t0
        try:
            conn = await pool.acquire()
        except (OSError, TimeoutError) as exc:
            rec.e2e_s = time.perf_counter() - t0 - rec.sent_s
            kind = "timeout" if isinstance(exc, TimeoutError) else "connection"
            rec.error_class = (ErrorClass.TIMEOUT if kind == "timeout" else ErrorClass.CONNECTION).value
            rec.error_kind = "connect_timeout" if kind == "timeout" else "connect"
            rec.error_excerpt = f"{type(exc).__name__}: {exc}"[:EXCERPT_CHARS]
            _count(live, rec)
            return
        fut = loop.create_future()
        sent = time.perf_counter()
        rec.sent_s = sent - t0
        sink = _Req(rec, fut, sent, p, target)
        inflight.add(conn)
        late = f"no complete reply within {spec.request_timeout_s:g} s"
        handle = loop.call_later(spec.request_timeout_s, conn.abort, "timeout", late)
        # the same deadlines again, for the connection's read loops to check themselves: a reply
        # that keeps one data_received call busy would hold the event loop past any timer
        if sent + spec.request_timeout_s <= run_end:
            deadline = (sent + spec.request_timeout_s, "timeout", late)
        else:
            deadline = (run_end, "cancelled", cut_message)
        try:
            conn.send(target.raw(p), sink, deadline=deadline)
            await fut
        finally:
            handle.cancel()
            inflight.discard(conn)
            pool.release(conn)
        _count(live, rec)
        if stop is not None and not rec.cut:
            why = stop(live)
            if why:
                end(f"stop: {why}")

    async def closed_loop() -> None:
        nxt = 0

        async def worker() -> None:
            nonlocal nxt
            while not stopping.is_set() and nxt < total:
                if time.perf_counter() >= run_end:
                    end("max_seconds")
                    break
                i = nxt
                nxt += 1
                await one(i)

        await asyncio.gather(*(worker() for _ in range(max(1, min(spec.concurrency, total or 1)))))

    async def scheduled() -> None:
        offsets = arrival_offsets(total, spec.rate or 1.0, spec.arrival, spec.gamma_shape, spec.seed)
        slots = asyncio.Semaphore(max(1, spec.concurrency))
        tasks: list[asyncio.Task] = []
        start = loop.time()

        async def held(i: int, at: float) -> None:
            try:
                await one(i)
            finally:
                slots.release()

        for i, off in enumerate(offsets):
            if stopping.is_set():
                break
            delay = start + off - loop.time()
            if delay > 0:
                try:
                    await asyncio.wait_for(stopping.wait(), delay)
                    break
                except TimeoutError:
                    pass
            await slots.acquire()
            if stopping.is_set() or time.perf_counter() >= run_end:
                slots.release()
                end("max_seconds")
                break
            task = asyncio.ensure_future(held(i, off))
            tasks.append(task)
        if tasks:
            await asyncio.gather(*tasks)

    side = [asyncio.ensure_future(fn(stopping)) for fn in side_tasks]
    main = asyncio.ensure_future(scheduled() if spec.rate else closed_loop())
    try:
        await asyncio.wait_for(asyncio.shield(main), spec.max_seconds)
    except TimeoutError:
        end("max_seconds")
        try:
            await asyncio.wait_for(main, 5.0)
        except TimeoutError:  # pragma: no cover - aborting in-flight connections ends them at once
            main.cancel()
    finally:
        stopping.set()
        for task in side:
            try:
                await asyncio.wait_for(task, 10.0)
            except (TimeoutError, Exception):  # a sampler's failure never fails the load run
                task.cancel()
        pool.close()
    if spec.rate:
        offsets = arrival_offsets(len(records), spec.rate, spec.arrival, spec.gamma_shape, spec.seed)
        for r in records:
            if r.id < len(offsets):
                r.scheduled_s = round(offsets[r.id], 6)
    records.sort(key=lambda r: r.id)
    run.duration_s = round(time.perf_counter() - t0, 4)
    run.client_cpu_s = round(time.process_time() - cpu0, 4)
    run.ended_by = reason[0] if reason else "completed"
    run.cut = sum(1 for r in records if r.cut)
    run.connects = pool.connects
    return run


def _count(live: Live, rec: RequestRecord) -> None:
    if rec.cut or rec.warmup:
        return
    live.done += 1
    if rec.ok:
        live.ok += 1
        if rec.ttft_s is not None:
            live.ttfts.append(rec.ttft_s)
    else:
        live.failed += 1
        live.by_class[rec.error_class or "unclassified"] += 1


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed (the faster one, see the benchmark), else asyncio's."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a declared dependency on Linux
        return asyncio.new_event_loop()


def run_coroutine(factory: Callable[[], Awaitable[Any]], *, use_uvloop: bool = True) -> Any:
    """Run a coroutine on a fresh loop in a worker thread and return its value (or raise its error).

    A thread, so that a Jupyter kernel's running loop is never touched or blocked by ours.
    """
    box: dict[str, Any] = {}

    def work() -> None:
        loop = new_loop() if use_uvloop else asyncio.new_event_loop()
        try:
            box["value"] = loop.run_until_complete(factory())
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            loop.close()

    thread = threading.Thread(target=work, name="vllm-runbooks-load", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def run_load(
    target: Target | str,
    payloads: Callable[[int], Payload] | Sequence[Payload],
    spec: LoadSpec,
    **kwargs: Any,
) -> LoadRun:
    """Synchronous ``run_async`` (see there); ``target`` may be a base URL."""
    tgt = Target(target) if isinstance(target, str) else target
    return run_coroutine(lambda: run_async(tgt, payloads, spec, **kwargs))


__all__ = [
    "Live",
    "LoadRun",
    "LoadSpec",
    "Payload",
    "Target",
    "arrival_offsets",
    "run_async",
    "run_coroutine",
    "run_load",
]
