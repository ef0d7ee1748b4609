"""Compatibility decision, remediation and launch lint (runbook 02).

Runbook 02 is :mod:`.stage` (``Config`` + ``run(config) -> CompatResult``); the parts are usable
alone: :func:`decide`, :func:`check_require`, :func:`lint_launch`, :func:`recommend`,
:func:`compat_chart` (plotly is imported only when a chart is drawn), and :func:`check`
(inputs -> :class:`CompatReport`).
"""

from .chart import compat_chart
from .decide import decide
from .facts import Fact, load_facts
from .grid import CompatGrid, compat_grid
from .inputs import CompatInputs, apply_overrides, build_inputs, inputs_from_evidence
from .launch import ParsedLaunch, parse_launch
from .lint import LintFinding, LintReport, lint_inputs, lint_launch
from .profiles import guess_profile, load_profile, profile_names
from .records import OK_VERDICTS, VERDICTS, CompatDecision, Demand, LogCheck, Risk
from .remediate import PATHS, OrgConstraints, Remediation, driver_targets, recommend
from .report import CompatReport, check
from .require import RequireCheck, check_require

__all__ = [
    "OK_VERDICTS",
    "PATHS",
    "VERDICTS",
    "CompatDecision",
    "CompatGrid",
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
    "apply_overrides",
    "build_inputs",
    "check",
    "check_require",
    "compat_chart",
    "compat_grid",
    "decide",
    "driver_targets",
    "guess_profile",
    "inputs_from_evidence",
    "lint_inputs",
    "lint_launch",
    "load_facts",
    "load_profile",
    "parse_launch",
    "profile_names",
    "recommend",
]
