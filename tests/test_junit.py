"""JUnit XML: valid against a JUnit schema, one case per check, and the scheduler's exit-code contract.

The schema (tests/data/junit/junit.xsd) follows the structure Jenkins validates JUnit reports
against; xmlschema does the validating.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from conftest import REPO_ROOT, TESTS_DIR
from fault_server import FaultServer
from vllm_runbooks.cli.exit_codes import REFUSED as EXIT_REFUSED
from vllm_runbooks.cli.exit_codes import VERDICT as EXIT_VERDICT
from vllm_runbooks.execution.junit import junit_document

SCHEMA = xmlschema.XMLSchema(str(TESTS_DIR / "data" / "junit" / "junit.xsd"))


def _cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {f"{s.get('name')}/{c.get('name')}": c for s in root.iter("testsuite") for c in s.iter("testcase")}


def test_schema_rejects_what_a_ci_would_reject() -> None:
    """The schema must be able to fail: a test case without a name, a negative count."""
    assert not SCHEMA.is_valid('<testsuites><testsuite name="a" tests="1"><testcase/></testsuite></testsuites>')
    assert not SCHEMA.is_valid('<testsuites><testsuite name="a" tests="-1"/></testsuites>')


def test_one_case_per_step_with_its_outcome() -> None:
    canary = {
        "name": "canary_validation",
        "status": "ok",
        "started_at": "2026-11-30T10:00:00.123456Z",
        "duration_s": 12.5,
        "notebook": "/runs/x/03_canary_validation.ipynb",
        "headline": {
            "runbook": "canary_validation",
            "verdict": "fail",
            "figures": {
                "steps": {"model_load": "pass", "tool_calling": "fail", "multi_gpu": "skip", "odd": "weird"},
                "latency_s": {"model_load": 0.25},
            },
        },
    }
    crashed = {"name": "prefix_cache_check", "status": "failed", "error": "ValueError: boom\x00\x1b (cell 4)"}
    xml = junit_document([canary, crashed], fail_on_verdict=["fail"])
    SCHEMA.validate(xml)
    cases = _cases(xml)
    assert cases["canary_validation/step model_load"].get("time") == "0.250"
    assert list(cases["canary_validation/step model_load"]) == []
    assert cases["canary_validation/step tool_calling"].find("failure") is not None
    assert cases["canary_validation/step multi_gpu"].find("skipped") is not None
    assert cases["canary_validation/step odd"].find("skipped").get("message") == "odd: status 'weird'"
    assert "fail" in cases["canary_validation/verdict"].find("failure").get("message")
    error = cases["prefix_cache_check/execution"].find("error")
    assert error is not None and "boom" in error.get("message") and "\x00" not in error.get("message")
    assert cases["prefix_cache_check/verdict"].find("failure").get("message").startswith("no verdict")
    root = ET.fromstring(xml)
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("8", "3", "1", "2")


def test_accepted_verdict_passes_and_secrets_never_reach_the_report() -> None:
    entry = {
        "name": "compatibility_decision",
        "status": "ok",
        "run_dir": "/runs/VLLM_API_KEY=sk-abcdefghijklmnopqrstuvwx",
        "headline": {"runbook": "compatibility_decision", "verdict": "driver_too_old", "figures": {}},
    }
    xml = junit_document([entry], fail_on_verdict=["fail"])
    SCHEMA.validate(xml)
    assert list(_cases(xml)["compatibility_decision/verdict"].iter("failure")) == []
    assert "sk-abcdefghijklmnopqrstuvwx" not in xml


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow
def test_failing_scheduled_canary_exits_with_the_documented_code_and_valid_xml(tmp_path: Path) -> None:
    """A scheduled canary against an endpoint answering HTTP 500 (fault double, not a vLLM)."""
    server = FaultServer().start()
    try:
        report = tmp_path / "reports" / "canary.xml"
        proc = _cli(
            "run", "canary_validation", "-r", "endpoint", server.base_url("status500"),
            "-p", "tool_calls", "2", "-p", "request_timeout_s", "10",
            "--run-dir", str(tmp_path / "run"), "--no-progress",
            "--fail-on-verdict", "fail", "incomplete", "--junit-xml", str(report),
        )  # fmt: skip
    finally:
        server.close()
    assert proc.returncode == EXIT_VERDICT, proc.stderr[-2000:]
    xml = report.read_text(encoding="utf-8")
    SCHEMA.validate(xml)
    cases = _cases(xml)
    assert "fail" in cases["canary_validation/verdict"].find("failure").get("message")
    assert cases["canary_validation/step model_load"].find("failure") is not None
    assert cases["canary_validation/execution"].find("error") is None
    assert not list(report.parent.glob(".*.tmp"))


def test_refused_run_still_writes_a_report(tmp_path: Path) -> None:
    report = tmp_path / "refused.xml"
    proc = _cli("run", "no_such_runbook", "--run-dir", str(tmp_path / "run"), "--junit-xml", str(report))
    assert proc.returncode == EXIT_REFUSED
    xml = report.read_text(encoding="utf-8")
    SCHEMA.validate(xml)
    assert "unknown runbook" in _cases(xml)["no_such_runbook/execution"].find("error").get("message")
