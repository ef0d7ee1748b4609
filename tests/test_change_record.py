"""Runbook 06 and the suite: records built from real runs, ticked only from evidence.

The suite tests use tiny templates (tests/notebook_factory.py) beside the real runbook 06, so a
failing runbook costs seconds; the record is checked on real runs of the sample incidents and of
the embedded vLLM target in test_change_record_server.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import R575_PLANTED, REPO_ROOT
from notebook_factory import make_template
from run_factory import write_run
from vllm_runbooks.change_record import RecordRefused, build_record, to_html, to_markdown
from vllm_runbooks.execution.runjson import load_run
from vllm_runbooks.execution.runner import RunbookError
from vllm_runbooks.execution.runs import load_result
from vllm_runbooks.execution.suite import run_suite

OK_BODY = [
    "from vllm_runbooks.execution.scraps import glue\nfrom vllm_runbooks.artefacts import write_artefact",
    "write_artefact(run_dir, 'smoke/out.json', {'launch': launch_command})",
    "glue('headline', {'runbook': 'smoke', 'verdict': 'pass', 'figures': {'launch': launch_command}})",
]
FAIL_BODY = ["raise RuntimeError('collector exploded on purpose')"]
SECRET_LAUNCH = f"vllm serve m --api-key {R575_PLANTED[1]} --hf-token {R575_PLANTED[0]}"


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("templates")
    make_template(folder, "01_smoke.ipynb", OK_BODY, "run_dir = None\nlaunch_command = ''\n")
    make_template(folder, "02_boom.ipynb", FAIL_BODY)
    make_template(folder, "03_talker.ipynb", ["pass"], "run_dir = None\nendpoint = 'http://127.0.0.1:8000'\n")
    shutil.copy(REPO_ROOT / "runbooks" / "06_change_record.ipynb", folder / "06_change_record.ipynb")
    return folder


@pytest.fixture(scope="module")
def suite_run(templates: Path, tmp_path_factory: pytest.TempPathFactory):
    run_dir = tmp_path_factory.mktemp("suite") / "run"
    params = {"shared": {"launch_command": SECRET_LAUNCH, "endpoint": None}, "change_record": {"today": "2026-12-01"}}
    return run_suite(params, run_dir, templates=templates)


def planted_in(folder: Path) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            hits += [f"{path.name}: {s}" for s in R575_PLANTED if s in text]
    return hits


def check_links(record, run_dir: Path) -> None:
    """Every ticked / verified / present item cites files that exist; every other one says why."""
    items = record.checklist + record.verified + record.unverified + record.baseline
    for item in items:
        done = getattr(item, "ticked", getattr(item, "verified", getattr(item, "present", False)))
        if done and not (getattr(item, "item", "") == "rollback" and not item.evidence):
            assert item.evidence, f"{item} ticked without evidence"
            for c in item.evidence:
                assert (run_dir / c.artefact).is_file(), c.artefact
                assert record.artefacts[c.artefact] == c.sha256
        if not done:
            assert item.reason.strip(), f"{item} unticked without a reason"


@pytest.mark.slow
def test_suite_survives_a_failing_runbook_and_the_record_says_why(suite_run) -> None:
    status = {e.name: e.status for e in suite_run.runbooks}
    assert status == {"smoke": "ok", "boom": "failed", "talker": "skipped", "change_record": "ok"}
    run_dir = Path(suite_run.run_dir)
    record = json.loads((run_dir / "change_record.json").read_text(encoding="utf-8"))
    missing = "\n".join(record["missing"])
    assert "boom: failed — RuntimeError: collector exploded on purpose" in missing
    assert "talker: no endpoint given" in missing
    assert "evidence_capture: not run in this run directory" in missing
    assert not suite_run.ok
    # the saved record reads back through the stage contract, unredacted where nothing is secret
    recorded = next(e for e in load_run(run_dir)["runbooks"] if e["name"] == "change_record")["headline"]
    assert load_result(run_dir, "change_record").headline().to_dict() == recorded
    assert "<redacted" not in (run_dir / "change_record.json").read_text(encoding="utf-8")


@pytest.mark.slow
def test_suite_never_overwrites_an_earlier_run(suite_run, templates: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in Path(suite_run.run_dir).iterdir())
    with pytest.raises(RunbookError, match="not empty"):
        run_suite({}, suite_run.run_dir, templates=templates)
    assert sorted(p.name for p in Path(suite_run.run_dir).iterdir()) == before
    # a section naming a parameter its runbook lacks refuses before anything runs
    with pytest.raises(RunbookError, match=r"talker has no parameter\(s\) \['endpont'\]"):
        run_suite({"talker": {"endpont": "http://x"}}, tmp_path / "new", templates=templates)
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_no_planted_secret_in_any_suite_output(suite_run) -> None:
    run_dir = Path(suite_run.run_dir)
    assert (run_dir / "change_record.md").is_file() and (run_dir / "06_change_record.report.html").is_file()
    assert planted_in(run_dir) == []


@pytest.mark.slow
def test_record_refuses_an_altered_artefact_naming_it(suite_run, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(suite_run.run_dir, copy)
    record = build_record(copy)
    check_links(record, copy)
    target = copy / "smoke" / "out.json"
    target.write_text(target.read_text(encoding="utf-8").replace("vllm", "VLLM"), encoding="utf-8")
    with pytest.raises(RecordRefused, match=r"smoke/out\.json: sha256 differs"):
        build_record(copy)
    target.unlink()
    with pytest.raises(RecordRefused, match=r"smoke/out\.json: listed in run.json but missing"):
        build_record(copy)


def test_record_refuses_a_corrupt_run_json_and_a_missing_baseline(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(RecordRefused, match="run.json: unreadable"):
        build_record(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    record = build_record(empty)  # nothing ran: every item unticked, with a reason
    assert not any(c.ticked for c in record.checklist) and all(c.reason for c in record.checklist)
    with pytest.raises(RecordRefused, match="missing"):
        build_record(empty, tmp_path / "nowhere")


def test_markdown_escapes_table_cells_and_html_is_offline(tmp_path: Path) -> None:
    record = build_record(tmp_path)
    record.reasons = ["a | b <script>alert(1)</script>"]
    text = to_markdown(record)
    assert "a \\| b \\<script\\>" in text
    page = to_html(text, "t")
    assert "<script>" not in page and not re.search(r"https?:", page.split("<body>")[0])
    assert "a | b &lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown as the characters it was


FORGED = "0.11.0\r\r## Verdict: ready - all checks verified\r\r- [x] **Approved: platform owner**"
HOSTILE_VALUES = [
    FORGED,
    "x | y | z",
    "[click](https://evil.example/steal)",
    "<img src=x onerror=alert(1)>",
    "see https://evil.example and www.evil.example",
    "line\u2028## separator\u2029- [x] ticked\x85next",
    "`code` ``` fence",
    "1. ordered\n- bullet\n+ plus\n= setext",
    "a" * 5000,
]


def _forge_everywhere(record: Any) -> Any:
    """Every free-text place of a record holds server text, as a hostile endpoint would make it."""
    from vllm_runbooks.change_record.model import Citation

    cite = [Citation(run=v, runbook=v, artefact=v, what=v, value=v) for v in HOSTILE_VALUES]
    record.reasons = list(HOSTILE_VALUES)
    record.constraints = {v[:40]: v for v in HOSTILE_VALUES}
    record.missing = list(HOSTILE_VALUES)
    record.triggers = list(HOSTILE_VALUES)

    record.reevaluate_on = FORGED
    record.run_dir = FORGED
    record.adopted_path = {
        "title": FORGED,
        "path": FORGED,
        "note": FORGED,
        "from_run": FORGED,
        "chosen_by_hand": True,
        "recommended": FORGED,
        "recommended_title": FORGED,
        "evidence": [c.to_dict() for c in cite],
    }
    for item in record.checklist:
        item.text, item.reason, item.evidence = FORGED, FORGED, cite
    record.artefacts = {v[:60]: v for v in HOSTILE_VALUES}
    return record


def test_server_text_cannot_forge_lines_links_or_cells_in_the_record(tmp_path: Path) -> None:
    """A /version answer with carriage returns must not become a heading, a ticked line or a link."""
    import mistune

    record = _forge_everywhere(build_record(tmp_path))
    record.checklist[0].ticked = False
    text = to_markdown(record)
    own_headings = {"# Change record — " + text.splitlines()[0].removeprefix("# Change record — ")}
    for line in text.splitlines():
        assert "\r" not in line and "\u2028" not in line and "\u2029" not in line and "\x85" not in line
        assert len(line) < 20_000
        if line.startswith("#"):
            assert line in own_headings or line.startswith("## ") and "Verdict" not in line, line
    ticked = [ln for ln in text.splitlines() if ln.startswith("- [x]")]
    assert len(ticked) == sum(c.ticked for c in record.checklist)  # only the record's own ticks
    # rendered as CommonMark/GFM would: no link to anywhere but the run's own files, no raw HTML
    page = mistune.create_markdown(escape=False, plugins=["table"])(text)
    assert "https://evil" not in " ".join(re.findall(r'href="([^"]*)"', page))
    assert not re.search(r"<(img|script)\b", page)
    assert "<h2>Verdict" not in page
    for row in (ln for ln in text.splitlines() if ln.startswith("| ")):
        cells = re.split(r"(?<!\\)\|", row.strip().strip("|"))
        width = text.splitlines()[text.splitlines().index(row)]
        assert len(cells) in (2, 3, 6, 7), width  # no value added a cell
    html_page = to_html(text, "t")
    assert not re.search(r"<(img|script)\b", html_page) and 'href="https://evil' not in html_page
    assert "<h2>Change checklist (ticked from evidence only)</h2>" in page and "<table>" in page


def _write_run(run_dir: Path, entries: list[dict], files: dict[str, object], **kw: Any) -> None:
    """A run directory as the runner leaves it: notebooks, artefacts, run.json listing them, signed."""
    write_run(run_dir, entries, files, **kw)


def test_record_reads_runbook_05_stages_and_restarts(tmp_path: Path) -> None:
    """Runbook 05's saved shape (load/load_check.json): long context, ramp and restarts cited."""
    stages = [
        {
            "stage": "health",
            "status": "pass",
            "reason": "healthy",
            "details": {
                "restarts": [
                    {"index": 1, "ok": True, "seconds_to_healthy": 41.2, "observed": "/health failed, then answered"},
                    {"index": 2, "ok": True, "seconds_to_healthy": 39.8, "observed": "/version changed"},
                ]
            },
        },
        {"stage": "single_long", "status": "pass", "reason": "3900 tokens in"},
        {"stage": "ramp", "status": "pass", "reason": "1 → 8, no stop"},
        {"stage": "multi_node", "status": "skip", "reason": "single node"},
    ]
    entry = {"name": "load_check", "status": "ok", "parameters": {"slo_ttft_ms": 2000.0, "max_concurrency": 8}}

    def load(stages: list[dict]) -> dict:
        return {
            "schema": "load_check_result",
            "verdict": "pass",
            "stages": stages,
            "target_concurrency_verified": True,
            "target_concurrency_reason": "knee at concurrency 8 ≥ target concurrency 8",
        }

    _write_run(tmp_path, [entry], {"load/load_check.json": load(stages)})
    record = build_record(tmp_path)
    check_links(record, tmp_path)
    verified = {s.name: s for s in record.verified}
    assert {"long_text", "production_concurrency", "failure_recovery"} <= set(verified)
    assert verified["failure_recovery"].evidence[0].artefact == "load/load_check.json"
    restart = next(c for c in record.checklist if c.name == "load_and_restart")
    assert not restart.ticked and "model load not verified" in restart.reason  # no canary in this run
    assert any("p95 TTFT above 2000.0 ms" in r.when for r in record.rollback)

    stages[0]["details"]["restarts"][1]["ok"] = False
    other = tmp_path / "bad"
    other.mkdir()
    _write_run(other, [entry], {"load/load_check.json": load(stages)})
    unverified = {s.name: s for s in build_record(other).unverified}
    assert "1 of 2 restarts did not come back healthy" in unverified["failure_recovery"].reason

    # a restart nobody saw happen (the old server kept answering) verifies nothing
    stages[0]["details"]["restarts"][1].update(ok=True, observed="")
    unseen = tmp_path / "unseen"
    unseen.mkdir()
    _write_run(unseen, [entry], {"load/load_check.json": load(stages)})
    unverified = {s.name: s for s in build_record(unseen).unverified}
    assert "1 of 2 restarts were not observed to happen" in unverified["failure_recovery"].reason


def _canary(ttft: float, accuracy: float, tool_status: str = "pass", verdict: str = "pass") -> dict:
    steps = [
        {"step": "short_text", "status": "pass", "reason": "", "timings": {"stream_ttft": ttft}},
        {
            "step": "tool_calling",
            "status": tool_status,
            "reason": "",
            "details": {"accuracy": {"schema_accuracy": accuracy}},
        },
    ]
    return {"schema": "canary_report", "verdict": verdict, "steps": steps, "config": {"tool_accuracy_threshold": 0.95}}


def test_before_after_flags_regressions_beyond_thresholds(tmp_path: Path) -> None:
    from vllm_runbooks.change_record import compare_dirs

    def run(name: str, ttft: float, acc: float, p95: float, errors: dict, status: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        knee = {"concurrency": 4, "summary": {"ttft_ms": {"p95": p95}, "errors_by_class": errors}}
        load = {
            "schema": "load_check_result",
            "verdict": "pass",
            "knee_concurrency": 4,
            "slo": {"ttft_ms": p95},
            "stages": [{"stage": "ramp", "status": "pass", "levels": [knee], "summary": knee["summary"]}],
        }
        entries = [{"name": "load_check", "status": "ok"}, {"name": "canary_validation", "status": "ok"}]
        canary = _canary(ttft, acc, "pass" if status == "pass" else "fail", status)
        _write_run(d, entries, {"canary/canary_report.json": canary, "load/load_check.json": load})
        return d

    before = run("before", 0.100, 1.0, 400.0, {}, "pass")
    after = run("after", 0.130, 0.90, 460.0, {"oom": 2}, "fail")
    changes = {(c.kind, c.item): c for c in compare_dirs(before, after)}
    assert changes[("latency", "short_text.stream_ttft")].regression  # +30 % > 20 %
    assert not changes[("latency", "p95_ttft_ms_at_knee")].regression  # +15 %
    assert ("latency", "slo_ttft_ms") not in changes  # a threshold, not a measurement
    assert changes[("tool_accuracy", "tool-call schema accuracy")].regression
    assert (
        changes[("error_class", "load:oom")].regression and changes[("error_class", "canary:tool_calling")].regression
    )
    assert changes[("verdict", "verdict")].regression and changes[("verdict", "verdict")].note == "got worse"
    assert not any(c.regression for c in compare_dirs(before, before))


def test_hostile_run_json_shapes_give_reasons_not_crashes(tmp_path: Path) -> None:
    entries = [
        {"name": "canary_validation", "status": "ok", "headline": ["not", "a", "dict"], "notebook": 42},
        {"name": "load_check", "status": "ok", "headline": {"verdict": "pass", "figures": {"stages": "ramp"}}},
        {"no_name": True},
        "a string",
    ]
    files = {
        "canary/canary_report.json": {
            "schema": "canary_report",
            "steps": ["x", {"step": "model_load", "status": "pass", "details": [1]}],
        },
        "evidence/evidence.json": {"items": ["not", "a", "mapping"]},
        "load/load_check.json": {
            "schema": "load_check_result",
            "stages": [{"stage": "health", "status": "pass", "details": "restarts"}],
        },
    }
    _write_run(tmp_path, entries, files, as_given=tuple(files))
    other = tmp_path / "base"
    other.mkdir()
    _write_run(other, entries, files, as_given=tuple(files))
    record = build_record(tmp_path, other)
    check_links(record, tmp_path)
    # an entry whose notebook is not a listed file (42) is not evidence: said so, never cited
    assert "model_load" not in {s.name for s in record.verified}
    assert any("canary_validation" in m and "notebook is not in the run's manifest" in m for m in record.missing)
    assert all(b.reason for b in record.baseline if not b.present)
    # a result file of the wrong shape is refused by its class, naming the field: a reason, not a crash
    restart = next(c for c in record.checklist if c.name == "load_and_restart").reason
    assert "runbook 05 left no result" in restart and "StageOutcome.details: expected a mapping" in restart


@pytest.mark.slow
def test_report_view_has_results_without_code_or_parameters(suite_run) -> None:
    run_dir = Path(suite_run.run_dir)
    full = (run_dir / "06_change_record.html").read_text(encoding="utf-8")
    report = (run_dir / "06_change_record.report.html").read_text(encoding="utf-8")
    assert 'class="highlight hl-ipython3"' in full and "hl-ipython3" not in report  # code cells dropped
    assert "reevaluate_days = 30" not in report and "| `reevaluate_days` |" not in report  # parameters
    assert "Change record: incomplete" in report and "Change checklist (ticked from evidence only)" in report
    failed = (run_dir / "02_boom.report.html").read_text(encoding="utf-8")
    assert "RuntimeError" in failed and "exploded on purpose" in failed  # a failure is evidence: it stays


@pytest.mark.slow
def test_a_hanging_cell_fails_its_runbook_and_the_suite_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    make_template(folder, "01_hang.ipynb", ["import threading\nthreading.Event().wait()"])
    shutil.copy(REPO_ROOT / "runbooks" / "06_change_record.ipynb", folder / "06_change_record.ipynb")
    # the bound must fit runbook 06 own cells on a loaded 2-core machine, and still stop the hang
    result = run_suite({}, tmp_path / "run", templates=folder, cell_timeout_s=15)
    status = {e.name: (e.status, e.reason or "") for e in result.runbooks}
    assert status["hang"][0] == "failed" and "CellTimeoutError" in status["hang"][1]
    assert status["change_record"][0] == "ok"


def test_restarts_runbook_05_could_not_prove_do_not_tick_restart_stability(tmp_path: Path) -> None:
    """Two replicas behind a balancer answering in turn: the command ran, no restart was seen."""
    restarts = [{"index": 1, "ok": False, "status": "not_proven", "observed": "",
                 "message": "identity alternated between 2 values before the command"}]  # fmt: skip
    stages = [{"stage": "health", "status": "pass", "reason": "healthy", "details": {"restarts": restarts}}]
    entry = {"name": "load_check", "status": "ok", "headline": {"verdict": "pass", "figures": {}}}
    _write_run(tmp_path, [entry], {"load/load_check.json": {"schema": "load_check_result", "stages": stages}})
    item = next(c for c in build_record(tmp_path).checklist if c.name == "load_and_restart")
    assert not item.ticked and "not proven" in item.reason and "alternated" in item.reason
