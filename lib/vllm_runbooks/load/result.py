"""Runbook 05's result: every stage's outcome, the ramp's knee, the verdict and its headline.

Why one record: the change record (runbook 06) and a scheduler read the verdict, the knee and the
error classes from ``run.json`` / ``load/load_check.json`` without opening the notebook; the
per-request rows are a separate JSONL artefact (they can be many), redacted and never overwritten.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..display import Figures, HtmlView, banner, esc, html_table
from ..records import Record
from ..stage import Headline, ResultMixin, register_result
from .records import RequestRecord, Summary
from .sampler import MetricsSample, Signals
from .saturation import LevelPoint, SaturationTest

VERDICTS = ("pass", "degraded", "failing", "inconclusive")
RESULT_FILE = "load/load_check.json"
RECORDS_FILE = "load/requests.jsonl"
VERDICT_TONE = {"pass": "good", "degraded": "warn", "failing": "bad", "inconclusive": "unknown"}


class StageStatus(enum.StrEnum):
    """How a stage ended: pass, warn (ran with errors under the stop threshold), fail, skip."""

    PASS = "pass"
    WARN = "warn"  # ran, with errors under the stop threshold or a server-side warning
    FAIL = "fail"
    SKIP = "skip"


@dataclass
class LevelResult(Record):
    """One concurrency level of the ramp."""

    SCHEMA = "load_level"
    concurrency: int
    summary: Summary
    ended_by: str = "completed"
    signals: Signals | None = None
    saturation: SaturationTest | None = None

    def point(self) -> LevelPoint:
        """This level as the saturation test and the knee read it."""
        s = self.summary
        return LevelPoint(
            self.concurrency, s.ttft_ms.get("p50"), s.ttft_ms.get("p95"), s.requests_per_s, s.error_rate, s.completed
        )


@dataclass
class StageOutcome(Record):
    """One stage: status and why, what it sent, what came back, and what the server said meanwhile."""

    SCHEMA = "load_stage_outcome"
    stage: str
    title: str
    order: float
    status: StageStatus
    reason: str
    started_at: str = ""
    t_start_s: float = 0.0  # on the run's clock (for the timeline's bands)
    t_end_s: float = 0.0
    duration_s: float = 0.0
    summary: Summary | None = None
    levels: list[LevelResult] = field(default_factory=list)
    ended_by: str | None = None  # completed | max_seconds | stop: … | cap: …
    capped: str | None = None  # what the global cap cut, when it did
    signals: Signals | None = None
    counter_deltas: dict[str, float | None] = field(default_factory=dict)
    log_findings: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """One row of the per-stage table."""
        s = self.summary
        row: dict[str, Any] = {"stage": self.title, "status": self.status.value, "reason": self.reason}
        if s is not None:
            row.update(s.flat())
        row["ended by"] = self.ended_by
        if self.capped:
            row["capped"] = self.capped
        return row


@register_result
@dataclass(repr=False)
class LoadCheckResult(Figures, ResultMixin, Record):
    """Runbook 05's stage result (``runs.load_result(run_dir, "load_check")``)."""

    FIGURES: ClassVar[dict[str, str]] = {
        "latency_vs_concurrency": "vllm_runbooks.load.figures:latency_vs_concurrency",
        "throughput_vs_concurrency": "vllm_runbooks.load.figures:throughput_vs_concurrency",
        "metrics_timeline": "vllm_runbooks.load.figures:metrics_timeline",
        "errors_by_class": "vllm_runbooks.load.figures:errors_by_class",
    }

    SCHEMA = "load_check_result"
    RUNBOOK: ClassVar[str] = "load_check"
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = RESULT_FILE
    source: str  # the endpoint, or the imported results file
    model: str | None = None
    verdict: str = "inconclusive"
    reason: str = ""
    started_at: str = ""
    duration_s: float = 0.0
    plan: dict[str, Any] = field(default_factory=dict)
    stages: list[StageOutcome] = field(default_factory=list)
    knee_concurrency: int | None = None
    # the ramp reached the target concurrency (max_concurrency) at the knee, uncut by the global caps
    target_concurrency: int | None = None
    target_concurrency_verified: bool = False
    target_concurrency_reason: str = ""
    warnings: list[str] = field(default_factory=list)
    slo: dict[str, Any] = field(default_factory=dict)
    metrics: list[MetricsSample] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    records_file: str | None = None
    records: list[RequestRecord] = field(default_factory=list)  # not saved here: see RECORDS_FILE

    def __repr__(self) -> str:
        return f"LoadCheckResult(verdict={self.verdict!r}, knee={self.knee_concurrency}, source={self.source!r})"

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["records"] = []  # thousands of rows belong in the JSONL artefact, not in this record
        return data

    # -- figures ------------------------------------------------------------------------------
    def stage(self, name: str) -> StageOutcome | None:
        """The outcome of stage ``name``, or None when it was not run."""
        return next((s for s in self.stages if s.stage == name), None)

    def ramp_levels(self) -> list[LevelResult]:
        """The ramp's levels in order (imported benchmarks become levels too)."""
        ramp = self.stage("ramp")
        return ramp.levels if ramp else []

    def knee_level(self) -> LevelResult | None:
        """The ramp level at the knee, or None."""
        return next((lv for lv in self.ramp_levels() if lv.concurrency == self.knee_concurrency), None)

    def error_classes(self) -> dict[str, int]:
        """Every error class seen in any stage, with its count (warm-up and cut requests excluded)."""
        c: Counter = Counter()
        for r in self.records:
            if r.counted and not r.ok:
                c[r.error_class or "unclassified"] += 1
        if not self.records:  # a result read back from its JSON: the stage summaries hold the counts
            for s in self.stages:
                if s.summary:
                    c.update(s.summary.errors_by_class)
        return dict(sorted(c.items()))

    def headline(self) -> Headline:
        """Verdict, knee, goodput and p95 TTFT at the knee, error classes seen."""
        knee = self.knee_level()
        return self.make_headline(
            self.verdict if self.verdict in VERDICTS else "inconclusive",
            {
                "source": self.source,
                "model": self.model,
                "reason": self.reason[:300],
                "knee_concurrency": self.knee_concurrency,
                "target_concurrency": self.target_concurrency,
                "target_concurrency_verified": self.target_concurrency_verified,
                "target_concurrency_reason": self.target_concurrency_reason[:300],
                "warnings": self.warnings,
                "goodput_per_s": knee.summary.goodput_per_s if knee else None,
                "requests_per_s_at_knee": knee.summary.requests_per_s if knee else None,
                "p95_ttft_ms_at_knee": knee.summary.ttft_ms.get("p95") if knee else None,
                "error_classes": self.error_classes(),
                "stages": {s.stage: s.status.value for s in self.stages},
                "requests": self.totals.get("requests"),
                "slo_ttft_ms": self.slo.get("ttft_ms"),
            },
        )

    def scraps(self) -> dict[str, Any]:
        """The stage table (without per-request rows) and the headline."""
        from ..redact import redact_obj

        data = self.to_dict()
        data.pop("metrics", None)
        return redact_obj({"load_check": data, "headline": self.headline().to_dict()})

    def save(self, run_dir: str | Path | None) -> Path | None:
        """``load/requests.jsonl`` (per-request records) and ``load/load_check.json``, both
        redacted and created new (a second save writes ``-2`` files, never over the first)."""
        if not run_dir:
            return None
        from ..artefacts import write_artefact

        if self.records:
            lines = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in self.records)
            self.records_file = str(write_artefact(run_dir, RECORDS_FILE, lines).relative_to(Path(run_dir)))
        return write_artefact(run_dir, RESULT_FILE, self.to_dict())

    # -- display ------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        detail = f"{self.reason} · knee: {self.knee_concurrency} · source: {self.source}"
        return banner(f"load check: {self.verdict}", detail, VERDICT_TONE.get(self.verdict, "unknown")) + self.table()

    def table(self) -> str:
        """The per-stage table (count, errors by class, percentiles, tokens/s, goodput)."""
        return html_table([s.row() for s in self.stages])

    def stage_table(self) -> HtmlView:
        """The per-stage table as a cell result."""
        return HtmlView(self.table())

    def ramp(self) -> HtmlView:
        """The ramp level by level: figures, the saturation test, server signals."""
        return HtmlView(self.ramp_table())

    def plan_view(self) -> HtmlView:
        """The plan (caps, stages, estimated tokens) as a cell result."""
        return HtmlView(self.plan_html())

    def findings(self) -> HtmlView:
        """Per stage: what stopped it, what the global cap cut, server signals and log lines."""
        rows = []
        for s in self.stages:
            sig = "; ".join(s.signals.stop_reasons) if s.signals and s.signals.stop_reasons else None
            logs = [f"{f['label']}: {f['line'][:160]}" for f in s.log_findings[:3]]
            deltas = {k: v for k, v in s.counter_deltas.items() if v}
            rows.append(
                {
                    "stage": s.stage,
                    "ended by": s.ended_by,
                    "capped": s.capped,
                    "server signals": sig,
                    "counter deltas": ", ".join(f"{k.split(':')[-1]}: {v:g}" for k, v in deltas.items()) or None,
                    "server log": logs or None,
                    "details": json.dumps(s.details, default=str)[:300] if s.details else None,
                }
            )
        return HtmlView(html_table(rows))

    def ramp_table(self) -> str:
        """The ramp table's HTML (see ``ramp``)."""
        rows = []
        for lv in self.ramp_levels():
            row = {"concurrency": lv.concurrency, **lv.summary.flat(), "ended by": lv.ended_by}
            if lv.saturation and lv.saturation.slope is not None:
                row["ttft slope"] = lv.saturation.slope
                row["efficiency"] = lv.saturation.efficiency
            if lv.signals and lv.signals.stop_reasons:
                row["server"] = "; ".join(lv.signals.stop_reasons)
            rows.append(row)
        return html_table(rows)

    def plan_html(self) -> str:
        """The plan's HTML (see ``plan_view``)."""
        rows = [{"stage": k, **v} for k, v in (self.plan.get("stages") or {}).items()]
        caps = {k: v for k, v in self.plan.items() if k != "stages"}
        return f"<p>{esc(json.dumps(caps))}</p>" + html_table(rows)


__all__ = [
    "RECORDS_FILE",
    "RESULT_FILE",
    "VERDICTS",
    "LevelResult",
    "LoadCheckResult",
    "StageOutcome",
    "StageStatus",
]
