"""Runbook 03, canary validation: ordered checks of one isolated node, then the expansion plan.

    report = run_canary(CanaryConfig(endpoint="http://127.0.0.1:8000"))
    report                       # verdict banner + checklist
    report.latency_figure()      # plotly
    glue_report(report)          # scraps for every step + the headline

Steps live in a registry (``registry.register``); modules in ``canary/steps/`` are discovered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .model import REPORT_FILE, STEP_DIR, VERDICTS, CanaryConfig, CanaryReport, ExpansionStage, Status, StepResult
from .nccl import NcclTestsResult, allreduce_check, load_nccl_tests, parse_nccl_tests
from .plan import expansion_plan, overall_verdict
from .png import make_png, png_data_url
from .registry import STEPS, Outcome, StepContext, failed, passed, register, registered_steps, run_canary, skipped
from .toolcheck import ToolAccuracy, ToolSuite, check_call, default_tool_schema_path, load_tool_suite


def glue_report(report: CanaryReport) -> dict[str, Any]:
    """Glue one scrap per step (``canary_<step>``), the whole report and the ``headline``."""
    from ..stage import glue_result

    return glue_result(report)


def save_report(report: CanaryReport, run_dir: str | Path | None) -> Path | None:
    """Save the report and its steps into the run directory (see ``CanaryReport.save``)."""
    return report.save(run_dir)


def show(fig: Any) -> None:
    """Show a canary figure offline-safe (plotly.js inlined once per kernel)."""
    from ..display import show_figure

    show_figure(fig)


__all__ = [
    "REPORT_FILE",
    "STEP_DIR",
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
