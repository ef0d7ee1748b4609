"""Runbook 03, canary validation: ordered checks of one isolated node, then the expansion plan.

    report = run_canary(CanaryConfig(endpoint="http://127.0.0.1:8000"))
    report                       # verdict banner + checklist
    report.latency_figure()      # plotly
    glue_report(report)          # scraps for every step + the headline

Steps live in a registry (``registry.register``); modules in ``canary/steps/`` are discovered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .model import CanaryConfig, CanaryReport, ExpansionStage, Status, StepResult
from .nccl import NcclTestsResult, allreduce_check, load_nccl_tests, parse_nccl_tests
from .plan import expansion_plan, overall_verdict
from .png import make_png, png_data_url
from .registry import STEPS, Outcome, StepContext, failed, passed, register, registered_steps, run_canary, skipped
from .toolcheck import ToolAccuracy, ToolSuite, check_call, default_tool_schema_path, load_tool_suite

REPORT_FILE = "canary/canary_report.json"


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
    """Write the report as JSON under ``<run_dir>/canary/`` for the change record; never overwrite."""
    if not run_dir:
        return None
    path = Path(run_dir) / REPORT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path = path.with_name(f"canary_report-{report.started_at.replace(':', '')}.json")
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def show(fig: Any) -> None:
    """Show a canary figure offline-safe (plotly.js inlined once per kernel)."""
    from ..display import show_figure

    show_figure(fig)


__all__ = [
    "STEPS",
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
