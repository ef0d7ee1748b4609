"""The load check's stages, in the procedure's order, as a registry (like the canary's steps).

A stage is a function ``fn(ctx) -> StageOutcome`` registered with ``@register(name, title, order)``.
It sends load only through ``ctx.load`` — which holds the global caps (requests and seconds for the
whole run), the stage's own caps, the stop conditions (error rate, p95 TTFT over the SLO, server
signals from ``/metrics``) and the per-request records — so no stage can exceed the plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client import EndpointClient
from ..records import utc_now
from ..registry import Registry
from .engine import Live, LoadRun, LoadSpec, Payload, Target, run_async, run_coroutine
from .records import RequestRecord, Summary, percentile, summarise
from .result import LevelResult, StageOutcome, StageStatus
from .sampler import MetricsSample, Signals, sampler_task, server_signals
from .saturation import knee, over_saturation
from .transport import Pool


@dataclass
class Budget:
    """The global caps: requests and seconds left for the whole run, whatever a stage asks."""

    max_requests: int
    max_seconds: float
    used: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def requests_left(self) -> int:
        """Requests the run may still send."""
        return max(0, self.max_requests - self.used)

    @property
    def seconds_left(self) -> float:
        """Seconds the run may still use."""
        return max(0.0, self.max_seconds - (time.monotonic() - self.started))

    def grant(self, requests: int, seconds: float) -> tuple[int, float, str | None]:
        """What a stage may use: (requests, seconds, a note when the global cap cut the request)."""
        n, s = min(requests, self.requests_left), min(seconds, self.seconds_left)
        notes = []
        if n < requests:
            notes.append(f"{requests} requests asked, {n} left under max_requests={self.max_requests}")
        if s < seconds:
            notes.append(f"{seconds:g} s asked, {s:.1f} s left under max_seconds={self.max_seconds:g}")
        return n, s, "; ".join(notes) or None


class StageContext:
    """What a stage may use: the config, the one target, a plain client, the budget, shared facts."""

    def __init__(self, config: Any, target: Target, client: EndpointClient, budget: Budget, t0: float) -> None:
        self.config = config
        self.target = target
        self.client = client
        self.budget = budget
        self.t0 = t0  # perf_counter at the run's start: every time in records and samples is on it
        self.model: str | None = config.model
        self.max_model_len: int | None = None
        self.records: list[RequestRecord] = []
        self.samples: list[MetricsSample] = []
        self.shared: dict[str, Any] = {}
        self.stage = ""
        self.nvml_note = ""
        self._nvml_ok: bool | None = None

    def gpu_memory_fn(self) -> Callable[[], float | None] | None:
        """NVML used memory (MiB, all GPUs) when this machine serves the endpoint and has NVML."""
        if not getattr(self.config, "nvml", True):
            self.nvml_note = "NVML sampling off (nvml=False)"
            return None
        from ..prefix_cache.gpu import gpu_memory

        endpoint = self.target.base_url
        if self._nvml_ok is None:
            probe = gpu_memory(endpoint)
            self._nvml_ok = probe.available
            self.nvml_note = "NVML sampled during every stage" if probe.available else probe.reason
        return (lambda: gpu_memory(endpoint).used_mib) if self._nvml_ok else None

    # -- load -----------------------------------------------------------------------------------
    def stop_rules(self, concurrency: int, *, slo: bool = True) -> Callable[[Live], str | None]:
        """Error rate over ``max_error_rate``; p95 TTFT over the SLO (checked every 8 requests once
        ``min_requests_for_stop`` are in); a server signal from the latest samples."""
        cfg = self.config
        min_n = max(4, cfg.min_requests_for_stop)
        slo_s = cfg.slo_ttft_ms / 1000.0
        samples = self.samples
        first_sample = len(samples)

        def stop(live: Live) -> str | None:
            if live.done >= min_n and live.error_rate > cfg.max_error_rate:
                classes = ", ".join(f"{k}: {v}" for k, v in live.by_class.most_common(3))
                return f"error rate {live.error_rate:.0%} > {cfg.max_error_rate:.0%} ({classes})"
            if slo and live.done >= min_n and live.done % 8 == 0 and live.ttfts:
                # the same percentile as the level's figures (records.percentile), so a level is
                # not stopped in flight on a p95 its own table then shows under the SLO
                p95 = percentile(live.ttfts, 95) or 0.0
                if p95 > slo_s:
                    return f"p95 TTFT {p95 * 1000:.0f} ms over the SLO of {cfg.slo_ttft_ms:g} ms"
            if len(samples) > first_sample:
                sig = server_signals(samples[first_sample:], kv_stop=cfg.kv_stop_fraction)
                if sig.stop_reasons:
                    return "server: " + "; ".join(sig.stop_reasons)
            return None

        return stop

    def load(
        self,
        payloads: Sequence[Payload] | Callable[[int], Payload],
        requests: int,
        concurrency: int,
        seconds: float,
        *,
        level: int | None = None,
        slo_stop: bool = True,
        warmup: int = 0,
    ) -> tuple[LoadRun | None, Summary, Signals, str | None]:
        """Run bounded load for the current stage; returns (run, summary, signals, cap note)."""
        cfg = self.config
        n, secs, capped = self.budget.grant(requests, seconds)
        if n <= 0 or secs <= 0.5:
            return None, Summary(), Signals(), capped or "global cap reached"
        spec = LoadSpec(
            requests=n,
            concurrency=max(1, min(concurrency, n)),
            seed=cfg.seed,
            warmup=warmup,
            max_seconds=secs,
            request_timeout_s=min(cfg.request_timeout_s, secs),
        )
        stage_samples: list[MetricsSample] = []
        side = []
        t_start = time.perf_counter()
        if cfg.metrics_interval_s and cfg.metrics_interval_s > 0:
            target = self.target
            side.append(
                sampler_task(
                    lambda: Pool(target.endpoint, limit=1, connect_timeout_s=target.connect_timeout_s),
                    target.get_bytes("/metrics"),
                    cfg.metrics_interval_s,
                    self.t0,
                    self.stage,
                    stage_samples,
                    gpu_memory=self.gpu_memory_fn(),
                )
            )
        stop = self.stop_rules(concurrency, slo=slo_stop)
        base = len(self.samples)

        def rules(live: Live) -> str | None:
            self.samples[base:] = stage_samples  # the stop rules read the samples as they come
            return stop(live)

        run = run_coroutine(
            lambda: run_async(
                self.target, payloads, spec, stage=self.stage, level=level or concurrency, stop=rules, side_tasks=side
            )
        )
        self.samples[base:] = stage_samples
        offset = t_start - self.t0
        for r in run.records:
            r.sent_s += offset
            if r.scheduled_s is not None:
                r.scheduled_s += offset
        self.records.extend(run.records)
        self.budget.used += len(run.records)
        summary = summarise(
            run.records,
            slo_ttft_s=cfg.slo_ttft_ms / 1000.0,
            slo_tpot_s=cfg.slo_tpot_ms / 1000.0 if cfg.slo_tpot_ms else None,
            client_cpu_s=run.client_cpu_s,
        )
        signals = server_signals(stage_samples, kv_stop=cfg.kv_stop_fraction)
        if capped is None and run.ended_by == "max_seconds" and secs < seconds:
            capped = f"cut at the global max_seconds={cfg.max_seconds:g}"
        return run, summary, signals, capped

    def outcome(self, status: StageStatus, reason: str, **kw: Any) -> StageOutcome:
        """A StageOutcome for the current stage."""
        spec = STAGES[self.stage]
        return StageOutcome(stage=spec.name, title=spec.title, order=spec.order, status=status, reason=reason, **kw)


StageFn = Callable[[StageContext], StageOutcome]


@dataclass
class Stage:
    """A registered stage: name, title, order and its function."""

    name: str
    title: str
    order: float
    fn: StageFn
    needs_endpoint: bool = True


#: Every load stage (the built-in ones in ``load/builtin_stages.py``, and users' own); a name is
#: taken once (``registry.DuplicateName``).
STAGES: Registry[Stage] = Registry("load stage")


def register(name: str, title: str, order: float, *, needs_endpoint: bool = True) -> Callable[[StageFn], StageFn]:
    """Add a stage (a name already taken by another stage is refused: ``DuplicateName``)."""

    def deco(fn: StageFn) -> StageFn:
        STAGES.add(Stage(name, title, order, fn, needs_endpoint))
        return fn

    return deco


def registered_stages() -> list[Stage]:
    """The built-in and user stages, in order."""
    from . import builtin_stages  # noqa: F401 - registers the built-in stages

    return STAGES.ordered()


def describe_errors(summary: Summary, records: Sequence[RequestRecord]) -> str:
    """ "3 failed (queue_full: 2, oom: 1): <first server message>" for a stage's reason."""
    if not summary.failed:
        return ""
    classes = ", ".join(f"{k}: {v}" for k, v in sorted(summary.errors_by_class.items()))
    first = next((r for r in records if r.counted and not r.ok and r.error_excerpt), None)
    msg = f" — {first.error_excerpt[:160]}" if first else ""
    return f"{summary.failed} of {summary.requests} failed ({classes}){msg}"


def level_result(concurrency: int, run: LoadRun | None, summary: Summary, signals: Signals) -> LevelResult:
    """A ramp level from one bounded load."""
    return LevelResult(concurrency, summary, run.ended_by if run else "not run", signals)


def ramp_levels(max_concurrency: int, factor: float = 2.0) -> list[int]:
    """1, 2, 4, … up to ``max_concurrency`` (which is always the last level)."""
    levels, c = [], 1
    factor = max(1.25, factor)
    while c < max_concurrency:
        levels.append(c)
        c = max(c + 1, int(round(c * factor)))
    levels.append(max(1, max_concurrency))
    return levels


__all__ = [
    "STAGES",
    "Budget",
    "Stage",
    "StageContext",
    "describe_errors",
    "knee",
    "level_result",
    "over_saturation",
    "ramp_levels",
    "register",
    "registered_stages",
    "utc_now",
]
