"""Compatibility decision, remediation and launch lint (runbook 02).

Runbook 02 calls :func:`check` (evidence dict -> :class:`CompatReport`); the parts are usable alone:
:func:`decide`, :func:`check_require`, :func:`lint_launch`, :func:`recommend`, :func:`compat_chart`.
"""

from .chart import compat_chart
from .decide import OK_VERDICTS, VERDICTS, CompatDecision, Demand, LogCheck, Risk, decide
from .facts import Fact, load_facts
from .inputs import CompatInputs, inputs_from_evidence
from .launch import ParsedLaunch, parse_launch
from .lint import LintFinding, LintReport, lint_inputs, lint_launch
from .profiles import guess_profile, load_profile, profile_names
from .remediate import PATHS, OrgConstraints, Remediation, driver_targets, recommend
from .report import CompatReport, check, load_evidence
from .require import RequireCheck, check_require

__all__ = [
    "OK_VERDICTS",
    "PATHS",
    "VERDICTS",
    "CompatDecision",
    "CompatInputs",
    "CompatReport",
    "Demand",
    "Fact",
    "LintFinding",
    "LintReport",
    "LogCheck",
    "OrgConstraints",
    "ParsedLaunch",
    "Remediation",
    "RequireCheck",
    "Risk",
    "check",
    "check_require",
    "compat_chart",
    "decide",
    "driver_targets",
    "guess_profile",
    "inputs_from_evidence",
    "lint_inputs",
    "lint_launch",
    "load_evidence",
    "load_facts",
    "load_profile",
    "parse_launch",
    "profile_names",
    "recommend",
]
