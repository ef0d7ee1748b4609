"""The over-saturation test over a concurrency ramp, and the knee.

Why a slope test and not a fixed latency limit: a server past its capacity queues requests, so
each doubling of concurrency doubles the time to first token while throughput stays flat — TTFT
rises *with* concurrency (log-log slope near 1) instead of staying flat (slope near 0). In the
spirit of GuideLLM's over-saturation constraint, the ramp stops when, over the last ``window``
levels, the log-log slope of median TTFT against concurrency is at least ``min_slope`` and
throughput grew by at most ``max_efficiency`` of what the added concurrency would give a server
with headroom. A healthy server passes both tests at every level, so the ramp runs to its cap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..records import Record


@dataclass
class LevelPoint(Record):
    """One ramp level as the tests read it."""

    SCHEMA = "load_level_point"
    concurrency: int
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    requests_per_s: float | None
    error_rate: float
    completed: int


@dataclass
class SaturationTest(Record):
    """The test's figures at one level, and whether it fired."""

    SCHEMA = "load_saturation_test"
    levels: list[int]
    slope: float | None
    efficiency: float | None
    saturated: bool
    reason: str = ""


def log_slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(y) on log(x); None when undefined."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=False) if x and y and x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def over_saturation(
    points: list[LevelPoint], *, window: int = 3, min_slope: float = 0.8, max_efficiency: float = 0.5
) -> SaturationTest:
    """Apply the test to the last ``window`` levels with completed requests."""
    usable = [p for p in points if p.completed and p.ttft_p50_ms and p.requests_per_s]
    last = usable[-window:]
    levels = [p.concurrency for p in last]
    if len(last) < window:
        return SaturationTest(levels, None, None, False, f"needs {window} levels with completed requests")
    slope = log_slope([p.concurrency for p in last], [p.ttft_p50_ms or 0.0 for p in last])
    conc_gain = last[-1].concurrency / last[0].concurrency
    rps_gain = (last[-1].requests_per_s or 0.0) / (last[0].requests_per_s or 1.0)
    efficiency = (rps_gain - 1) / (conc_gain - 1) if conc_gain > 1 else None
    saturated = slope is not None and efficiency is not None and slope >= min_slope and efficiency <= max_efficiency
    reason = ""
    if saturated:
        reason = (
            f"over-saturated: TTFT rises with concurrency (log-log slope {slope:.2f} ≥ {min_slope}) while "
            f"throughput grew {rps_gain:.2f}× for {conc_gain:g}× concurrency "
            f"(efficiency {efficiency:.2f} ≤ {max_efficiency}) over levels {levels}"
        )
    return SaturationTest(
        levels,
        None if slope is None else round(slope, 3),
        None if efficiency is None else round(efficiency, 3),
        saturated,
        reason,
    )


def knee(
    points: list[LevelPoint], slo_ttft_ms: float, max_error_rate: float, saturated_at: int | None = None
) -> int | None:
    """Highest concurrency whose p95 TTFT meets the SLO with errors within the limit, below any
    level the saturation test flagged (that level's window already queued)."""
    good = [
        p.concurrency
        for p in points
        if p.completed
        and p.ttft_p95_ms is not None
        and p.ttft_p95_ms <= slo_ttft_ms
        and p.error_rate <= max_error_rate
        and (saturated_at is None or p.concurrency < saturated_at)
    ]
    return max(good) if good else None


__all__ = ["LevelPoint", "SaturationTest", "knee", "log_slope", "over_saturation"]
