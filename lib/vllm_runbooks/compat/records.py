"""The compatibility decision's records: the verdict and everything reported beside it.

Why separate from the rules: later stages (runbook 06, the CLI, a saved ``compat/decision.json``)
read these records without running the rules, and the HTML view lives in :mod:`.views`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from vllm_runbooks.records import Record

from .facts import BranchInfo, Fact
from .inputs import CompatInputs
from .require import RequireCheck

#: The fixed vocabulary of runbook 02's verdict.
VERDICTS = (
    "compatible",
    "compatible_minor_version",
    "compatible_forward_compat",
    "driver_too_old",
    "arch_unsupported",
    "unknown",
)
OK_VERDICTS = VERDICTS[:3]


# Where a finding sends the investigation once the driver is ruled out.
@dataclass
class Risk(Record):
    """Something reported beside the verdict (803 risk, NFB / EOL branch, caveats)."""

    SCHEMA = "compat_risk"
    kind: str
    severity: str  # error | warning | info
    text: str
    facts: list[Fact] = field(default_factory=list)


@dataclass
class Demand(Record):
    """One thing the model profile demands, and whether this host/image meets it."""

    SCHEMA = "profile_demand"
    demand: str
    status: str  # met | unmet | unknown | info
    text: str
    source: str | None = None


@dataclass
class LogCheck(Record):
    """A log finding set against the verdict: confirms, contradicts or is neutral to it."""

    SCHEMA = "log_check"
    label: str
    relation: str  # confirms | contradicts | neutral
    why: str
    line: int | None = None
    text: str | None = None


@dataclass
class CompatDecision(Record):
    """The compatibility verdict and everything reported beside it."""

    SCHEMA = "compat_decision"
    SCHEMA_VERSION = 1

    verdict: str
    summary: str
    reasons: list[str]
    facts: list[Fact]
    evidence_used: dict[str, Any]
    missing: list[str]
    container_start: RequireCheck | None
    risks: list[Risk]
    driver_branch: BranchInfo | None
    profile: str
    profile_demands: list[Demand]
    log_checks: list[LogCheck]
    routes: list[str]
    inputs: CompatInputs
    evaluated_on: str
    forward_compat: dict[str, Any] = field(default_factory=dict)  # package, branch, supported, why

    @property
    def contradictions(self) -> list[LogCheck]:
        """Log findings that disagree with the verdict (shown, never averaged away)."""
        return [c for c in self.log_checks if c.relation == "contradicts"]

    @property
    def driver_is_problem(self) -> bool | None:
        """False when compatible, True when the driver is too old, None when it cannot be said."""
        if self.verdict in OK_VERDICTS:
            return False
        return True if self.verdict == "driver_too_old" else None

    def key_figures(self) -> dict[str, Any]:
        """The few facts run.json carries beside the verdict (runbook 02's headline figures)."""
        return {
            "summary": self.summary,
            "missing": self.missing,
            "container_starts": None if self.container_start is None else self.container_start.will_start,
            "contradictions": len(self.contradictions),
            "risks": [r.kind for r in self.risks if r.severity in ("error", "warning")],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompatDecision:
        """Rebuild with every nested record typed (facts, risks, demands, log checks, inputs)."""
        d = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}
        d["facts"] = [Fact.from_dict(x) for x in data.get("facts") or []]
        d["risks"] = [
            Risk(x["kind"], x["severity"], x["text"], [Fact.from_dict(f) for f in x.get("facts") or []])
            for x in data.get("risks") or []
        ]
        d["profile_demands"] = [Demand.from_dict(x) for x in data.get("profile_demands") or []]
        d["log_checks"] = [LogCheck.from_dict(x) for x in data.get("log_checks") or []]
        cs = data.get("container_start")
        d["container_start"] = (
            None
            if cs is None
            else RequireCheck.from_dict({**cs, "facts": [Fact.from_dict(f) for f in cs.get("facts") or []]})
        )
        d["driver_branch"] = BranchInfo.from_dict(data["driver_branch"]) if data.get("driver_branch") else None
        d["inputs"] = CompatInputs.from_dict(data.get("inputs") or {})
        return cls(**d)

    def _repr_html_(self) -> str:
        from .views import decision_html

        return decision_html(self)
