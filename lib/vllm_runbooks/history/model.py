"""The history's result: what was read, what regressed, and the verdict a scheduler acts on."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ..display import Figures, banner, esc, html_table
from ..records import Record
from ..stage import Headline, ResultMixin, register_result

RUNBOOK = "validation_history"
#: steady: nothing regressed; recovered: something did, the newest runs are back; regressed: the
#: newest run of some runbook is still worse; empty: fewer than two readable runs to compare.
VERDICTS = ("steady", "recovered", "regressed", "empty")
MAX_REGRESSIONS_SHOWN = 50


@register_result
@dataclasses.dataclass
class History(Figures, ResultMixin, Record):
    """Points (one per run and runbook) and the regressions found in them."""

    FIGURES: ClassVar[dict[str, str]] = {
        "verdicts": "vllm_runbooks.history.figures:verdict_figure",
        "trend": "vllm_runbooks.history.figures:trend_figure",
    }

    SCHEMA: ClassVar[str] = "validation_history"
    RUNBOOK: ClassVar[str] = RUNBOOK
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = "history/history.json"

    runs_dir: str
    points: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    regressions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    watched: dict[str, str] = dataclasses.field(default_factory=dict)  # figure → label
    unreadable: list[dict[str, str]] = dataclasses.field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return list(dict.fromkeys(p["run_id"] for p in self.points))

    @property
    def verdict(self) -> str:
        if len(self.run_ids) < 2:
            return "empty"
        if any(r.get("ongoing") for r in self.regressions):
            return "regressed"
        return "recovered" if self.regressions else "steady"

    def first_regression(self) -> dict[str, Any] | None:
        return self.regressions[0] if self.regressions else None

    def headline(self) -> Headline:
        first = self.first_regression() or {}
        return self.make_headline(
            self.verdict,
            {
                "runs": len(self.run_ids),
                "runbooks": len({p["runbook"] for p in self.points}),
                "unreadable_runs": len(self.unreadable),
                "regressions": len(self.regressions),
                "ongoing_regressions": sum(1 for r in self.regressions if r.get("ongoing")),
                "first_regression_run": first.get("run_id"),
                "first_regression_figure": first.get("figure"),
            },
        )

    def table(self) -> list[dict[str, Any]]:
        """One row per (run, runbook): verdict and the watched figures."""
        rows = []
        for p in self.points:
            row = {"run": p["run_id"], "at": p["at"], "runbook": p["runbook"], "verdict": p["verdict"]}
            row.update({k: v for k, v in p["figures"].items() if k in self.watched})
            rows.append(row)
        return rows

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.table())

    def _repr_html_(self) -> str:
        tone = {"steady": "good", "recovered": "warn", "regressed": "bad"}.get(self.verdict, "unknown")
        first = self.first_regression()
        detail = (
            f"first regression: run {first['run_id']} — {first['detail']}"
            if first
            else f"{len(self.run_ids)} run(s), no figure worse than its threshold"
        )
        rows = [
            {k: r[k] for k in ("run_id", "at", "figure", "value", "baseline", "ongoing", "detail")}
            for r in self.regressions[:MAX_REGRESSIONS_SHOWN]
        ]
        body = html_table(rows) if rows else "<p>No regression.</p>"
        if self.unreadable:
            body += "<p><b>Unreadable runs</b> (listed, not dropped):</p>" + html_table(self.unreadable)
        return banner(f"Validation history: {self.verdict}", detail, tone) + body + f"<p>{esc(self.runs_dir)}</p>"
