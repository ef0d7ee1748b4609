"""The change record's inputs that no runbook result holds.

Why a module of its own: the assembly and the sections (baseline, rollback) all read these
options; keeping them apart from the assembly lets the sections import them without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .compare import Thresholds


@dataclass
class RecordOptions:
    """What the record cannot read from results: a hand-chosen path, dates, where rollbacks live."""

    adopted_path: str | None = None
    reevaluate_days: int = 30
    today: str | None = None  # ISO date; None = today (UTC)
    rollback_store: str | None = None
    watch_hours: int = 24
    thresholds: Thresholds = field(default_factory=Thresholds)
    requester: str | None = None  # None = the OS user running runbook 06
    approvals_required: int = 1
    approver_roles: list[str] = field(default_factory=list)
    # the change board's fields a person gives (change_record/board.py derives the rest)
    change_type: str | None = None  # standard | normal | emergency; None = normal
    risk: str | None = None  # low | medium | high, only with risk_reason; None = derived
    risk_reason: str | None = None
    impact: str | None = None  # low | medium | high, only with impact_reason; None = derived
    impact_reason: str | None = None
    affected_services: list[str] = field(default_factory=list)
    planned_start: str | None = None  # ISO-8601 with a zone
    planned_end: str | None = None
