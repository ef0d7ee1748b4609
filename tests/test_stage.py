"""The stage contract: typed headline, result protocol, one reader that refuses a changed file.

Why: runbook 06 and schedulers act on what earlier runbooks concluded; a headline with a verdict
outside the runbook's vocabulary, or a result read from a file edited after the run, would be
acted on silently.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_runbooks.canary.model import CanaryReport, Status, StepResult
from vllm_runbooks.execution.runjson import ArtefactError, record_run
from vllm_runbooks.execution.runner import RunbookResult
from vllm_runbooks.execution.runs import load_result
from vllm_runbooks.stage import Headline, StageResult, glue_result, result_class


def _report(verdict: str = "pass") -> CanaryReport:
    step = StepResult("model_load", "Model load", 2, Status.PASS, "models listed", duration_s=0.5)
    return CanaryReport("http://127.0.0.1:1", "tiny", "2026-01-01T00:00:00Z", 1.0, verdict, steps=[step])


def test_headline_is_typed_versioned_and_checks_the_vocabulary() -> None:
    head = _report().headline()
    assert isinstance(head, Headline)
    data = head.to_dict()
    assert data["schema"] == "headline" and data["schema_version"] == 1
    assert data["runbook"] == "canary_validation" and data["verdict"] == "pass"
    with pytest.raises(ValueError, match="not one of"):
        Headline.of("canary_validation", "passed", {}, ("pass", "fail"))
    assert Headline.coerce({"verdict": "x"}) is None  # no runbook: not passed off as a headline
    assert Headline.coerce({"runbook": "a", "verdict": "b"}).figures == {}


def test_result_follows_the_protocol_and_glues_the_headline_last(monkeypatch) -> None:
    report = _report()
    assert isinstance(report, StageResult)
    glued: list[str] = []
    monkeypatch.setattr("vllm_runbooks.execution.scraps.glue", lambda name, data: glued.append(name))
    data = glue_result(report)
    assert glued[-1] == "headline" and data["headline"]["schema"] == "headline"
    assert "canary_model_load" in glued


def test_save_never_overwrites_and_load_result_reads_the_newest(tmp_path: Path) -> None:
    first = _report("fail").save(tmp_path)
    second = _report("pass").save(tmp_path)
    assert first != second and first.exists() and second.name == "canary_report-2.json"
    assert load_result(tmp_path, "03_canary_validation").verdict == "pass"


def test_a_changed_artefact_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = _report("fail").save(tmp_path)
    record_run(
        tmp_path,
        RunbookResult("canary_validation", "x.ipynb", None, "ok", "t0", "t1", 1.0, {}, run_dir=str(tmp_path)),
    )
    assert load_result(tmp_path, "canary_validation").verdict == "fail"
    data = json.loads(path.read_text())
    data["verdict"] = "pass"  # someone "fixes" the record after the fact
    path.write_text(json.dumps(data))
    with pytest.raises(ArtefactError, match="canary_report.json"):
        load_result(tmp_path, "canary_validation")


def test_unreadable_or_foreign_artefacts_are_refused_by_name(tmp_path: Path) -> None:
    target = tmp_path / "canary" / "canary_report.json"
    target.parent.mkdir()
    target.write_text("{not json")
    with pytest.raises(ArtefactError, match="canary_report.json.*not readable JSON"):
        load_result(tmp_path, "canary_validation")
    target.write_text(json.dumps({"schema": "evidence"}))
    with pytest.raises(ArtefactError, match="schema is 'evidence'"):
        load_result(tmp_path, "canary_validation")
    with pytest.raises(FileNotFoundError):
        load_result(tmp_path / "nothing", "canary_validation")
    with pytest.raises(KeyError, match="no result registered"):
        result_class("no_such_runbook")


def _imported_after(statement: str) -> list[str]:
    heavy = (
        "papermill",
        "pandas",
        "plotly",
        "vllm_runbooks.execution.runner",
        "vllm_runbooks.probe",
        "vllm_runbooks.evidence.collectors",
    )
    code = f"import sys\n{statement}\nprint(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return [m for m in out.strip().split(",") if m]


def test_importing_the_contract_and_the_evidence_model_stays_light() -> None:
    assert _imported_after("import vllm_runbooks.evidence.model") == []
    assert _imported_after("import vllm_runbooks.stage") == []
    assert _imported_after("import vllm_runbooks.execution.runs") == []  # the runs reader needs no runner
    readers = "from vllm_runbooks.stage import RESULT_MODULES, result_class\n[result_class(n) for n in RESULT_MODULES]"
    heavy = _imported_after(readers)
    assert heavy == [], heavy  # reading any saved result needs no notebook, plotting or collector stack


def test_load_results_reads_every_stage_and_names_the_one_refused(tmp_path: Path) -> None:
    from vllm_runbooks.execution.runs import load_results

    _report("pass").save(tmp_path)
    for name in ("canary_validation", "prefix_cache_check", "external_thing"):
        record_run(tmp_path, RunbookResult(name, "x.ipynb", None, "ok", "t0", "t1", 1.0, {}, run_dir=str(tmp_path)))
    found = load_results(tmp_path)
    assert list(found.results) == ["canary_validation"] and found.results["canary_validation"].verdict == "pass"
    assert "no prefix_cache/check.json" in found.refused["prefix_cache_check"]  # not saved: said, not raised
    assert "external_thing" not in found.refused  # no registered result: nothing to read
    assert "canary_validation" in found._repr_html_()


def test_rebuild_reads_nested_records_enums_and_optionals_back_typed() -> None:
    from vllm_runbooks.canary.model import ExpansionStage
    from vllm_runbooks.records import rebuild

    report = _report("fail")
    report.plan = [ExpansionStage("isolated node", True, ["canary passes"])]
    again = rebuild(CanaryReport, json.loads(report.to_json()))
    assert again == report and again.steps[0].status is Status.PASS and isinstance(again.plan[0], ExpansionStage)
    with pytest.raises(ValueError, match="newer"):
        rebuild(CanaryReport, {**report.to_dict(), "schema_version": 99})


def test_load_results_names_the_file_and_sha256_each_result_was_read_from(tmp_path: Path) -> None:
    """What runbook 06 cites is the bytes it judged: the newest listed attempt, with its sha256."""
    from vllm_runbooks.execution.runjson import sha256_file
    from vllm_runbooks.execution.runs import load_results

    _report("fail").save(tmp_path)
    _report("pass").save(tmp_path)  # a rerun writes canary_report-2.json, never over the first
    record_run(
        tmp_path, RunbookResult("canary_validation", "x.ipynb", None, "ok", "t0", "t1", 1.0, {}, run_dir=str(tmp_path))
    )
    found = load_results(tmp_path)
    rel = "canary/canary_report-2.json"
    assert found.read_from["canary_validation"] == {"rel": rel, "sha256": sha256_file(tmp_path / rel)}
    assert found.results["canary_validation"].verdict == "pass"


def test_rebuild_refuses_a_value_of_the_wrong_shape_naming_the_field() -> None:
    """A typed read gives a record or a refusal, never a half-typed one a reader crashes on."""
    from vllm_runbooks.records import rebuild

    good = _report("pass").to_dict()
    for bad, said in (
        ({"steps": "all passed"}, "CanaryReport.steps: expected a list, got a str"),
        ({"steps": ["model_load"]}, "CanaryReport.steps: expected a StepResult record, got a str"),
        ({"steps": [{**good["steps"][0], "status": "passed-ish"}]}, "StepResult.status: 'passed-ish' is not one of"),
        ({"steps": [{**good["steps"][0], "details": [1, 2]}]}, "StepResult.details: expected a mapping, got a list"),
    ):
        with pytest.raises(TypeError, match=said):
            rebuild(CanaryReport, {**good, **bad})


def test_a_result_whose_verdict_is_outside_its_vocabulary_is_refused(tmp_path: Path) -> None:
    """Runbook 02's headline raises on a verdict outside its words: the file is refused, not read."""
    from result_factory import real_result
    from run_factory import write_run
    from vllm_runbooks.execution.runs import load_results

    decision = real_result({"schema": "compat_result", "report": {"decision": {"verdict": "driver_too_old"}}})
    decision["report"]["decision"]["verdict"] = "fine by me"
    write_run(tmp_path, [{"name": "compatibility_decision", "status": "ok"}], {"compat/decision.json": decision})
    found = load_results(tmp_path)
    assert "compatibility_decision" not in found.results
    assert "its headline does not read" in found.refused["compatibility_decision"]
