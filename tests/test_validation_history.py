"""Validation history (runbook 08): verdicts and figure trends over real runs, and the first
regression flagged.

The real test makes its runs itself: canary runs (runbook 03) against the embedded vLLM target,
and one against the fault-injecting double answering HTTP 500 (a test double, not a vLLM) — the
regression, which the history must flag at that run and no other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT
from fault_server import FaultServer
from vllm_runbooks.cli.exit_codes import VERDICT as EXIT_VERDICT
from vllm_runbooks.execution.runner import new_run_dir, run_runbook
from vllm_runbooks.history import Config, History, load_rules, run
from vllm_runbooks.history.detect import detect
from vllm_runbooks.history.read import Point


def _points(values: list[float | None], verdicts: list[str], figure: str = "schema_accuracy") -> list[Point]:
    return [
        Point(f"r{i}", f"/runs/r{i}", f"2026-11-0{i + 1}T00:00:00Z", "canary_validation", verdict, "ok",
              {} if value is None else {f"canary_validation.{figure}": value})
        for i, (value, verdict) in enumerate(zip(values, verdicts, strict=True))
    ]  # fmt: skip


def test_a_step_change_is_flagged_once_at_the_run_where_it_starts() -> None:
    rules = load_rules()
    points = _points([1.0, 0.98, 1.0, 0.7, 0.72, 0.7], ["pass"] * 6)
    (reg,) = detect(points, rules)
    assert reg.run_id == "r3" and reg.figure == "canary_validation.schema_accuracy" and reg.ongoing
    assert reg.baseline == pytest.approx(1.0) and reg.value == pytest.approx(0.7)


def test_noise_within_the_threshold_and_recovery() -> None:
    rules = load_rules()
    assert detect(_points([1.0, 0.97, 1.0, 0.96, 1.0], ["pass"] * 5), rules) == []
    regs = detect(_points([1.0, 1.0, 0.5, 1.0, 1.0], ["pass", "pass", "fail", "pass", "pass"]), rules)
    assert {(r.run_id, r.figure, r.ongoing) for r in regs} == {
        ("r2", "canary_validation.schema_accuracy", False),
        ("r2", "canary_validation.verdict", False),
    }


def test_lower_is_better_figures_and_unknown_runbooks(tmp_path: Path) -> None:
    """A runbook this library does not know still shows up: its figures are read generically."""
    runs = tmp_path / "runs"
    for i, (ttft, verdict) in enumerate([(0.2, "within_limits"), (0.21, "within_limits"), (0.5, "over_limits")]):
        d = runs / f"2026110{i}T000000Z-host-{i:06x}"
        d.mkdir(parents=True)
        entry = {
            "name": "future_load_check",
            "status": "ok",
            "started_at": f"2026-11-0{i + 1}T00:00:00Z",
            "headline": {"runbook": "future_load_check", "verdict": verdict, "figures": {"ttft_p95_s": ttft}},
        }
        (d / "run.json").write_text(json.dumps({"runbooks": [entry], "created_at": entry["started_at"]}))
    (runs / "20261109T000000Z-host-broken").mkdir()
    (runs / "20261109T000000Z-host-broken" / "run.json").write_text("{not json")
    history = run(Config(runs_dir=str(runs)))
    assert history.verdict == "regressed"
    assert {r["figure"] for r in history.regressions} == {"future_load_check.ttft_p95_s", "future_load_check.verdict"}
    assert history.unreadable and "run.json" in history.unreadable[0]["reason"]
    assert History.from_dict(json.loads(json.dumps(history.to_dict()))).verdict == "regressed"


def test_fewer_than_two_runs_is_empty(tmp_path: Path) -> None:
    assert run(Config(runs_dir=str(tmp_path / "nothing"))).verdict == "empty"


def _canary(runs: Path, endpoint: str, model: str | None) -> Any:
    params = {"endpoint": endpoint, "tool_calls": 2, "request_timeout_s": 60.0}
    if model:
        params["model"] = model
    result = run_runbook("canary_validation", params, new_run_dir(runs, label="sched"))
    assert result.status == "ok", result.error
    return result


@pytest.mark.slow
@pytest.mark.server
def test_history_of_real_runs_flags_the_regression(target: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    fault = FaultServer().start()
    try:
        made = [
            _canary(runs, target.base_url, target.model),
            _canary(runs, target.base_url, target.model),
            _canary(runs, fault.base_url("status500"), None),  # the regression
            _canary(runs, target.base_url, target.model),
            _canary(runs, target.base_url, target.model),
        ]
        verdicts = [r.headline["verdict"] for r in made]
        assert verdicts[2] == "fail" and all(v != "fail" for i, v in enumerate(verdicts) if i != 2), verdicts
        bad_run = Path(made[2].run_dir).name

        history_run = tmp_path / "history-1"
        result = run_runbook("validation_history", {"runs_dir": str(runs)}, history_run)
        assert result.status == "ok", result.error
        head = result.headline
        assert head["verdict"] == "recovered" and head["figures"]["runs"] == 5
        assert head["figures"]["first_regression_run"] == bad_run
        saved = History.load(history_run)
        flagged = {(r["run_id"], r["figure"]) for r in saved.regressions}
        assert flagged == {(bad_run, "canary_validation.verdict"), (bad_run, "canary_validation.counts.failed")}
        accuracy = [p["figures"].get("canary_validation.schema_accuracy") for p in saved.points]
        assert accuracy[2] is None and all(a == pytest.approx(1.0) for i, a in enumerate(accuracy) if i != 2)
        html = Path(result.html).read_text(encoding="utf-8")
        assert bad_run in html and "Validation history: recovered" in html

        # The schedule's contract: still failing at the newest run → exit 3 and a JUnit failure.
        _canary(runs, fault.base_url("status500"), None)
    finally:
        fault.close()
    report = tmp_path / "history.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", "run", "validation_history", "-r", "runs_dir", str(runs),
         "--run-dir", str(tmp_path / "history-2"), "--no-progress",
         "--fail-on-verdict", "regressed", "--junit-xml", str(report)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == EXIT_VERDICT, proc.stderr[-2000:]
    assert "regressed" in report.read_text(encoding="utf-8")
