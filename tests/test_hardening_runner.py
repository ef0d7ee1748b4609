"""Issue 8: the runner refuses what it cannot run safely, before anything runs, and run.json
tells an interrupted or edited run from a finished one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_factory import make_template
from vllm_runbooks import redact
from vllm_runbooks.cli import main
from vllm_runbooks.execution import notebook_output, parameters, runjson, runner
from vllm_runbooks.execution import templates as templates_mod
from vllm_runbooks.execution.runs import list_runs, summarise_run

INJECTION = "x=1;__import__('os').system('touch {}');y"


@pytest.fixture()
def templates(tmp_path: Path) -> Path:
    folder = tmp_path / "templates"
    params = "run_dir = None\nsource = 'local'\nlog_paths = []\ncollector_timeout_s = 60\nflag = False\n"
    make_template(folder, "01_smoke.ipynb", ["print('ran')"], params)
    return folder


def test_parameter_name_that_is_code_is_refused_before_running(templates: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(runner.RunbookError, match=r"not a parameter name.*takes: collector_timeout_s, flag"):
        runner.run_runbook("smoke", {INJECTION.format(marker): 1}, tmp_path / "run", templates=templates)
    with pytest.raises(runner.RunbookError, match=r"unknown parameter 'nope'.*takes:"):
        runner.run_runbook("smoke", {"nope": 1}, tmp_path / "run2", templates=templates)
    assert not marker.exists()
    assert not (tmp_path / "run").exists() and not (tmp_path / "run2").exists()


def test_cli_refuses_injected_key_from_p_and_from_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    key = INJECTION.format(marker)
    assert main(["run", "evidence_capture", "-p", key, "1", "--run-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "not a parameter name" in err and "__import__" in err and "collector_timeout_s" in err
    params = tmp_path / "params.yaml"
    params.write_text(json.dumps({key: 1}), encoding="utf-8")
    assert main(["run", "evidence_capture", "-f", str(params), "--run-dir", str(tmp_path / "b")]) == 2
    assert not marker.exists() and not (tmp_path / "a" / "01_evidence_capture.ipynb").exists()


def test_bad_yaml_parameters_file_is_a_clear_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: [unclosed\n", encoding="utf-8")
    assert main(["run", "evidence_capture", "-f", str(bad), "--run-dir", str(tmp_path / "r")]) == 2
    assert "not valid YAML at line" in capsys.readouterr().err
    bad.write_bytes(b"source: \xff\xfe\n")
    assert main(["run", "evidence_capture", "-f", str(bad), "--run-dir", str(tmp_path / "r")]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_parameter_types_follow_the_declared_defaults() -> None:
    declared = templates_mod.parameter_defaults(templates_mod.resolve_runbook("compatibility_decision"))
    assert "log_paths" in declared and declared["log_paths"] == []
    checked = parameters.check_parameters("compatibility_decision", declared, {"log_paths": "/var/log/vllm.log"})
    assert checked["log_paths"] == ["/var/log/vllm.log"]
    with pytest.raises(runner.RunbookError, match="maintenance_window_available.*true or false"):
        parameters.check_parameters("x", declared, {"maintenance_window_available": "yes"})
    declared01 = templates_mod.parameter_defaults(templates_mod.resolve_runbook("evidence_capture"))
    for bad in (-5, 0, 10**9, float("nan"), "１２", True):
        with pytest.raises(runner.RunbookError, match="collector_timeout_s"):
            parameters.check_parameters("evidence_capture", declared01, {"collector_timeout_s": bad})
    assert parameters.check_parameters("e", declared01, {"collector_timeout_s": "30"}) == {"collector_timeout_s": 30}


def test_run_dir_that_cannot_hold_a_run_is_refused(templates: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for bad in (a_file, a_file / "below"):
        with pytest.raises(runner.RunbookError, match="not a directory"):
            runner.run_runbook("smoke", {}, bad, templates=templates)
    assert main(["run", "evidence_capture", "--run-dir", str(a_file / "x")]) == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_run_dir_is_refused(templates: Path, tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(runner.RunbookError, match="not writable"):
            runner.run_runbook("smoke", {}, ro, templates=templates)
    finally:
        ro.chmod(0o755)


def test_read_only_run_dir_probe_is_refused_when_writes_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "immutable"
    run_dir.mkdir()
    real_open = Path.open

    def refuse(self: Path, mode: str = "r", *a: object, **k: object):  # an immutable directory: EPERM
        if self.name.startswith(".write-test-"):
            raise PermissionError(1, "Operation not permitted")
        return real_open(self, mode, *a, **k)

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(runner.RunbookError, match="not writable.*Operation not permitted"):
        runner.check_run_dir(run_dir)


def test_endpoint_with_a_token_as_user_is_refused(templates: Path, tmp_path: Path) -> None:
    make_template(templates, "02_ep.ipynb", ["print(1)"], "run_dir = None\nendpoint = 'http://127.0.0.1:8000'\n")
    with pytest.raises(runner.RunbookError, match="credential"):
        runner.run_runbook("ep", {"endpoint": "http://tokenAsUser1234@node:8000"}, tmp_path / "r", templates=templates)


def test_a_real_path_with_key_equals_is_not_redacted_before_use(tmp_path: Path) -> None:
    bundle = tmp_path / "key=abc123" / "bundle"
    bundle.mkdir(parents=True)
    raw = {"source": str(bundle), "log_paths": [str(bundle)]}
    params = redact.redact_parameters(raw)
    assert params["source"] != str(bundle)  # the redactor alone would break the path
    parameters.keep_real_paths(raw, params)
    assert params == raw


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_killed_run_shows_interrupted_and_verify_flags_leftovers(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    nb = run_dir / "01_smoke.ipynb"
    nb.touch()
    runjson.record_running(run_dir, "smoke", nb, {}, "e1")
    data = runjson.load_run(run_dir)
    assert data["runbooks"][0]["status"] == "running" and data["status"] == "running"
    data["runbooks"][0]["pid"] = _dead_pid()  # the runner was SIGKILLed
    (run_dir / "run.json").write_text(json.dumps(data))
    nb.write_text('{"partial": true}')
    (run_dir / "stray.txt").write_text("left behind")
    summary = summarise_run(run_dir, verify=True)
    assert summary.status == "interrupted" and summary.verdicts == {"smoke": "interrupted"}
    assert "run.json (edited: its signature does not match)" in summary.tampered
    # the interrupted notebook was never a finished artefact: it is flagged as outside the manifest
    assert (
        "01_smoke.ipynb (not in the manifest)" in summary.tampered
        and "stray.txt (not in the manifest)" in summary.tampered
    )


def test_recorded_result_replaces_the_running_entry_and_is_signed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    nb = run_dir / "01_smoke.ipynb"
    nb.write_text("{}")
    runjson.record_running(run_dir, "smoke", nb, {}, "e1")
    result = runner.RunbookResult("smoke", str(nb), None, "ok", "t0", "t1", 1.0, {}, headline={"verdict": "pass"})
    runjson.record_run(run_dir, result, "e1")
    data = runjson.load_run(run_dir)
    assert [b["status"] for b in data["runbooks"]] == ["ok"] and data["status"] == "ok"
    assert summarise_run(run_dir, verify=True).tampered == []
    data["status"] = "failed"
    (run_dir / "run.json").write_text(json.dumps(data))
    assert summarise_run(run_dir, verify=True).tampered == ["run.json (edited: its signature does not match)"]


def test_runs_and_compare_survive_non_object_run_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contents = (
        ("a", "[1, 2]"),
        ("b", '{"runbooks": [3, {"name": "x", "headline": "no"}]}'),
        ("c", "[" * 100_000 + "]" * 100_000),
    )
    for name, content in contents:
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(content)
    runs = list_runs(tmp_path)
    assert [r.status for r in runs] == ["unreadable", "unreadable", "unreadable"]
    assert "not an object" in (runs[0].reason or "") and "not an object" in (runs[1].reason or "")
    assert "nested too deeply" in (runs[2].reason or "")
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0


def test_run_json_with_non_object_entries_is_refused_before_running(templates: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text('{"runbooks": ["oops"]}')
    with pytest.raises(runner.RunbookError, match="not an object"):
        runner.run_runbook("smoke", {}, run_dir, templates=templates)


def test_scrubber_covers_every_output_mime_type() -> None:
    import plotly.io as pio

    hover = "line 3 · &#x27;api_key&#x27;: [&#x27;hoverKey01&#x27;] Bearer bearerTok02abcdef sk-plotlyKey03abcdefghij"
    fig = {"data": [{"type": "scatter", "x": [1], "y": [1], "text": [hover]}], "layout": {"title": {"text": hover}}}
    html_out = pio.to_html(fig, full_html=False, include_plotlyjs=True)  # an older notebook's figure HTML
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": "x",
                "outputs": [
                    {"output_type": "display_data", "data": {"application/vnd.plotly.v1+json": fig}, "metadata": {}},
                    {"output_type": "display_data", "data": {"text/html": html_out}, "metadata": {}},
                    {"output_type": "display_data", "data": {"text/markdown": "PGPASSWORD=mdSecret04"}},
                    {"output_type": "stream", "name": "stdout", "text": ["docker login -p streamPw05 r\n"]},
                ],
                "metadata": {"papermill": {"exception": "curl -u bob:cellMetaPw06 failed"}},
            }
        ],
        "metadata": {"papermill": {"parameters": {"launch_command": "sshpass -p nbMetaPw07 ssh n"}}},
    }
    clean = json.dumps(notebook_output.scrub_notebook_json(nb), ensure_ascii=False)
    for secret in (
        "hoverKey01",
        "bearerTok02abcdef",
        "sk-plotlyKey03",
        "mdSecret04",
        "streamPw05",
        "cellMetaPw06",
        "nbMetaPw07",
    ):
        assert secret in json.dumps(nb, ensure_ascii=False)
        assert secret not in clean, secret
    from plotly.offline import get_plotlyjs

    assert get_plotlyjs() in json.loads(clean)["cells"][0]["outputs"][1]["data"]["text/html"]


@pytest.mark.slow
def test_a_healthy_run_prints_no_kernel_noise(templates: Path, tmp_path: Path) -> None:
    env = {**os.environ, "VLLM_RUNBOOKS_TEMPLATES": str(templates)}
    proc = subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", "run", "smoke", "--run-dir", str(tmp_path / "r"), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "IPKernelApp" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr
    assert "smoke" in proc.stdout


def test_full_width_digits_are_not_numbers_on_the_command_line() -> None:
    assert parameters.coerce_cli_value("１３.０") == "１３.０"
    assert parameters.coerce_cli_value("13.0") == 13.0


def test_artefacts_are_written_whole_and_never_over_another(tmp_path: Path) -> None:
    from vllm_runbooks.artefacts import write_artefact

    first = write_artefact(tmp_path, "a/report.json", {"PGPASSWORD": "artefactPw1", "n": 1})
    second = write_artefact(tmp_path, "a/report.json", {"n": 2})
    assert first.name == "report.json" and second.name == "report-2.json"
    assert json.loads(first.read_text())["n"] == 1 and "artefactPw1" not in first.read_text()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["report-2.json", "report.json"]
    assert write_artefact(tmp_path, "t.txt", "name \udcff").read_text() == "name ?"
