"""Incident console logic without a browser: the plan, the step state machine, the incident's
run directory, parameter widgets, and a cancellable background step."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psutil
import pytest

from notebook_factory import make_template
from vllm_runbooks.console import Incident, StepJob, StepState, load_plan, step_states
from vllm_runbooks.console.incident import StepRecord
from vllm_runbooks.console.plan import guidance_for
from vllm_runbooks.execution.templates import available_runbooks
from vllm_runbooks.resources import templates_dir


def _rec(runbook: str, status: str = "ok", verdict: str | None = "x") -> StepRecord:
    return StepRecord(runbook, status, verdict, {}, None, None, None, 1.0)


def test_plan_follows_the_installed_templates(tmp_path: Path) -> None:
    plan = load_plan()
    assert [s.runbook for s in plan][:4] == list(available_runbooks())[:4]
    assert len(plan) == 6  # 01 → 06 always shown; a missing template is shown unavailable
    for spec in plan:
        assert spec.available == (spec.runbook in available_runbooks())
    canary = next(s for s in plan if s.runbook == "canary_validation")
    assert [p.name for p in canary.primary][:3] == ["endpoint", "model", "api_key_env"]
    assert "run_dir" not in {p.name for p in canary.primary + canary.more}
    assert canary.from_incident == ["evidence_dir"]
    # before the merge of 05: only 01 and 02 installed → the rest unavailable, nothing crashes
    for name in ("01_evidence_capture.ipynb", "02_compatibility_decision.ipynb"):
        (tmp_path / name).write_bytes((templates_dir() / name).read_bytes())
    small = load_plan(templates=tmp_path)
    assert [s.available for s in small] == [True, True, False, False, False, False]


def test_next_step_enabled_only_after_a_verdict() -> None:
    plan = load_plan()
    names = [s.runbook for s in plan if s.available]
    states = step_states(plan, {})
    assert states[names[0]][0] == StepState.READY and states[names[1]][0] == StepState.LOCKED
    states = step_states(plan, {names[0]: _rec(names[0])})
    assert states[names[0]][0] == StepState.DONE and states[names[1]][0] == StepState.READY
    states = step_states(plan, {names[0]: _rec(names[0], "failed", None)})
    assert states[names[0]][0] == StepState.FAILED and states[names[1]][0] == StepState.LOCKED
    states = step_states(plan, {names[0]: _rec(names[0], "cancelled", None)})
    assert states[names[0]][0] == StepState.CANCELLED and states[names[1]][0] == StepState.LOCKED
    states = step_states(plan, {names[0]: _rec(names[0])}, running=names[1])
    assert states[names[1]][0] == StepState.RUNNING and states[names[2]][0] == StepState.LOCKED
    unavailable = [s.runbook for s in plan if not s.available]
    assert all(step_states(plan, {})[n][0] == StepState.UNAVAILABLE for n in unavailable)


def test_guidance_says_what_the_verdict_means() -> None:
    assert "Do not touch flags" in guidance_for("compatibility_decision", "driver_too_old")
    assert guidance_for("prefix_cache_check", "evicted")  # the runbook's fallback
    assert "No verdict" in guidance_for("canary_validation", None)


def test_incident_dirs_are_new_and_reopenable(tmp_path: Path) -> None:
    a, b = Incident.create(tmp_path), Incident.create(tmp_path)
    assert a.run_dir != b.run_dir and a.run_dir.is_dir() and "-incident-" in a.run_dir.name
    assert Incident.open(a.run_dir).records() == {}
    (b.run_dir / "run.json").write_text("{broken")
    with pytest.raises(ValueError, match="unreadable"):
        Incident.open(b.run_dir)
    with pytest.raises(FileNotFoundError):
        Incident.open(tmp_path / "nope")


def test_parameter_widgets_round_trip() -> None:
    from vllm_runbooks.console.ui import param_widget, widget_value
    from vllm_runbooks.execution.templates import Parameter

    for param, typed, expected in [
        (Parameter("flag", False, "bool"), True, True),
        (Parameter("n", 12, "int"), 3, 3),
        (Parameter("logs", [], "list"), "a.log, b.log", ["a.log", "b.log"]),
        (Parameter("model", None, "any"), "", None),
        (Parameter("deadline", None, "any"), "4", 4),
        (Parameter("endpoint", "http://x", "str"), "http://y:8000", "http://y:8000"),
    ]:
        widget = param_widget(param)
        widget.value = typed
        assert widget_value(param, widget) == expected, param.name


@pytest.mark.slow
def test_cancel_stops_the_step_and_its_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    templates = tmp_path / "templates"
    # the cell's wait is the long step being cancelled, not synchronisation
    make_template(
        templates, "01_long_step.ipynb", ["print('long step started', flush=True)\nimport time\ntime.sleep(600)"]
    )
    monkeypatch.setenv("VLLM_RUNBOOKS_TEMPLATES", str(templates))
    incident = Incident.create(tmp_path / "runs")
    started = threading.Event()
    job = StepJob(
        "long_step", {}, incident.run_dir, on_progress=lambda line: started.set() if "long step" in line else None
    )
    job.start()
    assert started.wait(120), f"no progress line; last: {job.last_line!r}"
    family = psutil.Process(job._proc.pid).children(recursive=True)  # the kernel among them
    # The console decides "cancelled" from the cancel itself, not from the exit code: once seen
    # (once in ~10 loaded runs) the killed runner reported 0, so the code is not asserted here.
    assert job.cancel() and job.wait(60) is not None and job.cancelled
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    incident.record_cancelled("long_step", "01_long_step.ipynb", {}, job.started_at, job.elapsed_s)
    (entry,) = json.loads((incident.run_dir / "run.json").read_text())["runbooks"]
    assert entry["status"] == "cancelled" and "attempts/01_long_step-cancelled-1.ipynb" in entry["notebook"]
    assert not (incident.run_dir / "01_long_step.ipynb").exists()
    assert incident.records()["long_step"].status == "cancelled"


def test_links_only_point_at_files_inside_the_incident(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.json is editable by anyone who can write the run directory: its paths never become a
    ``javascript:`` link (kernel access in JupyterLab) or a link out of the run directory."""
    incident = Incident.create(tmp_path / "runs")
    notebook = incident.run_dir / "01 evidence#capture.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    (tmp_path / "outside.ipynb").write_text("{}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for hostile in (
        "javascript:alert(document.domain)//x.ipynb",
        str(tmp_path / "outside.ipynb"),
        "../../outside.ipynb",
        "/etc/passwd",
        "JaVaScRiPt:alert(1)",
    ):
        assert incident.link(hostile) is None, hostile
    href = incident.link(str(notebook))
    assert href == "./runs/" + incident.run_dir.name + "/01%20evidence%23capture.ipynb"
    js_named = incident.run_dir / "javascript:alert(1).ipynb"  # a real file with a scheme-like name
    js_named.write_text("{}", encoding="utf-8")
    link = incident.link(str(js_named))
    assert link is not None and link.startswith("./") and ":" not in link


def test_a_value_shared_by_two_parameters_reaches_the_cli_without_yaml_aliases(tmp_path: Path) -> None:
    """The CLI refuses anchors and aliases (alias bombs); the console must not write any."""
    from vllm_runbooks.console.job import parameters_yaml
    from vllm_runbooks.execution.parameters import load_param_file

    shared = ["--tensor-parallel-size", "8"]
    text = parameters_yaml({"launch_command": shared, "launch_args": shared, "nested": {"a": shared}})
    assert "&" not in text and "*" not in text
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_param_file(path)["launch_args"] == shared
