"""Hardening round 3: only files a runbook wrote enter a run's manifest, and run.json is signed
with a key that does not live in the run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_runbooks.execution import runjson, runner
from vllm_runbooks.execution.runs import summarise_run


def _finish(run_dir: Path, name: str, entry_id: str, writes: dict[str, str]) -> dict:
    """One runbook as the runner records it: running entry, its files, its result."""
    nb = run_dir / f"{name}.ipynb"
    nb.write_text("{}")
    runjson.record_running(run_dir, name, nb, {}, entry_id)
    for rel, text in writes.items():
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(text)
    result = runner.RunbookResult(name, str(nb), None, "ok", "t0", "t1", 1.0, {}, headline={"verdict": "pass"})
    return runjson.record_run(run_dir, result, entry_id)


def test_files_copied_into_a_run_are_refused_by_the_next_runbook_by_name(tmp_path: Path) -> None:
    """The attack: copy canary_report-2.json and steps/*-2.json (all pass) into a clean run, then run
    06. Before, 06's own running entry listed them with their current hash and cited them."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _finish(run_dir, "03_canary", "e1", {"canary/canary_report.json": '{"verdict": "fail"}'})
    (run_dir / "canary" / "canary_report-2.json").write_text('{"verdict": "pass"}')
    (run_dir / "canary" / "steps").mkdir()
    (run_dir / "canary" / "steps" / "access-2.json").write_text('{"status": "pass"}')
    nb = run_dir / "06_change_record.ipynb"
    nb.write_text("")
    with pytest.raises(runjson.UnlistedFilesError) as caught:
        runjson.record_running(run_dir, "change_record", nb, {}, "e2")
    assert caught.value.files == ["canary/canary_report-2.json", "canary/steps/access-2.json"]
    data = runjson.load_run(run_dir)
    assert "canary/canary_report-2.json" not in data["artefacts"]  # nothing was blessed
    assert [b["name"] for b in data["runbooks"]] == ["03_canary"]  # no running entry was written
    assert runjson.latest_artefact(run_dir, "canary/canary_report.json") == run_dir / "canary/canary_report.json"
    tampered = summarise_run(run_dir, verify=True).tampered
    assert "canary/canary_report-2.json (not in the manifest)" in tampered


def test_the_runner_refuses_before_executing_and_leaves_no_notebook(tmp_path: Path) -> None:
    from notebook_factory import make_template

    templates = tmp_path / "templates"
    make_template(templates, "01_smoke.ipynb", ["x = 1"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "planted.json").write_text("{}")
    with pytest.raises(runner.RunbookError, match=r"planted\.json"):
        runner.run_runbook("smoke", {}, run_dir, templates=templates)
    assert sorted(p.name for p in run_dir.iterdir()) == [".run.lock", "planted.json"]


def test_a_finished_entry_names_its_outputs_and_only_those_enter_the_manifest(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    data = _finish(run_dir, "01_evidence", "e1", {"evidence/evidence.json": "{}", "evidence/raw/env.txt": "A=1"})
    entry = data["runbooks"][0]
    assert entry["outputs"] == ["01_evidence.ipynb", "evidence/evidence.json", "evidence/raw/env.txt"]
    assert set(data["artefacts"]) == set(entry["outputs"])
    data = _finish(run_dir, "02_compat", "e2", {"compat/decision.json": "{}"})
    assert data["runbooks"][1]["outputs"] == ["02_compat.ipynb", "compat/decision.json"]
    assert summarise_run(run_dir, verify=True).tampered == []


def test_files_of_a_runbook_still_running_are_noted_not_claimed(tmp_path: Path) -> None:
    """Two runbooks into one directory: the second starts while the first has written files. Those
    are not refused (their runbook is alive) and not counted as the second runbook's outputs."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    first = run_dir / "04_prefix.ipynb"
    first.write_text("")
    runjson.record_running(run_dir, "prefix", first, {}, "a")  # this process: alive
    (run_dir / "prefix_cache").mkdir()
    (run_dir / "prefix_cache" / "check.json").write_text("{}")
    second = run_dir / "05_load.ipynb"
    second.write_text("")
    runjson.record_running(run_dir, "load", second, {}, "b")
    entry = next(b for b in runjson.load_run(run_dir)["runbooks"] if b["entry_id"] == "b")
    assert entry["unlisted_at_start"] == ["prefix_cache/check.json"]
    (run_dir / "load").mkdir()
    (run_dir / "load" / "load_check.json").write_text("{}")
    result = runner.RunbookResult("load", str(second), None, "ok", "t0", "t1", 1.0, {})
    data = runjson.record_run(run_dir, result, "b")
    outputs = next(b for b in data["runbooks"] if b["entry_id"] == "b")["outputs"]
    assert outputs == ["05_load.ipynb", "load/load_check.json"]
    result = runner.RunbookResult("prefix", str(first), None, "ok", "t0", "t1", 1.0, {})
    data = runjson.record_run(run_dir, result, "a")
    assert next(b for b in data["runbooks"] if b["entry_id"] == "a")["outputs"] == [
        "04_prefix.ipynb",
        "prefix_cache/check.json",
    ]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "ok"


# -- the keyed signature ---------------------------------------------------------------------------
def _signed_run(run_dir: Path) -> dict:
    run_dir.mkdir()
    return _finish(run_dir, "01_evidence", "e1", {"evidence/evidence.json": "{}"})


def test_run_json_carries_an_hmac_this_machine_verifies(tmp_path: Path) -> None:
    data = _signed_run(tmp_path / "run")
    sig = data["signature"]
    assert len(sig["hmac_sha256"]) == 64 and len(sig["key_id"]) == 16
    assert runjson.signature_status(data)[0] == "verified"
    key_file = Path(__import__("os").environ["VLLM_RUNBOOKS_SIGNING_KEY_FILE"])
    assert key_file.read_text().strip() not in (tmp_path / "run" / "run.json").read_text()  # the key never travels


def test_a_forger_who_recomputes_the_sha256_is_caught_by_the_hmac(tmp_path: Path) -> None:
    data = _signed_run(tmp_path / "run")
    data["runbooks"][0]["headline"] = {"verdict": "ready"}
    data["signature"]["sha256"] = runjson.run_json_digest(data)  # what anyone can recompute
    assert "HMAC" in (runjson.run_json_edited(data) or "")
    assert runjson.signature_status(data)[0] == "edited"


def test_stripping_the_hmac_then_running_one_more_runbook_does_not_launder_the_edit(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    data = _signed_run(run_dir)
    data["runbooks"][0]["headline"] = {"verdict": "ready"}
    data["signature"] = {"sha256": runjson.run_json_digest(data)}  # HMAC removed, sha256 redone
    (run_dir / "run.json").write_text(json.dumps(data))
    assert runjson.signature_status(data)[0] == "unsigned"
    after = _finish(run_dir, "06_change_record", "e2", {})
    assert "hmac_sha256" in after["signature"]  # signed again by the machine key …
    status, why = runjson.signature_status(after)
    assert status == "partly" and "not vouched for" in why  # … but it says what it could not vouch for


def test_a_key_others_can_read_or_a_key_in_the_run_directory_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_runbooks.execution import signing

    loose = tmp_path / "loose.key"
    loose.write_text("k" * 64)
    loose.chmod(0o644)
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(loose))
    key, why = signing.signing_key()
    assert key is None and "readable or writable by others" in why
    run_dir = tmp_path / "run"
    inside = run_dir / "signing.key"
    run_dir.mkdir()
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(inside))
    data = _finish(run_dir, "01_evidence", "e1", {})
    assert "hmac_sha256" not in data["signature"] and "inside the run directory" in data["signature"]["unkeyed"]
    assert not inside.exists()


def test_another_machines_key_is_unverifiable_not_edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_runbooks.execution import signing

    data = _signed_run(tmp_path / "run")
    monkeypatch.setenv(signing.KEY_ENV, "another-machine-key-" + "x" * 40)
    assert runjson.run_json_edited(data) is None
    status, why = runjson.signature_status(data)
    assert status == "unverifiable" and data["signature"]["key_id"] in why


def test_a_forged_run_without_notebooks_is_not_ready(tmp_path: Path) -> None:
    """Invented 04/05 results, no notebooks, manifest and sha256 recomputed: before, verdict=ready."""
    from run_factory import write_run
    from vllm_runbooks.change_record import build_record, to_markdown

    run_dir = tmp_path / "forged"
    entries = [
        {"name": n, "status": "ok", "headline": {"verdict": "pass", "figures": {}}}
        for n in ("evidence_capture", "compatibility_decision", "canary_validation", "prefix_cache_check", "load_check")
    ]
    files = {
        "canary/canary_report.json": {"schema": "canary_report", "verdict": "pass", "steps": []},
        "load/load_check.json": {"schema": "load_check_result", "stages": [{"stage": "ramp", "status": "pass"}]},
        "prefix_cache/check.json": {"schema": "prefix_cache_result", "verdict": "pass"},
    }
    write_run(run_dir, entries, files, notebooks=False, keyed=False, as_given=tuple(files))
    record = build_record(run_dir)
    assert record.verdict != "ready"
    assert record.machine_signature["status"] == "unsigned"
    assert {m.split(":")[0] for m in record.missing} >= {e["name"] for e in entries}
    assert not any(c.ticked for c in record.checklist if c.evidence and "load" in c.name)
    text = to_markdown(record)
    assert "Machine signature of run.json:** unsigned" in text and "It does not prove" in text


def test_a_file_of_another_kind_under_a_results_name_is_refused_not_read(tmp_path: Path) -> None:
    """The record reads each result through its class (``runs.load_results``): a prefix-cache
    result saved as the canary report, or a canary report of the wrong shape, proves nothing."""
    from result_factory import real_result
    from run_factory import write_run
    from vllm_runbooks.change_record import build_record
    from vllm_runbooks.change_record.sources import RunView

    entries = [{"name": "canary_validation", "status": "ok"}, {"name": "load_check", "status": "ok"}]
    files = {
        "canary/canary_report.json": real_result({"schema": "prefix_cache_result"}),
        "load/load_check.json": {"schema": "load_check_result", "stages": "ramp passed, trust me"},
    }
    write_run(tmp_path, entries, files, as_given=tuple(files))
    view = RunView.load(tmp_path)
    assert view.result("canary_validation") is None and view.result("load_check") is None
    assert "schema is 'prefix_cache_result', expected 'canary_report'" in view.unread("canary_validation")
    assert "LoadCheckResult.stages: expected a list, got a str" in view.unread("load_check")
    record = build_record(tmp_path)
    assert not record.verified
    reasons = {s.name: s.reason for s in record.unverified}
    assert "expected 'canary_report'" in reasons["model_load"] and "expected a list" in reasons["long_text"]


def test_an_unsigned_run_json_that_lists_nothing_gets_one_answer_everywhere(tmp_path: Path) -> None:
    """Issue 22: ``runs --verify`` called it edited while the record, the artefact reader and the
    runner did not. One answer (``runjson``'s docstring): unsigned, not edited, vouching for
    nothing — every file beside it is unlisted and its entries cite nothing."""
    from vllm_runbooks.change_record import build_record
    from vllm_runbooks.change_record.sources import RunView

    run_dir = tmp_path / "run"
    (run_dir / "canary").mkdir(parents=True)
    entry = {"name": "canary_validation", "status": "ok", "headline": {"verdict": "pass", "figures": {}}}
    data = {"schema": "run", "run_id": "run", "runbooks": [entry]}  # written by hand: no signature, no artefacts
    (run_dir / "run.json").write_text(json.dumps(data))
    report = run_dir / "canary" / "canary_report.json"
    report.write_text(json.dumps({"schema": "canary_report", "verdict": "pass", "steps": []}))
    assert runjson.run_json_edited(data) is None
    assert runjson.signature_status(data)[0] == "unsigned"
    check = runjson.check_run(run_dir, unlisted=True)
    assert check.state == "unsigned" and [(c.rel, c.status) for c in check.files] == [
        ("canary/canary_report.json", "unlisted")
    ]
    summary = summarise_run(run_dir, verify=True)
    assert summary.tampered == ["canary/canary_report.json (not in the manifest)"]
    assert summary.signature == "unsigned"
    with pytest.raises(runjson.ArtefactError, match="not in run.json's artefact manifest"):
        runjson.verify_artefact(run_dir, report)
    assert runjson.latest_artefact(run_dir, "canary/canary_report.json") is None  # unlisted: no attempt
    assert RunView.load(run_dir).unproven  # its entry cites nothing
    record = build_record(run_dir)
    assert record.machine_signature["status"] == "unsigned" and record.verdict != "ready"
    assert any(m.startswith("canary_validation") for m in record.missing)
