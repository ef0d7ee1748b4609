"""Change-record records: every claim carries the citations (file, sha256, value) that prove it.

Why typed records: the record is read by people (Markdown, HTML) and by machines (JSON beside it,
scraps in runbook 06); both views come from these dataclasses, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..display import banner, html_table
from ..records import Record
from ..stage import Headline, ResultMixin, register_result

#: Why a section has no baseline to read: none was given, or the one given was set aside
#: (``baseline.baseline_mismatch``: another node, GPU model or model profile).
NO_BASELINE = (
    "no usable baseline run: none given, or the one given is not of this node and profile (see the baseline section)"
)


@dataclass
class Citation(Record):
    """One piece of evidence: which run and runbook, which file (a link relative to the record),
    what in it (a scrap, a step, a figure) and the value read there."""

    SCHEMA = "record_citation"
    run: str
    runbook: str
    artefact: str
    what: str = ""
    value: Any = None
    sha256: str = ""

    def text(self) -> str:
        value = "" if self.value is None else f" = {self.value}"
        return f"{self.runbook}: {self.what}{value}"


@dataclass
class ScopeItem(Record):
    """A part of the serving stack: verified (with citations) or not (with the reason)."""

    SCHEMA = "record_scope_item"
    name: str
    title: str
    verified: bool
    reason: str
    evidence: list[Citation] = field(default_factory=list)


@dataclass
class ChecklistItem(Record):
    """An item of the change checklist; ticked only from evidence, else the reason it is not."""

    SCHEMA = "record_checklist_item"
    name: str
    text: str
    ticked: bool
    reason: str
    evidence: list[Citation] = field(default_factory=list)


@dataclass
class RollbackCondition(Record):
    """When to put something back, and where that threshold or signal came from."""

    SCHEMA = "record_rollback_condition"
    put_back: str  # driver | image | node assignment | …
    when: str
    source: str


@dataclass
class BaselineItem(Record):
    """One thing that should have been saved before the change: present in the baseline run or not."""

    SCHEMA = "record_baseline_item"
    item: str
    what: str
    present: bool
    reason: str
    evidence: list[Citation] = field(default_factory=list)


@dataclass
class Change(Record):
    """One before/after difference; ``regression`` marks those that argue against the change."""

    SCHEMA = "record_change"
    kind: str  # verdict | latency | error_class | tool_accuracy | environment | status
    runbook: str
    item: str
    before: Any
    after: Any
    regression: bool
    note: str = ""


@dataclass
class RunbookLine(Record):
    """A runbook of the run as the record lists it: status, verdict and links to its views."""

    SCHEMA = "record_runbook"
    name: str
    status: str  # ok | failed | skipped | not run
    verdict: str | None = None
    reason: str | None = None
    notebook: str | None = None
    html: str | None = None
    report_html: str | None = None


@dataclass
class ChangeBoard(Record):
    """The change-board section of the record; every derived value carries where it came from."""

    SCHEMA = "change_board"
    change_type: str = "normal"
    change_type_why: str = ""
    standard_offer: str = ""  # an earlier approved record of the same path and profile, when found
    risk: str = "medium"
    risk_why: str = ""
    risk_derived: str = ""  # what the evidence gave, when a parameter overrode it
    impact: str = "medium"
    impact_why: str = ""
    impact_derived: str = ""
    profile: str = ""
    affected_nodes: list[str] = field(default_factory=list)
    affected_nodes_from: str = ""
    affected_services: list[str] = field(default_factory=list)
    affected_endpoints: list[str] = field(default_factory=list)
    planned_window: dict[str, Any] = field(default_factory=dict)  # start, end, why
    actual_window: dict[str, Any] = field(default_factory=dict)  # start, end, from
    implementation_plan: list[dict[str, Any]] = field(default_factory=list)  # step, nodes, checks
    plan_from: str = ""
    backout_plan: list[str] = field(default_factory=list)
    backout_exercised: str = ""
    watch_hours: float = 24  # the watch window after the planned end (``close`` waits for it)


@register_result
@dataclass(repr=False)
class ChangeRecord(ResultMixin, Record):
    """Runbook 06's result: the record a platform owner signs (the stage contract's result)."""

    SCHEMA = "change_record"
    RUNBOOK = "change_record"
    VERDICTS = ("ready", "incomplete", "regressed")
    ARTEFACT = "change_record.json"
    run_id: str
    run_dir: str
    created_at: str
    adopted_path: dict[str, Any]
    reasons: list[str]
    constraints: dict[str, Any]
    runbooks: list[RunbookLine]
    missing: list[str]
    verified: list[ScopeItem]
    unverified: list[ScopeItem]
    rollback: list[RollbackCondition]
    reevaluate_on: str
    triggers: list[str]
    checklist: list[ChecklistItem]
    baseline: list[BaselineItem]
    comparison: list[Change]
    baseline_run: str | None = None
    baseline_dir: str | None = None
    rollback_store: str | None = None
    artefacts: dict[str, str] = field(default_factory=dict)
    #: Who asked for the change (parameter ``requester``, default the OS user): never its approver.
    requester: str = ""
    #: When the record counts as approved (``change_record.approvals.policy_status``).
    approval_policy: dict[str, Any] = field(default_factory=dict)
    #: Approvals found beside an earlier version of this record (they do not carry over), checked.
    prior_approvals: list[dict[str, Any]] = field(default_factory=list)
    #: How far this machine vouches for the run's run.json (execution/signing.py): status, key id,
    #: what that proves and what it does not. "ready" needs status "verified".
    machine_signature: dict[str, str] = field(default_factory=dict)
    #: Why the baseline given was set aside (another node, GPU model or profile); [] when it was used.
    baseline_not_used: list[str] = field(default_factory=list)
    #: The change-board fields (change_record/board.py); None in a record written before they existed.
    board: ChangeBoard | None = None

    def __repr__(self) -> str:
        ticked = sum(c.ticked for c in self.checklist)
        path = self.adopted_path.get("path")
        return f"ChangeRecord({self.run_id!r}, path={path!r}, checklist {ticked}/{len(self.checklist)})"

    @property
    def verdict(self) -> str:
        """ready: every checklist item ticked and run.json's keyed signature verified here; incomplete:
        some item not, or the signature not verified; regressed: a before/after regression."""
        if any(c.regression for c in self.comparison):
            return "regressed"
        signed = self.machine_signature.get("status") == "verified"
        return "ready" if signed and self.checklist and all(c.ticked for c in self.checklist) else "incomplete"

    def headline(self) -> Headline:
        """The compact summary run.json keeps (runbook, verdict, figures)."""
        return self.make_headline(
            self.verdict,
            {
                "path": self.adopted_path.get("path"),
                "chosen_by_hand": bool(self.adopted_path.get("chosen_by_hand")),
                "checklist_ticked": sum(c.ticked for c in self.checklist),
                "checklist_items": len(self.checklist),
                "verified": [s.name for s in self.verified],
                "unverified": [s.name for s in self.unverified],
                "regressions": sum(c.regression for c in self.comparison),
                "missing_runbooks": list(self.missing),
                "artefacts_cited": len(self.artefacts),
                "reevaluate_on": self.reevaluate_on,
            },
        )

    def save(self, run_dir: str | Path | None) -> Path | None:
        """Markdown, JSON and offline HTML beside the notebook (redacted, new files); returns the JSON."""
        if not run_dir:
            return None
        from .render import save_record

        return save_record(self, run_dir)["json"]

    def _repr_html_(self) -> str:
        tone = {"ready": "good", "incomplete": "warn", "regressed": "bad"}[self.verdict]
        path = self.adopted_path.get("path") or "—"
        head = banner(
            f"Change record: {self.verdict}",
            f"path {path}; checklist {sum(c.ticked for c in self.checklist)}/{len(self.checklist)} ticked; "
            f"machine signature of run.json: {self.machine_signature.get('status') or 'not checked'}",
            tone,
        )
        rows = [
            {"item": c.text, "ticked": "✔" if c.ticked else "✘", "evidence / reason": _why(c.evidence, c.reason)}
            for c in self.checklist
        ]
        scope = [
            {"scope": s.title, "verified": "✔" if s.verified else "✘", "evidence / reason": _why(s.evidence, s.reason)}
            for s in self.verified + self.unverified
        ]
        return head + html_table(rows) + html_table(scope)


def _why(evidence: list[Citation], reason: str) -> str:
    if evidence:
        return "; ".join(f"{c.text()} ({c.artefact})" for c in evidence)
    return reason


__all__ = [
    "BaselineItem",
    "Change",
    "ChangeBoard",
    "ChangeRecord",
    "ChecklistItem",
    "Citation",
    "RollbackCondition",
    "RunbookLine",
    "ScopeItem",
]
