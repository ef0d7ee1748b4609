"""``/metrics`` sampled during a load stage, and the server-side signals that stop one.

Why sample during the stage and not only before/after: a waiting queue that grows for ten seconds
and a KV cache that touches 98 % are visible only while the load runs, and they say "stop adding
concurrency" before latency or errors do. Each scrape is cut down to the few families the load
check reads before parsing, so sampling costs the event loop next to nothing; the full scrape for
per-stage counter deltas is taken at the stage boundaries, outside the load.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..metrics import parse_metrics, spellings
from ..records import Record
from .transport import Connection, Pool, Sink

#: canonical family → the field of a sample.
SAMPLED = {
    "vllm:num_requests_waiting": "waiting",
    "vllm:num_requests_running": "running",
    "vllm:kv_cache_usage_perc": "kv_usage",
    "vllm:num_preemptions": "preemptions",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
}
_PREFIXES = tuple(sorted({s for name in SAMPLED for s in spellings(name) if s.startswith("vllm:")}, key=len))


@dataclass
class MetricsSample(Record):
    """One scrape during a stage; ``t_s`` on the load run's clock. None = not exposed."""

    SCHEMA = "load_metrics_sample"
    t_s: float
    stage: str = ""
    waiting: float | None = None
    running: float | None = None
    kv_usage: float | None = None  # 0..1
    preemptions: float | None = None  # counter since server start
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    gpu_mem_used_mib: float | None = None  # NVML on this machine, when the endpoint is local


def sample_from_text(text: str, t_s: float, stage: str = "") -> MetricsSample:
    """The sampled families from a ``/metrics`` body (other lines are dropped before parsing)."""
    keep = [ln for ln in text.splitlines() if ln.startswith(_PREFIXES) or (ln.startswith("#") and "vllm:" in ln)]
    snap = parse_metrics("\n".join(keep))
    out = MetricsSample(t_s=round(t_s, 4), stage=stage)
    for name, attr in SAMPLED.items():
        setattr(out, attr, snap.value(name))
    return out


@dataclass
class Signals(Record):
    """What the samples of one stage say about the server, and whether that should stop it."""

    SCHEMA = "load_server_signals"
    samples: int = 0
    kv_usage_max: float | None = None
    waiting_max: float | None = None
    waiting_growing: bool = False
    preemptions_delta: float | None = None
    stop_reasons: list[str] = field(default_factory=list)


def server_signals(
    samples: list[MetricsSample], *, kv_stop: float = 0.98, waiting_growth_samples: int = 4, waiting_min: float = 4
) -> Signals:
    """Stop reasons from a stage's samples: KV usage ≥ ``kv_stop``; preemptions rising; the waiting
    queue growing over the last ``waiting_growth_samples`` scrapes to at least ``waiting_min``."""
    out = Signals(samples=len(samples))
    kv = [s.kv_usage for s in samples if s.kv_usage is not None]
    waiting = [s.waiting for s in samples if s.waiting is not None]
    pre = [s.preemptions for s in samples if s.preemptions is not None]
    if kv:
        out.kv_usage_max = max(kv)
        if out.kv_usage_max >= kv_stop:
            out.stop_reasons.append(f"KV cache usage {out.kv_usage_max:.1%} ≥ {kv_stop:.0%}")
    if waiting:
        out.waiting_max = max(waiting)
        tail = waiting[-waiting_growth_samples:]
        if (
            len(tail) == waiting_growth_samples
            and all(b > a for a, b in zip(tail, tail[1:], strict=False))
            and tail[-1] >= waiting_min
        ):
            out.waiting_growing = True
            out.stop_reasons.append(f"waiting queue growing ({' → '.join(f'{w:g}' for w in tail)})")
    if len(pre) >= 2:
        out.preemptions_delta = pre[-1] - pre[0]
        if out.preemptions_delta > 0 and pre[-1] > pre[-2]:
            out.stop_reasons.append(f"preemptions rising (+{out.preemptions_delta:g} in the stage)")
    return out


class _Body(Sink):
    def __init__(self, fut: asyncio.Future) -> None:
        self.fut = fut
        self.buf = bytearray()
        self.status = 0

    def on_headers(self, now: float, status: int, headers: dict[str, str]) -> None:
        self.status = status

    def on_event(self, now: float, payload: bytes) -> None:
        pass

    def on_body(self, data: bytes) -> None:
        self.buf += data

    def on_done(self, now: float) -> None:
        if not self.fut.done():
            self.fut.set_result(self.buf.decode("utf-8", "replace") if self.status == 200 else None)

    def on_fail(self, now: float, kind: str, message: str) -> None:
        if not self.fut.done():
            self.fut.set_result(None)


def sampler_task(
    pool_factory: Callable[[], Pool],
    request: bytes,
    interval_s: float,
    t0: float,
    stage: str,
    out: list[MetricsSample],
    *,
    timeout_s: float = 5.0,
    max_samples: int = 10_000,
    gpu_memory: Callable[[], float | None] | None = None,
) -> Callable[[asyncio.Event], Any]:
    """A side task for ``engine.run_async``: scrape every ``interval_s`` until the stage ends.

    ``gpu_memory`` (NVML, blocking) is called in a worker thread so the load's timing is untouched."""

    async def run(stop: asyncio.Event) -> None:
        pool = pool_factory()
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set() and len(out) < max_samples:
                started = time.perf_counter()
                text = await _scrape(pool, request, loop, timeout_s)
                if text is not None:
                    sample = sample_from_text(text, started - t0, stage)
                    if gpu_memory is not None:
                        sample.gpu_mem_used_mib = await asyncio.to_thread(gpu_memory)
                    out.append(sample)
                try:
                    await asyncio.wait_for(stop.wait(), max(0.05, interval_s - (time.perf_counter() - started)))
                except TimeoutError:
                    pass
        finally:
            pool.close()

    return run


async def _scrape(pool: Pool, request: bytes, loop: asyncio.AbstractEventLoop, timeout_s: float) -> str | None:
    try:
        conn: Connection = await pool.acquire()
    except (OSError, TimeoutError):
        return None
    fut = loop.create_future()
    handle = loop.call_later(timeout_s, conn.abort, "timeout", "metrics scrape timed out")
    try:
        conn.send(request, _Body(fut), body_cap=32 * 2**20, deadline=time.perf_counter() + timeout_s)
        return await fut
    finally:
        handle.cancel()
        pool.release(conn)


__all__ = ["MetricsSample", "Signals", "sample_from_text", "sampler_task", "server_signals"]
