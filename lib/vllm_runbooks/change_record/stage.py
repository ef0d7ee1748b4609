"""Runbook 06 as a stage: ``Config`` → ``run(config)`` → a result that shows and saves itself.

Why the stage shape: the suite, the notebook and tests call the same ``run``; the notebook stays
a call and a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import Record
from .build import RecordOptions, build_record
from .compare import Thresholds
from .model import ChangeRecord
from .render import save_record


@dataclass
class Config(Record):
    """Runbook 06's parameters (documented in the notebook's first cell)."""

    SCHEMA = "change_record_config"
    run_dir: str = ""
    record_of: str | None = None  # the run to record; None = run_dir (the suite's own run)
    baseline_dir: str | None = None
    adopted_path: str | None = None
    reevaluate_days: int = 30
    today: str | None = None
    rollback_store: str | None = None
    watch_hours: int = 24
    latency_regression_pct: float = 20.0
    tool_accuracy_drop: float = 0.02
    requester: str | None = None
    approvals_required: int = 1
    approver_roles: list[str] = field(default_factory=list)
    change_type: str | None = None
    risk: str | None = None
    risk_reason: str | None = None
    impact: str | None = None
    impact_reason: str | None = None
    affected_services: list[str] = field(default_factory=list)
    planned_start: str | None = None
    planned_end: str | None = None

    def options(self) -> RecordOptions:
        return RecordOptions(
            adopted_path=self.adopted_path or None,
            reevaluate_days=self.reevaluate_days,
            today=self.today,
            rollback_store=self.rollback_store,
            watch_hours=self.watch_hours,
            thresholds=Thresholds(self.latency_regression_pct, self.tool_accuracy_drop),
            requester=self.requester,
            approvals_required=max(1, int(self.approvals_required)),
            approver_roles=[str(r) for r in self.approver_roles],
            change_type=self.change_type or None,
            risk=self.risk or None,
            risk_reason=self.risk_reason or None,
            impact=self.impact or None,
            impact_reason=self.impact_reason or None,
            affected_services=[str(s) for s in self.affected_services or []],
            planned_start=self.planned_start or None,
            planned_end=self.planned_end or None,
        )


Result = ChangeRecord


def run(config: Config) -> ChangeRecord:
    """Build the record of ``config.run_dir`` (refuses with RecordRefused naming an altered file)."""
    source = config.record_of or config.run_dir
    return build_record(source, config.baseline_dir or None, config.options(), record_dir=config.run_dir)


def save(record: ChangeRecord, run_dir: str | Path) -> dict[str, Any]:
    """Markdown, JSON and HTML of the record beside the executed notebook, by kind."""
    return save_record(record, run_dir)
