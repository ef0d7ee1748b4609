"""The tamper check and the record's reading of a run (review findings of the merged main).

An artefact edited between two runbooks must not be re-approved by the next run.json write; a
file planted after the run is neither the newest attempt nor readable as an artefact; run.json's
own signature is checked; every run.json reader survives a hostile one; a console cancel replaces
the killed runner's ``running`` entry; the record reads the newest attempt, ticks "startup
failure gone" only on a proven failure before, and "log storage" only on logs from this run.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from notebook_factory import make_template
from run_factory import write_run
from vllm_runbooks.change_record import RecordRefused, build_record
from vllm_runbooks.change_record.sources import RunView
from vllm_runbooks.console.incident import Incident
from vllm_runbooks.execution import runjson, runner
from vllm_runbooks.execution import runs as runs_reader
from vllm_runbooks.execution.runjson import (
    ArtefactError,
    latest_artefact,
    record_run,
    sha256_file,
    verify_artefact,
)
from vllm_runbooks.execution.runner import RunbookResult
from vllm_runbooks.history.read import read_points


def _result(run_dir: Path, name: str = "smoke", status: str = "ok") -> RunbookResult:
    return RunbookResult(
        name, str(run_dir / f"01_{name}.ipynb"), None, status, "t0", "t1", 0.1, {}, run_dir=str(run_dir)
    )


def _write(run_dir: Path, rel: str, data: object) -> Path:
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _write_run(run_dir: Path, entries: list[dict], files: dict[str, object]) -> None:
    """A run directory as the runner leaves it: notebooks, artefacts, run.json listing them, signed."""
    write_run(run_dir, entries, files)


# -- the manifest is append-only ------------------------------------------------------------------
def test_an_edited_artefact_keeps_its_recorded_hash_and_new_files_are_added(tmp_path: Path) -> None:
    out = _write(tmp_path, "smoke/out.json", {"a": 1})
    record_run(tmp_path, _result(tmp_path))
    recorded = runjson.load_run(tmp_path)["artefacts"]["smoke/out.json"]
    out.write_text('{"a": 2}', encoding="utf-8")  # edited between two runbooks
    _write(tmp_path, "next/out.json", {"b": 1})
    data = record_run(tmp_path, _result(tmp_path, "next"))  # the next runbook's write
    assert data["artefacts"]["smoke/out.json"] == recorded != sha256_file(out)
    assert data["artefacts"]["next/out.json"] == sha256_file(tmp_path / "next/out.json")
    with pytest.raises(RecordRefused, match=r"smoke/out\.json: sha256 differs"):
        build_record(tmp_path)


def test_record_refuses_an_edited_run_json_even_with_a_matching_manifest(tmp_path: Path) -> None:
    out = _write(tmp_path, "smoke/out.json", {"a": 1})
    record_run(tmp_path, _result(tmp_path))
    out.write_text('{"a": 2}', encoding="utf-8")
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    data["artefacts"]["smoke/out.json"] = sha256_file(out)  # the manifest "fixed" by hand
    (tmp_path / "run.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RecordRefused, match=r"run\.json: run\.json was edited"):
        build_record(tmp_path)
    with pytest.raises(ArtefactError, match="run.json was edited"):
        verify_artefact(tmp_path, out)
    with pytest.raises(runner.RunbookError, match="edited after the runner wrote it"):
        runner._check_run_json(tmp_path)
    record_run(tmp_path, _result(tmp_path, "next"))  # a later write keeps saying so (re-signing hides nothing)
    with pytest.raises(RecordRefused, match="edited"):
        build_record(tmp_path)


def test_a_planted_attempt_is_neither_newest_nor_readable(tmp_path: Path) -> None:
    _write(tmp_path, "canary/canary_report.json", {"n": 1})
    _write(tmp_path, "canary/canary_report-2.json", {"n": 2})
    record_run(tmp_path, _result(tmp_path))
    planted = _write(tmp_path, "canary/canary_report-9.json", {"n": 9})
    assert latest_artefact(tmp_path, "canary/canary_report.json") == tmp_path / "canary/canary_report-2.json"
    with pytest.raises(ArtefactError, match="not in run.json's artefact manifest"):
        verify_artefact(tmp_path, planted)


@pytest.mark.slow
def test_runbook_06_refuses_an_artefact_edited_after_an_earlier_runbook(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    body = ["from vllm_runbooks.artefacts import write_artefact", "write_artefact(run_dir, 'smoke/out.json', {'n': 1})"]
    make_template(templates, "01_smoke.ipynb", body)
    shutil.copy(REPO_ROOT / "runbooks" / "06_change_record.ipynb", templates / "06_change_record.ipynb")
    run_dir = tmp_path / "run"
    assert runner.run_runbook("smoke", {}, run_dir, templates=templates).status == "ok"
    target = run_dir / "smoke" / "out.json"
    target.write_text(target.read_text(encoding="utf-8").replace("1", "2"), encoding="utf-8")
    result = runner.run_runbook("change_record", {"today": "2026-12-01"}, run_dir, templates=templates)
    assert result.status == "failed" and "RecordRefused" in (result.error or "")
    assert "smoke/out.json: sha256 differs from run.json" in (result.error or "")
    assert not (run_dir / "change_record.md").exists()


# -- one bounded run.json reader ----------------------------------------------------------------
def test_a_deeply_nested_run_json_is_a_reason_in_every_reader(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "deep"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    (point,) = read_points(tmp_path / "runs")
    assert point.status == "unreadable" and "nested too deeply" in (point.reason or "")
    with pytest.raises(RecordRefused, match="nested too deeply"):
        RunView.load(run_dir)
    with pytest.raises(ValueError, match="nested too deeply"):
        Incident(run_dir).run_json()
    with pytest.raises(ArtefactError, match="nested too deeply"):
        verify_artefact(run_dir, run_dir / "run.json")


def test_every_reader_takes_the_one_run_json_bound(tmp_path: Path) -> None:
    """Issue 22: four bounds (64, 64, 32 and 4 MiB) meant a run ``runs`` lists could be refused by
    06 or 08. A 5 MiB run.json (over the old 4 MiB of the history) reads everywhere; one byte over
    the one bound is refused everywhere, each reader saying why."""
    runs = tmp_path / "runs"
    run_dir = runs / "big"
    entry = {"name": "smoke", "status": "ok", "started_at": "2026-12-01T00:00:00Z", "headline": {"verdict": "pass"}}
    write_run(run_dir, [entry], {})
    data = runjson.load_run(run_dir)
    data["padding"], data["status"] = "x" * (5 << 20), "ok"
    runjson._write_run_json(run_dir / "run.json", data)  # signed by the runner's own writer
    assert (run_dir / "run.json").stat().st_size > 5 << 20
    summary = runs_reader.summarise_run(run_dir, verify=True)
    assert (summary.status, summary.tampered, summary.verdicts) == ("ok", [], {"smoke": "pass"})
    assert RunView.load(run_dir).entries["smoke"].status == "ok"
    assert [p.status for p in read_points(runs)] == ["ok"]
    assert Incident(run_dir).run_json()["runbooks"][0]["name"] == "smoke"
    body = json.dumps({"runbooks": [], "padding": ""})
    over = body.replace('""', '"' + "x" * (runjson.RUN_JSON_MAX_BYTES + 1 - len(body)) + '"')
    (run_dir / "run.json").write_text(over, encoding="utf-8")
    assert (run_dir / "run.json").stat().st_size == runjson.RUN_JSON_MAX_BYTES + 1
    bound = f"larger than {runjson.RUN_JSON_MAX_BYTES} bytes"
    assert bound in (runs_reader.summarise_run(run_dir).reason or "")
    with pytest.raises(RecordRefused, match=bound):
        RunView.load(run_dir)
    assert bound in (read_points(runs)[0].reason or "")
    with pytest.raises(ValueError, match=bound):
        Incident(run_dir).run_json()
    with pytest.raises(ArtefactError, match=bound):
        runjson.run_manifest(run_dir)


# -- the one manifest verifier ------------------------------------------------------------------
def test_the_verifier_says_per_file_ok_changed_missing_or_unlisted(tmp_path: Path) -> None:
    files = {"a/ok.json": {"n": 1}, "a/changed.json": {"n": 2}, "a/missing.json": {"n": 3}}
    _write_run(tmp_path, [{"name": "smoke", "status": "ok"}], files)
    (tmp_path / "a" / "changed.json").write_text('{"n": 20}', encoding="utf-8")
    (tmp_path / "a" / "missing.json").unlink()
    _write(tmp_path, "a/planted.json", {"n": 4})
    check = runjson.check_run(tmp_path, unlisted=True)
    assert check.state == "signed"
    status = {c.rel: c.status for c in check.files}
    assert {k: v for k, v in status.items() if k.startswith("a/")} == {
        "a/ok.json": "ok",
        "a/changed.json": "changed",
        "a/missing.json": "missing",
        "a/planted.json": "unlisted",
    }
    why = {c.rel: c.why for c in check.problems}
    assert "sha256 differs from run.json" in why["a/changed.json"]
    assert "listed in run.json but missing" in why["a/missing.json"]
    assert "not in run.json's artefact manifest" in why["a/planted.json"]
    # every reader says the same about the same files
    assert runs_reader.summarise_run(tmp_path, verify=True).tampered == [
        "a/changed.json",
        "a/missing.json",
        "a/planted.json (not in the manifest)",
    ]
    with pytest.raises(RecordRefused, match=r"a/changed\.json: sha256 differs from run\.json"):
        build_record(tmp_path)
    with pytest.raises(ArtefactError, match="sha256 differs from run.json"):
        verify_artefact(tmp_path, tmp_path / "a" / "changed.json")
    with pytest.raises(ArtefactError, match="not in run.json's artefact manifest"):
        verify_artefact(tmp_path, tmp_path / "a" / "planted.json")
    verify_artefact(tmp_path, tmp_path / "a" / "ok.json")


def test_a_listed_path_outside_the_run_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("not part of the run", encoding="utf-8")
    run_dir = tmp_path / "run"
    _write_run(run_dir, [], {})
    data = runjson.load_run(run_dir)
    data["artefacts"]["../outside.txt"] = sha256_file(secret)
    runjson._write_run_json(run_dir / "run.json", data)  # a signed manifest that points outside
    (bad,) = runjson.check_run(run_dir).problems
    assert (bad.rel, bad.status, bad.sha256) == ("../outside.txt", "missing", None) and "outside" in bad.why
    with pytest.raises(RecordRefused, match="outside"):
        build_record(run_dir)


def test_runbook_06_hashes_each_file_once_with_evidence_sums(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.json's manifest and evidence's SHA256SUMS list the same files: each is read once."""
    from conftest import R575
    from vllm_runbooks.change_record.integrity import verify_run
    from vllm_runbooks.evidence import collect_evidence

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    notebook = run_dir / "01_evidence_capture.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    runjson.record_running(run_dir, "evidence_capture", notebook, {}, "e1")
    collect_evidence(R575, run_dir=run_dir)
    record_run(run_dir, RunbookResult("evidence_capture", str(notebook), None, "ok", "t0", "t1", 0.1, {}), "e1")
    manifest = runjson.load_run(run_dir)["artefacts"]
    assert "evidence/SHA256SUMS" in manifest
    view = RunView.load(run_dir)
    read: list[str] = []
    real_open = Path.open

    def counting_open(self: Path, mode: str = "r", *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        read.append(str(self))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    assert verify_run(view) == manifest
    monkeypatch.undo()
    assert sorted(read) == sorted(str(run_dir / rel) for rel in manifest)  # each listed file, once
    (run_dir / "evidence" / "raw" / "os-release").write_text("edited", encoding="utf-8")
    with pytest.raises(RecordRefused, match=r"evidence/raw/os-release: sha256 differs"):
        verify_run(RunView.load(run_dir))


# -- console cancel -----------------------------------------------------------------------------
def test_cancel_replaces_the_killed_runners_running_entry(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a finished process: its pid names no live runner
    incident = Incident(tmp_path)
    notebook = tmp_path / "01_long_step.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    entry = {"name": "long_step", "notebook": str(notebook), "status": "running", "started_at": "t0"}
    entry |= {"pid": dead.pid, "host": socket.gethostname()}
    with runjson._run_lock(tmp_path):
        runjson._record_run_locked(tmp_path, entry, "abc123")
    incident.record_cancelled("long_step", "01_long_step.ipynb", {}, "t0", 1.0)
    data = runjson.load_run(tmp_path)
    assert [(e["name"], e["status"]) for e in data["runbooks"]] == [("long_step", "cancelled")]
    assert data["status"] != "running"
    assert "attempts/01_long_step-cancelled-1.ipynb" in data["artefacts"]


def test_a_moved_attempt_keeps_its_recorded_hash(tmp_path: Path) -> None:
    notebook = tmp_path / "01_smoke.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    record_run(tmp_path, _result(tmp_path))
    recorded = runjson.load_run(tmp_path)["artefacts"]["01_smoke.ipynb"]
    notebook.write_text('{"edited": 1}', encoding="utf-8")
    Incident(tmp_path).prepare_rerun("01_smoke.ipynb")
    manifest = runjson.load_run(tmp_path)["artefacts"]
    assert "01_smoke.ipynb" not in manifest and manifest["attempts/01_smoke-failed-1.ipynb"] == recorded
    with pytest.raises(RecordRefused, match=r"01_smoke-failed-1\.ipynb: sha256 differs"):
        build_record(tmp_path)


# -- what the record reads ----------------------------------------------------------------------
def _canary(status: str = "pass") -> dict:
    return {"schema": "canary_report", "steps": [{"step": "model_load", "status": status, "reason": "loaded"}]}


def test_the_record_cites_the_newest_attempt(tmp_path: Path) -> None:
    entries = [{"name": "canary_validation", "status": "ok", "headline": {"verdict": "pass"}}]
    files = {"canary/canary_report.json": _canary("fail"), "canary/canary_report-2.json": _canary("pass")}
    _write_run(tmp_path, entries, files)
    verified = {s.name: s for s in build_record(tmp_path).verified}
    assert verified["model_load"].evidence[0].artefact == "canary/canary_report-2.json"


def _decision(verdict: str, items: list[dict] | None = None) -> dict:
    return {"schema": "compat_result", "report": {"decision": {"verdict": verdict}}, "logs": {"items": items or []}}


def _with_evidence(logs: dict[str, object] | None) -> dict[str, object]:
    """The log files and runbook 01's evidence naming them as the logs it stored."""
    if not logs:
        return {}
    files = [{"stored_as": Path(rel).relative_to("evidence").as_posix()} for rel in logs]
    evidence = {"schema": "evidence", "items": {"logs": {"status": "ok", "value": {"files": files}}}}
    return {**logs, "evidence/evidence.json": evidence}


def _after(run_dir: Path, logs: dict[str, object] | None = None) -> Path:
    entries = [
        {"name": "compatibility_decision", "status": "ok"},
        {"name": "canary_validation", "status": "ok"},
        {"name": "evidence_capture", "status": "ok"},
    ]
    files = {"compat/decision.json": _decision("compatible"), "canary/canary_report.json": _canary()}
    _write_run(run_dir, entries, {**files, **_with_evidence(logs)})
    return run_dir


def _baseline(run_dir: Path, verdict: str, labels: list[str], logs: dict[str, object] | None = None) -> Path:
    findings = [{"severity": "critical", "label": label} for label in labels]
    entries = [{"name": "compatibility_decision", "status": "ok"}, {"name": "evidence_capture", "status": "ok"}]
    decision = _decision(verdict, [{"findings": findings}])
    _write_run(run_dir, entries, {"compat/decision.json": decision, **_with_evidence(logs)})
    return run_dir


@pytest.mark.parametrize(
    ("verdict", "labels", "ticked"),
    [("unknown", [], False), ("driver_too_old", [], True), ("unknown", ["driver_too_old"], True)],
)
def test_startup_failure_gone_needs_a_proven_failure_before(
    tmp_path: Path, verdict: str, labels: list[str], ticked: bool
) -> None:
    after = _after(tmp_path / "after")
    base = _baseline(tmp_path / "before", verdict, labels)
    item = {c.name: c for c in build_record(after, base).checklist}["startup_failure_gone"]
    assert item.ticked is ticked, item.reason
    if not ticked:
        assert "driver_too_old" in item.reason and "failing log label" in item.reason


def test_log_storage_needs_logs_other_than_the_baselines(tmp_path: Path) -> None:
    same = {"evidence/raw/logs/serve.log": "the same old log"}
    item = {
        c.name: c
        for c in build_record(_after(tmp_path / "a", same), _baseline(tmp_path / "b", "unknown", [], same)).checklist
    }
    assert not item["log_storage"].ticked and "byte-identical to the baseline" in item["log_storage"].reason
    new = {"evidence/raw/logs/serve.log": "a log from after the change"}
    item = {c.name: c for c in build_record(_after(tmp_path / "c", new), tmp_path / "b").checklist}
    assert item["log_storage"].ticked and "where production keeps its logs is not checked" in item["log_storage"].reason


def test_a_learned_failure_label_counts_and_its_scored_lines_are_cited(tmp_path: Path) -> None:
    """Issue 19: the record cites the lines a label rests on, the learned scorer's too (role ``scored``)."""
    after = _after(tmp_path / "after")
    item = {
        "label": "oom_weights",
        "confidence": "likely",
        "findings": [],
        "scorer": {"names_cause": True, "label": "oom_weights", "score": 0.93},
        "evidence": [
            {
                "line": 12,
                "text": "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
                "role": "scored",
            },
            {"line": 3, "text": "progress 10%", "role": "progress"},
        ],
    }
    decision = _decision("unknown", [item])
    entries = [{"name": "compatibility_decision", "status": "ok"}]
    _write_run(tmp_path / "before", entries, {"compat/decision.json": decision})
    got = {c.name: c for c in build_record(after, tmp_path / "before").checklist}["startup_failure_gone"]
    assert got.ticked, got.reason
    lines = [c for c in got.evidence if c.what.startswith("log line")]
    assert [c.what for c in lines] == ["log line 12: oom_weights (learned scorer (likely))"]
    assert "unable to allocate CUDA0 buffer" in lines[0].value
    item["scorer"]["names_cause"] = False  # below the threshold: the scorer named nothing
    _write_run(tmp_path / "below", entries, {"compat/decision.json": decision})
    assert not {c.name: c for c in build_record(after, tmp_path / "below").checklist}["startup_failure_gone"].ticked
