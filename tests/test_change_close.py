"""``vllm-runbooks close`` (issue 20 item 2): only an approved, unchanged record is closed, once, after
its watch window, with a review drafted from the run's own timeline and approvals."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import pytest

from run_factory import write_run
from test_change_board import _compat, _entries
from vllm_runbooks.change_record import build_record
from vllm_runbooks.change_record.approvals import approve
from vllm_runbooks.change_record.closure import CLOSURE_FILE, PIR_FILE, ClosureRefused, close, closure_status
from vllm_runbooks.change_record.options import RecordOptions
from vllm_runbooks.change_record.render import save_record
from vllm_runbooks.cli import main
from vllm_runbooks.execution.runs import summarise_run

RECORD_FILES = ("change_record.json", "change_record.md", "change_record.html")


def recorded_run(run: Path, **opts) -> Path:
    """A run whose runbook 06 wrote its record, listed in run.json as the runner would."""
    write_run(run, _entries(), {"compat/decision.json": _compat()})
    save_record(build_record(run, options=RecordOptions(requester="rita", **opts)), run)
    write_run(run, _entries(), {"compat/decision.json": _compat()}, on_disk=RECORD_FILES)
    return run


def test_an_approved_change_closes_once_with_a_review_draft(tmp_path: Path) -> None:
    run = recorded_run(tmp_path / "run")
    with pytest.raises(ClosureRefused, match="the record is pending"):
        close(run, "successful", "bob")
    approve(run, "alice", "approve", note="ok for the window")
    closure, review = close(run, "successful_with_issues", "bob", note="<script>x</script> token=abcd1234abcd1234")
    data = json.loads(closure.read_text())
    assert (data["code"], data["closed_by"], data["approval_status"]) == ("successful_with_issues", "bob", "approved")
    assert "abcd1234abcd1234" not in closure.read_text() and "abcd1234abcd1234" not in review.read_text()
    text = review.read_text()
    assert "| compatibility\\_decision | 2026-12-02T01:00:00Z | 2026-12-02T01:05:00Z | ok |" in text
    assert "| alice | approve |" in text and "\\<script\\>" in text and "<script>" not in text
    assert "watch window not checked: no planned window on record" in text
    assert closure_status(run)[0] == "closed"
    with pytest.raises(ClosureRefused, match="closed already"):
        close(run, "successful", "bob")
    assert summarise_run(run).status != "tampered"  # close/ is bookkeeping, like approvals/
    assert main(["runs", "--verify", "--runs-dir", str(run.parent)]) == 0


def test_the_watch_window_after_the_planned_end_must_pass(tmp_path: Path) -> None:
    run = recorded_run(tmp_path / "run", planned_start="2026-12-02T00:00:00Z", planned_end="2026-12-02T02:00:00Z")
    approve(run, "alice", "approve")
    early = _dt.datetime(2026, 12, 2, 20, 0, tzinfo=_dt.UTC)
    with pytest.raises(ClosureRefused, match="watch window runs until 2026-12-03T02:00:00"):
        close(run, "successful", "bob", now=early)
    assert not (run / CLOSURE_FILE).exists() and not (run / PIR_FILE).exists()
    closure, _ = close(run, "successful", "bob", now=early + _dt.timedelta(hours=7))
    assert "watch window ended 2026-12-03T02:00:00+00:00" in json.loads(closure.read_text())["watch"]


def test_an_edited_record_or_a_rejection_is_not_closed(tmp_path: Path) -> None:
    run = recorded_run(tmp_path / "run")
    approve(run, "alice", "approve")
    (run / "compat" / "decision.json").write_text(json.dumps(_compat("no_driver_change")))
    with pytest.raises(ClosureRefused, match="decision.json"):
        close(run, "successful", "bob")
    other = recorded_run(tmp_path / "other")
    approve(other, "alice", "reject", note="not in this window")
    assert main(["close", str(other), "--code", "successful", "--as", "bob"]) == 2
    assert main(["close", str(tmp_path / "nowhere"), "--code", "successful"]) == 2


def test_the_cli_closes_and_says_where_the_review_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = recorded_run(tmp_path / "run")
    approve(run, "alice", "conditions", note="watch p95")
    assert main(["close", str(run), "--code", "unsuccessful", "--as", "bob", "--note", "rolled back"]) == 0
    out = capsys.readouterr().out
    assert "review draft:" in out and PIR_FILE in out
    assert "Close code:** unsuccessful" in (run / PIR_FILE).read_text()
