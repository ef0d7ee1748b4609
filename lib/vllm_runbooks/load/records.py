"""Per-request load records and the statistics drawn from them.

Why one flat record per request: every view of a load run — the stage table, the knee, the plots,
the JSONL artefact, an imported ``vllm bench serve`` or GuideLLM file — is computed from the same
rows, so a figure can always be traced back to the requests behind it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..records import Record

PERCENTILES = (50, 95, 99)


@dataclass(slots=True)
class RequestRecord:
    """One request as the client saw it; times in seconds, relative to the run's start."""

    id: int
    stage: str = ""
    level: int = 0  # the concurrency (or rate step) the request ran under
    warmup: bool = False
    api: str = "chat"
    scheduled_s: float | None = None  # arrival time on the schedule (rate mode)
    sent_s: float = 0.0
    ttft_s: float | None = None
    e2e_s: float | None = None
    tpot_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    status: int | None = None
    ok: bool = False
    cut: bool = False  # in flight when a cap or a stop condition ended the stage: not an error
    error_class: str | None = None
    error_kind: str | None = None
    error_excerpt: str = ""
    chunks: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["itl_s"] = [round(x, 6) for x in self.itl_s]
        for key in ("sent_s", "ttft_s", "e2e_s", "tpot_s", "scheduled_s"):
            if out[key] is not None:
                out[key] = round(out[key], 6)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def counted(self) -> bool:
        """Counted in statistics: not a warm-up request and not cut by a cap."""
        return not self.warmup and not self.cut


def _ms(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "p99": None}
    ms = [v * 1000.0 for v in values]
    out: dict[str, float | None] = {"mean": round(float(np.mean(ms)), 3)}
    for p in PERCENTILES:
        out[f"p{p}"] = round(percentile(ms, p) or 0.0, 3)
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default, as ``vllm bench serve`` uses); None when empty.

    The one percentile of the load check: the level figures, the knee and the in-flight stop rule
    all use it, so a stop and the table it leaves behind agree.
    """
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else None


@dataclass
class Summary(Record):
    """Figures of a set of requests: counts, errors by class, rates and latency percentiles (ms)."""

    SCHEMA = "load_summary"
    requests: int = 0
    completed: int = 0
    failed: int = 0
    cut: int = 0
    errors_by_class: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    goodput_per_s: float | None = None  # completed requests meeting the SLO, per second
    slo_met_fraction: float | None = None
    ttft_ms: dict[str, float | None] = field(default_factory=dict)
    itl_ms: dict[str, float | None] = field(default_factory=dict)
    tpot_ms: dict[str, float | None] = field(default_factory=dict)
    e2e_ms: dict[str, float | None] = field(default_factory=dict)
    prompt_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None
    client_cpu_s: float | None = None

    @property
    def error_rate(self) -> float:
        """Failed / (completed + failed); cut requests are neither."""
        n = self.completed + self.failed
        return self.failed / n if n else 0.0

    def flat(self) -> dict[str, Any]:
        """One table row: counts, rates and the p50/p95 of each latency."""
        row: dict[str, Any] = {
            "requests": self.requests,
            "completed": self.completed,
            "failed": self.failed,
            "errors": ", ".join(f"{k}: {v}" for k, v in sorted(self.errors_by_class.items())) or None,
            "req/s": _r(self.requests_per_s),
            "out tok/s": _r(self.output_tokens_per_s),
            "goodput/s": _r(self.goodput_per_s),
        }
        for name in ("ttft", "itl", "tpot", "e2e"):
            stats = getattr(self, f"{name}_ms")
            row[f"{name} p50 ms"] = stats.get("p50")
            row[f"{name} p95 ms"] = stats.get("p95")
        return row


def _r(v: float | None, nd: int = 2) -> float | None:
    return None if v is None else round(v, nd)


def summarise(
    records: Iterable[RequestRecord],
    *,
    duration_s: float | None = None,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    client_cpu_s: float | None = None,
) -> Summary:
    """Statistics over counted requests. ``duration_s`` defaults to first send → last end."""
    everything = list(records)
    rows = [r for r in everything if r.counted]
    ok = [r for r in rows if r.ok]
    failed = [r for r in rows if not r.ok]
    if duration_s is None:
        ends = [r.sent_s + (r.e2e_s or 0.0) for r in rows]
        duration_s = (max(ends) - min(r.sent_s for r in rows)) if rows else 0.0
    good = [r for r in ok if _meets(r, slo_ttft_s, slo_tpot_s)]
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    cached = [r.cached_tokens for r in ok if r.cached_tokens is not None]
    rate = (lambda n: n / duration_s) if duration_s and duration_s > 0 else (lambda n: None)
    return Summary(
        requests=len(rows),
        completed=len(ok),
        failed=len(failed),
        cut=sum(1 for r in everything if r.cut and not r.warmup),
        errors_by_class=dict(Counter(r.error_class or "unclassified" for r in failed)),
        duration_s=round(duration_s or 0.0, 4),
        requests_per_s=_r(rate(len(ok)), 3) if ok else (0.0 if rows else None),
        output_tokens_per_s=_r(rate(out_tokens), 2) if ok else None,
        goodput_per_s=_r(rate(len(good)), 3) if ok else None,
        slo_met_fraction=round(len(good) / len(rows), 4) if rows else None,
        ttft_ms=_ms([r.ttft_s for r in ok if r.ttft_s is not None]),
        itl_ms=_ms([x for r in ok for x in r.itl_s]),
        tpot_ms=_ms([r.tpot_s for r in ok if r.tpot_s is not None]),
        e2e_ms=_ms([r.e2e_s for r in ok if r.e2e_s is not None]),
        prompt_tokens=sum(r.prompt_tokens or 0 for r in ok),
        output_tokens=out_tokens,
        cached_tokens=sum(cached) if cached else None,
        client_cpu_s=None if client_cpu_s is None else round(client_cpu_s, 4),
    )


def _meets(r: RequestRecord, slo_ttft_s: float | None, slo_tpot_s: float | None) -> bool:
    if slo_ttft_s is not None and (r.ttft_s is None or r.ttft_s > slo_ttft_s):
        return False
    if slo_tpot_s is not None and r.tpot_s is not None and r.tpot_s > slo_tpot_s:
        return False
    return True


def finite(x: float | None) -> bool:
    """A number that is neither None, NaN nor infinite (figures that can be plotted)."""
    return x is not None and math.isfinite(x)


__all__ = ["PERCENTILES", "RequestRecord", "Summary", "finite", "percentile", "summarise"]
