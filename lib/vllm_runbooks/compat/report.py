"""One call for runbook 02: decision + launch lint + remediation, displayed together."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vllm_runbooks.records import Record

from .decide import CompatDecision, decide
from .inputs import CompatInputs, inputs_from_evidence
from .lint import LintReport, lint_inputs
from .remediate import OrgConstraints, Remediation, recommend

if TYPE_CHECKING:
    from ..evidence.model import Evidence


@dataclass
class CompatReport(Record):
    """What runbook 02 shows and glues: verdict, lint and the one recommended path."""

    SCHEMA = "compat_report"
    SCHEMA_VERSION = 1
    decision: CompatDecision
    lint: LintReport
    remediation: Remediation

    @property
    def verdict(self) -> str:
        """The compatibility verdict the remediation was chosen for."""
        return self.decision.verdict

    def key_figures(self) -> dict[str, Any]:
        """The decision's key figures plus the path and lint counts (runbook 02's headline figures)."""
        return {
            **self.decision.key_figures(),
            "remediation": self.remediation.path,
            "lint_errors": len(self.lint.errors),
            "lint_warnings": len(self.lint.warnings),
        }

    def _repr_html_(self) -> str:
        return "\n<hr>\n".join([self.decision._repr_html_(), self.lint._repr_html_(), self.remediation._repr_html_()])


def check(
    evidence: Evidence | dict[str, Any] | CompatInputs,
    *,
    log_findings: list[dict[str, Any]] | None = None,
    constraints: OrgConstraints | dict[str, Any] | None = None,
    profile: str | None = None,
    want_prefix_caching: bool | None = None,
    today: _dt.date | None = None,
) -> CompatReport:
    """Evidence (typed, or evidence.json's dict) or CompatInputs -> CompatReport: decide, lint, recommend."""
    inputs = evidence if isinstance(evidence, CompatInputs) else inputs_from_evidence(evidence, profile)
    if isinstance(evidence, CompatInputs) and profile:
        inputs.model_profile = profile
    if isinstance(constraints, dict):
        constraints = OrgConstraints.from_dict(constraints)
    decision = decide(inputs, log_findings, today=today)
    lint = lint_inputs(inputs, want_prefix_caching=want_prefix_caching)
    return CompatReport(decision, lint, recommend(decision, constraints, lint=lint, today=today))
