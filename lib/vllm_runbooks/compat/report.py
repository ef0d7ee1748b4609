"""One call for runbook 02: decision + launch lint + remediation, displayed together."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_runbooks.records import Record

from .decide import CompatDecision, decide
from .inputs import CompatInputs, inputs_from_evidence
from .lint import LintReport, lint_inputs
from .remediate import OrgConstraints, Remediation, recommend


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
        return self.decision.verdict

    def figure(self):  # noqa: ANN201 - plotly figure
        return self.decision.figure()

    def headline(self) -> dict[str, Any]:
        return {
            **self.decision.headline(),
            "remediation": self.remediation.path,
            "lint_errors": len(self.lint.errors),
            "lint_warnings": len(self.lint.warnings),
        }

    def _repr_html_(self) -> str:
        return "\n<hr>\n".join([self.decision._repr_html_(), self.lint._repr_html_(), self.remediation._repr_html_()])


def load_evidence(run_dir: str | Path) -> dict[str, Any]:
    """RUN_DIR/evidence/evidence.json (or the file itself). FileNotFoundError names the path tried."""
    p = Path(run_dir)
    path = p if p.is_file() else p / "evidence" / "evidence.json"
    if not path.is_file():
        raise FileNotFoundError(f"no evidence file at {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def check(
    evidence: dict[str, Any] | CompatInputs,
    *,
    log_findings: list[dict[str, Any]] | None = None,
    constraints: OrgConstraints | dict[str, Any] | None = None,
    profile: str | None = None,
    want_prefix_caching: bool | None = None,
    today: _dt.date | None = None,
) -> CompatReport:
    """Evidence dict (evidence.json) or CompatInputs -> CompatReport. The runbook cell is this call."""
    inputs = evidence if isinstance(evidence, CompatInputs) else inputs_from_evidence(evidence, profile)
    if isinstance(evidence, CompatInputs) and profile:
        inputs.model_profile = profile
    if isinstance(constraints, dict):
        constraints = OrgConstraints.from_dict(constraints)
    decision = decide(inputs, log_findings, today=today)
    lint = lint_inputs(inputs, want_prefix_caching=want_prefix_caching)
    return CompatReport(decision, lint, recommend(decision, constraints, lint=lint, today=today))
