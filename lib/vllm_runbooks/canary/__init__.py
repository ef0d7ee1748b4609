"""Runbook 03, canary validation: ordered checks of one isolated node, then the expansion plan.

    report = run_canary(CanaryConfig(endpoint="http://127.0.0.1:8000"))
    report                       # verdict banner + checklist
    report.latency_figure()      # plotly
    glue_report(report)          # scraps for every step + the headline

Steps live in a registry (``registry.register``); modules in ``canary/steps/`` are discovered.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..artefacts import write_artefact
from .model import VERDICTS, CanaryConfig, CanaryReport, ExpansionStage, Status, StepResult
from .nccl import NcclTestsResult, allreduce_check, load_nccl_tests, parse_nccl_tests
from .plan import expansion_plan, overall_verdict
from .png import make_png, png_data_url
from .registry import STEPS, Outcome, StepContext, failed, passed, register, registered_steps, run_canary, skipped
from .toolcheck import ToolAccuracy, ToolSuite, check_call, default_tool_schema_path, load_tool_suite

REPORT_FILE = "canary/canary_report.json"
STEP_DIR = "canary/steps"


def glue_report(report: CanaryReport) -> dict[str, Any]:
    """Glue one scrap per step (``canary_<step>``), the whole report and the ``headline``."""
    from ..scraps import glue

    names: dict[str, Any] = {}
    for step in report.steps:
        names[f"canary_{step.step}"] = step.to_dict()
    names["canary_report"] = {k: v for k, v in report.to_dict().items() if k != "steps"}
    names["headline"] = report.headline()
    for name, data in names.items():
        glue(name, data)
    return names


def save_report(report: CanaryReport, run_dir: str | Path | None) -> Path | None:
    """Write the report (``canary/canary_report.json``) and each step's result
    (``canary/steps/<step>.json``) for the change record, through ``write_artefact``: redacted,
    created new, never over an earlier file. Returns the report's path."""
    if not run_dir:
        return None
    for step in report.steps:
        write_artefact(run_dir, f"{STEP_DIR}/{_safe_name(step.step)}.json", step)
    return write_artefact(run_dir, REPORT_FILE, report)


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "step"


def show(fig: Any) -> None:
    """Show a canary figure offline-safe (plotly.js inlined once per kernel)."""
    from ..display import show_figure

    show_figure(fig)


__all__ = [
    "STEPS",
    "VERDICTS",
    "CanaryConfig",
    "CanaryReport",
    "ExpansionStage",
    "NcclTestsResult",
    "Outcome",
    "Status",
    "StepContext",
    "StepResult",
    "ToolAccuracy",
    "ToolSuite",
    "allreduce_check",
    "check_call",
    "default_tool_schema_path",
    "expansion_plan",
    "failed",
    "glue_report",
    "load_nccl_tests",
    "load_tool_suite",
    "make_png",
    "overall_verdict",
    "parse_nccl_tests",
    "passed",
    "png_data_url",
    "register",
    "registered_steps",
    "run_canary",
    "save_report",
    "show",
    "skipped",
]
