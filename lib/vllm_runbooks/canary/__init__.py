"""Runbook 03, canary validation: ordered checks of one isolated node, then the expansion plan.

    report = stage.run(stage.Config(endpoint="http://127.0.0.1:8000"))   # = run_canary(...)
    report                       # verdict banner + checklist
    report.figure("latency")     # a figure that displays itself
    glue_result(report)          # scraps for every step + the typed headline (vllm_runbooks.stage)
    report.save(run_dir)         # canary/canary_report.json and canary/steps/<step>.json

Steps live in a registry (``registry.register``); modules in ``canary/steps/`` are discovered.
"""

from __future__ import annotations

from .model import REPORT_FILE, STEP_DIR, VERDICTS, CanaryConfig, CanaryReport, ExpansionStage, Status, StepResult
from .nccl import NcclTestsResult, allreduce_check, load_nccl_tests, parse_nccl_tests
from .plan import expansion_plan, overall_verdict
from .png import make_png, png_data_url
from .registry import STEPS, Outcome, StepContext, failed, passed, register, registered_steps, run_canary, skipped
from .toolcheck import ToolAccuracy, ToolSuite, check_call, default_tool_schema_path, load_tool_suite

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
    "skipped",
]
