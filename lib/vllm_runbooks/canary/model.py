"""Canary records: the configuration, one step's result, and the whole report.

Why records: the executed canary notebook is change evidence, and a scheduler reads the same
facts from scraps and ``run.json`` without opening it, so every result is plain JSON with a
schema name and version, and renders itself in Jupyter.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..display import Figures, banner, esc, html_table
from ..records import Record
from ..stage import Headline, ResultMixin, register_result

EVIDENCE_CHARS = 1500
MAX_TOOL_CALLS = 200  # a canary is a bounded probe, never a load test


class Status(enum.StrEnum):
    """A step's outcome; only these three, so a missing answer is never read as a pass."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


STATUS_TONE = {Status.PASS: "good", Status.FAIL: "bad", Status.SKIP: "warn"}
VERDICTS = ("pass", "fail", "incomplete")  # the only values a canary headline carries
STATUS_MARK = {Status.PASS: "✔ pass", Status.FAIL: "✘ fail", Status.SKIP: "– skip"}


def excerpt(value: Any, limit: int = EVIDENCE_CHARS) -> str:
    """A bounded text view of a response or message, for the evidence column."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 20] + f" … [{len(text) - limit + 20} more chars]"


@dataclass
class CanaryConfig(Record):
    """What one canary run talks to and how long it may take; mirrors runbook 03's parameters.

    ``api_key_env`` is the NAME of an environment variable; the key itself is never stored.
    """

    SCHEMA = "canary_config"
    endpoint: str = "http://127.0.0.1:8000"
    model: str | None = None  # None: the first model /v1/models lists
    api_key_env: str | None = "VLLM_API_KEY"
    tool_schema_file: str | None = None  # None: the shipped data/tool_schemas/default_tools.json
    tool_calls: int = 12
    tool_accuracy_threshold: float = 0.95
    request_timeout_s: float = 30.0
    step_timeout_s: float = 180.0
    evidence_dir: str | None = None  # runbook 01's run dir (or its evidence/ dir)
    nccl_tests_file: str | None = None  # an nccl-tests all_reduce_perf output file
    server_log: str | None = None  # the server's log, for startup time and load lines
    allreduce_timeout_s: float = 120.0
    max_tokens: int = 32
    steps: list[str] | None = None  # None: every registered step

    def __post_init__(self) -> None:
        self.tool_calls = max(1, min(int(self.tool_calls), MAX_TOOL_CALLS))


@dataclass(repr=False)
class StepResult(Record):
    """One canary step: pass / fail / skip, why, how long, and what the server said."""

    SCHEMA = "canary_step"
    step: str
    title: str
    order: float
    status: Status
    reason: str
    started_at: str = ""
    duration_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # named latencies, seconds
    evidence: str = ""  # bounded excerpt of the server's own answer or message
    details: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"StepResult({self.step!r}, {self.status.value}, {self.reason[:120]!r})"

    def row(self) -> dict[str, Any]:
        """One checklist row: what a platform owner reads first."""
        timing = ", ".join(f"{k} {v:.3f}s" for k, v in self.timings.items())
        return {
            "step": f"{self.order:g}. {self.title}",
            "status": STATUS_MARK[self.status],
            "reason": self.reason,
            "timings": timing or None,
            "duration": f"{self.duration_s:.2f}s",
        }

    def _repr_html_(self) -> str:
        head = banner(f"{self.title}: {self.status.value}", self.reason, STATUS_TONE[self.status])
        rows = [{"timing": k, "seconds": f"{v:.4f}"} for k, v in self.timings.items()]
        ev = f"<pre style='white-space:pre-wrap'>{esc(self.evidence)}</pre>" if self.evidence else ""
        return head + (html_table(rows) if rows else "") + ev


@dataclass
class ExpansionStage(Record):
    """One stage of the expansion plan: whether it is allowed yet, its conditions and blockers."""

    SCHEMA = "canary_expansion_stage"
    stage: str
    allowed: bool
    conditions: list[str]
    blocking: list[str] = field(default_factory=list)


REPORT_FILE = "canary/canary_report.json"
STEP_DIR = "canary/steps"


@register_result
@dataclass(repr=False)
class CanaryReport(Figures, ResultMixin, Record):
    """Every step's result, the verdict (pass / fail / incomplete) and the expansion plan.

    Runbook 03's stage result: saved as ``canary/canary_report.json`` and read back with
    ``runs.load_result(run_dir, "canary_validation")``.
    """

    FIGURES: ClassVar[dict[str, str]] = {
        "latency": "vllm_runbooks.canary.display:latency_figure",
        "tool_accuracy": "vllm_runbooks.canary.display:tool_accuracy_figure",
    }

    SCHEMA = "canary_report"
    RUNBOOK: ClassVar[str] = "canary_validation"
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = REPORT_FILE
    endpoint: str
    model: str | None
    started_at: str
    duration_s: float
    verdict: str
    steps: list[StepResult] = field(default_factory=list)
    plan: list[ExpansionStage] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"CanaryReport(verdict={self.verdict!r}, {self.counts()}, endpoint={self.endpoint!r})"

    def step(self, name: str) -> StepResult | None:
        """One step's result by name, or None when it did not run."""
        return next((s for s in self.steps if s.step == name), None)

    def counts(self) -> dict[str, int]:
        """passed / failed / skipped (not "pass": a key named so reads as a secret to the redactor)."""
        return {
            f"{s.value}ed" if s != Status.SKIP else "skipped": sum(1 for r in self.steps if r.status == s)
            for s in Status
        }

    def tool_accuracy(self) -> dict[str, Any] | None:
        """The tool-calling step's accuracy figures, or None when it did not run."""
        tools = self.step("tool_calling")
        return (tools.details.get("accuracy") if tools else None) or None

    def headline(self) -> Headline:
        """The ``headline`` scrap runbook 03 glues and the runner copies into run.json.

        Its verdict is always one of ``VERDICTS``: anything else (a hand-edited report) reads as
        "incomplete", never as a pass.
        """
        acc = self.tool_accuracy() or {}
        return self.make_headline(
            self.verdict if self.verdict in VERDICTS else "incomplete",
            {
                "endpoint": self.endpoint,
                "model": self.model,
                "steps": {s.step: s.status.value for s in self.steps},
                "counts": self.counts(),
                "schema_accuracy": acc.get("schema_accuracy"),
                "valid_calls": acc.get("valid_calls"),
                "tool_calls_checked": acc.get("calls"),
                "tool_requests": acc.get("requests"),
                "latency_s": {s.step: round(s.duration_s, 4) for s in self.steps},
                "expansion_allowed": [p.stage for p in self.plan if p.allowed],
            },
        )

    def scraps(self) -> dict[str, Any]:
        """One scrap per step (``canary_<step>``), the report without its steps, and the headline."""
        out: dict[str, Any] = {f"canary_{step.step}": step.to_dict() for step in self.steps}
        out["canary_report"] = {k: v for k, v in self.to_dict().items() if k != "steps"}
        out["headline"] = self.headline().to_dict()
        return out

    def save(self, run_dir: str | Path | None) -> Path | None:
        """Write each step (``canary/steps/<step>.json``) and the report (``canary/canary_report.json``)
        through ``write_artefact``: redacted, created new, never over an earlier file. Returns the
        report's path."""
        if not run_dir:
            return None
        from ..artefacts import write_artefact

        for step in self.steps:
            write_artefact(run_dir, self.step_file(step.step), step)
        return write_artefact(run_dir, REPORT_FILE, self)

    @staticmethod
    def step_file(step: str) -> str:
        """Where one step's own file is saved (relative to the run directory): what a citation of
        that step names (a rerun adds ``-2``, as for every artefact)."""
        return f"{STEP_DIR}/{_safe_name(step)}.json"

    # -- display ---------------------------------------------------------------------------
    def checklist(self) -> Checklist:
        """The step checklist (what a platform owner reads first)."""
        return Checklist(self)

    def expansion(self) -> Expansion:
        """The expansion plan with each stage's conditions and blockers."""
        return Expansion(self)

    def step_details(self) -> StepDetails:
        """Every step's banner, timings and evidence excerpt."""
        return StepDetails(self)

    def _repr_html_(self) -> str:
        tone = {"pass": "good", "fail": "bad"}.get(self.verdict, "warn")
        c = self.counts()
        detail = (
            f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped — "
            f"{self.endpoint} ({self.model or '?'})"
        )
        return banner(f"Canary verdict: {self.verdict}", detail, tone) + Checklist(self)._repr_html_()


def _safe_name(name: str) -> str:
    """A step name usable as a file name (a registered step could be called anything)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "step"


class Checklist:
    """The step checklist table (the view a platform owner reads first)."""

    def __init__(self, report: CanaryReport) -> None:
        self.report = report

    def rows(self) -> list[dict[str, Any]]:
        """One row per step, in order."""
        return [s.row() for s in self.report.steps]

    def _repr_html_(self) -> str:
        return html_table(self.rows(), ["step", "status", "reason", "timings", "duration"])


class Expansion:
    """The expansion plan: isolated node → a few nodes → shared cluster, with conditions."""

    def __init__(self, report: CanaryReport) -> None:
        self.report = report

    def _repr_html_(self) -> str:
        rows = [
            {
                "stage": p.stage,
                "allowed": "yes" if p.allowed else "not yet",
                "conditions": p.conditions,
                "blocking": p.blocking or None,
            }
            for p in self.report.plan
        ]
        return html_table(rows, ["stage", "allowed", "conditions", "blocking"])


class StepDetails:
    """Every step's banner, timings and evidence excerpt, in order."""

    def __init__(self, report: CanaryReport) -> None:
        self.report = report

    def _repr_html_(self) -> str:
        return "".join(s._repr_html_() for s in self.report.steps) or "<p><em>(no steps run)</em></p>"
