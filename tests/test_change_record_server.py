"""The change record from real runs: the r575 sample incident as the baseline, the after-upgrade
incident plus the embedded vLLM CPU target as "after" (what ``make demo`` does), and the canary
steps added for the record (agent retry, access control, monitoring continuity) on the real server.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import R575, R580
from test_change_record import check_links, planted_in
from vllm_runbooks.canary import run_canary
from vllm_runbooks.change_record import RecordRefused, build_record
from vllm_runbooks.cli import main
from vllm_runbooks.execution.runs import load_result
from vllm_runbooks.execution.suite import run_suite

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.fixture(scope="module")
def before_after(target_factory, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    target = target_factory("default")
    root = tmp_path_factory.mktemp("record_runs")
    before = run_suite({"shared": {"source": str(R575)}}, root / "before", cell_timeout_s=300)
    params = {
        "shared": {"source": str(R580), "endpoint": target.base_url, "model": target.model},
        "canary_validation": {"server_log": target.log_path, "tool_calls": 4},
        "prefix_cache_check": {"log_path": target.log_path, "requests": 3},
        # runbook 05, small (no restarts: the fixture's server is shared with other tests)
        "load_check": {
            "stage_seconds": 5,
            "max_seconds": 30,
            "max_concurrency": 2,
            "level_requests": 4,
            "level_seconds": 5,
            "max_requests": 40,
        },
        "change_record": {"rollback_store": "s3://rollback/k3/ (driver 575.57.08 packages, image digest)"},
    }
    after = run_suite(params, root / "after", before.run_dir, cell_timeout_s=300)
    assert {e.name: e.status for e in after.runbooks}.get("change_record") == "ok", after.lines()
    return Path(before.run_dir), Path(after.run_dir)


def test_record_from_real_runs_ticks_only_from_evidence(before_after) -> None:
    _, after = before_after
    record = load_result(after, "change_record")
    check_links(record, after)
    verified = {s.name for s in record.verified}
    assert {"model_load", "short_text"} <= verified
    image = next(s for s in record.unverified if s.name == "image")  # the tiny model is text-only
    assert "image" not in verified and "skipped" in image.reason
    ticked = {c.name: c for c in record.checklist}
    assert ticked["startup_failure_gone"].ticked, ticked["startup_failure_gone"].reason
    assert ticked["monitoring"].ticked, ticked["monitoring"].reason
    assert not ticked["access_control"].ticked and "without any API key" in ticked["access_control"].reason
    assert not ticked["load_and_restart"].ticked and "restart stability" in ticked["load_and_restart"].reason
    assert record.adopted_path["path"] == "upgrade_driver" and "baseline run" in record.adopted_path["from_run"]
    # runbook 05 ran: its own stages decide long text, and restart stability names the missing restarts
    scope = {s.name: s for s in record.verified + record.unverified}
    assert scope["long_text"].verified or scope["long_text"].reason.startswith("runbook 05 stage single_long")
    assert "ran without restarts" in scope["failure_recovery"].reason
    driver = [c for c in record.comparison if c.kind == "environment" and c.item == "driver"]
    assert driver and driver[0].before == "575.57.08" and driver[0].after.startswith("580.")
    assert any(b.item == "rollback" and b.present for b in record.baseline)


def test_agent_retry_step_passes_on_the_real_server(before_after) -> None:
    _, after = before_after
    canary = load_result(after, "canary_validation")
    step = canary.step("agent_retry")
    assert step is not None and step.status.value == "pass", step
    assert step.details["abandoned"]["chunks"] >= 1 and step.details["healthy_after"] is True
    assert canary.step("monitoring").status.value == "pass"


def test_record_markdown_reads_as_a_document(before_after) -> None:
    _, after = before_after
    text = (after / "change_record.md").read_text(encoding="utf-8")
    for heading in ("## Adopted path", "## Verified scope", "## Change checklist", "## Rollback conditions"):
        assert heading in text
    assert "- [x] **The startup failure no longer reproduces" in text
    assert "| put back | when | derived from |" in text
    page = (after / "change_record.html").read_text(encoding="utf-8")
    assert "<table>" in page and "<script" not in page
    report = (after / "03_canary_validation.report.html").read_text(encoding="utf-8")
    assert "run_canary(config)" not in report and "tool_accuracy_threshold = " not in report


def test_no_planted_secret_in_any_output(before_after) -> None:
    before, after = before_after
    assert planted_in(before) == [] and planted_in(after) == []


def test_altered_evidence_is_refused_by_name(before_after, tmp_path: Path) -> None:
    before, after = before_after
    copy = tmp_path / "after"
    shutil.copytree(after, copy)
    env = copy / "evidence" / "raw" / "env.txt"
    env.write_text(env.read_text(encoding="utf-8") + "EXTRA=1\n", encoding="utf-8")
    with pytest.raises(RecordRefused, match=r"evidence/raw/env\.txt: sha256 differs"):
        build_record(copy, before)


def test_compare_flags_before_after(before_after, capsys) -> None:
    before, after = before_after
    assert main(["compare", str(before), str(after), "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "environment   evidence_capture.driver: 575.57.08 → 580." in out
    assert "driver_too_old → compatible  (fixed)" in out


def test_access_control_on_the_real_server(target_factory, monkeypatch) -> None:
    target = target_factory("default")
    open_report = run_canary(endpoint=target.base_url, steps=["access_control"], api_key_env="I12_UNSET_KEY")
    step = open_report.steps[0]
    assert step.status.value == "skip" and step.details["warning"].startswith("warning: the endpoint answers")
    assert open_report.verdict == "pass"  # a warning, not a missing input
    monkeypatch.setenv("I12_CANARY_KEY", "k-configured-but-not-enforced")
    keyed = run_canary(endpoint=target.base_url, steps=["access_control"], api_key_env="I12_CANARY_KEY")
    assert keyed.steps[0].status.value == "fail" and "not enforced" in keyed.steps[0].reason
