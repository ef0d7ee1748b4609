"""Reading run directories back: listing, sha256 verification, comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_runbooks.cli import main
from vllm_runbooks.execution.runjson import record_run
from vllm_runbooks.execution.runner import RunbookResult
from vllm_runbooks.execution.runs import compare_runs, list_runs, summarise_run


def _fake_run(run_dir: Path, verdict: str, driver: str, status: str = "ok") -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "01_evidence_capture.ipynb").write_text("{}")
    result = RunbookResult(
        name="compatibility_decision",
        notebook=str(run_dir / "01_evidence_capture.ipynb"),
        html=None,
        status=status,
        started_at="2026-11-29T10:00:00Z",
        ended_at="2026-11-29T10:00:05Z",
        duration_s=5.0,
        parameters={},
        headline={"verdict": verdict, "figures": {"driver": driver, "gpus": 8}},
        run_dir=str(run_dir),
    )
    record_run(run_dir, result)
    return run_dir


def test_compare_marks_what_changed(tmp_path: Path) -> None:
    before = _fake_run(tmp_path / "a", "driver_too_old", "575.57.08")
    after = _fake_run(tmp_path / "b", "compatible", "580.95.05")
    comparison = compare_runs([before, after])
    assert comparison.changed == ["compatibility_decision.verdict", "compatibility_decision.driver"]
    rows = {(r["runbook"], r["figure"]): r for r in comparison.rows}
    assert rows[("compatibility_decision", "gpus")]["a"] == 8 and rows[("compatibility_decision", "gpus")]["b"] == 8
    assert "≠ driver" in comparison._repr_html_()


def test_list_runs_reports_unreadable_and_tampered(tmp_path: Path, capsys) -> None:
    good = _fake_run(tmp_path / "1-good", "compatible", "580.95.05")
    (tmp_path / "2-broken").mkdir()
    (tmp_path / "3-garbage").mkdir()
    (tmp_path / "3-garbage" / "run.json").write_bytes(b"\xff\xfe not json")
    runs = list_runs(tmp_path)
    assert [r.status for r in runs] == ["ok", "unreadable", "unreadable"]
    assert "no run.json" in (runs[1].reason or "")
    assert summarise_run(good, verify=True).tampered == []
    (good / "01_evidence_capture.ipynb").write_text('{"edited": true}')
    assert summarise_run(good, verify=True).tampered == ["01_evidence_capture.ipynb"]
    assert main(["runs", "--runs-dir", str(tmp_path), "--verify"]) == 1
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(str(good)))
    assert "TAMPERED: 01_evidence_capture.ipynb" in line
    assert line.split()[1] == "TAMPERED" and " ok " not in line  # never "ok" beside a tampered file


def test_compare_cli_json(tmp_path: Path, capsys) -> None:
    a = _fake_run(tmp_path / "a", "driver_too_old", "575.57.08")
    b = _fake_run(tmp_path / "b", "driver_too_old", "575.57.08")
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] == []


@pytest.mark.slow
def test_companion_notebooks_execute(tmp_path: Path) -> None:
    """The interactive companions run top to bottom with their default parameters."""
    import papermill as pm

    from conftest import REPO_ROOT

    _fake_run(tmp_path / "runs" / "a", "driver_too_old", "575.57.08")
    _fake_run(tmp_path / "runs" / "b", "compatible", "580.95.05")
    out = tmp_path / "rc.ipynb"
    pm.execute_notebook(
        str(REPO_ROOT / "notebooks" / "run_comparison.ipynb"),
        str(out),
        parameters={"runs_base": str(tmp_path / "runs")},
        progress_bar=False,
        cwd=str(REPO_ROOT),
    )
    text = out.read_text(encoding="utf-8")
    assert "≠ driver" in text and "580.95.05" in text
    console = tmp_path / "console.ipynb"
    pm.execute_notebook(
        str(REPO_ROOT / "notebooks" / "incident_console.ipynb"), str(console), progress_bar=False, cwd=str(REPO_ROOT)
    )
    assert "New incident" in console.read_text(encoding="utf-8")
