"""Runbooks 01 → 02 on the constructed sample incidents, as `make demo` runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import INCIDENTS
from vllm_runbooks.execution.runjson import load_run
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.runs import load_result

PLOTLY = "application/vnd.plotly.v1+json"

pytestmark = pytest.mark.slow


def _suite(incident: str, run_dir: Path, **decision_params: object) -> dict:
    sections = {
        "evidence_capture": {"source": str(INCIDENTS / incident)},
        "compatibility_decision": {"today": "2026-11-29", **decision_params},
    }
    results = [run_runbook(name, params, run_dir) for name, params in sections.items()]
    assert [r.status for r in results] == ["ok", "ok"], [r.error for r in results]
    return {r.name: r.headline for r in results}


def _figures_render_offline(run_dir: Path) -> int:
    figures = 0
    for notebook in run_dir.glob("*.ipynb"):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                if PLOTLY in output.get("data", {}):
                    figures += 1
                    assert "text/html" in output["data"], f"{notebook.name}: figure without an HTML rendering"
    return figures


def test_cu130_image_on_r575_host(tmp_path: Path) -> None:
    heads = _suite("k3-cu130-on-r575", tmp_path, shared_nodes_can_stop=True, maintenance_window_available=True)
    assert heads["evidence_capture"]["figures"]["driver"] == "575.57.08"
    decision = heads["compatibility_decision"]
    assert decision["verdict"] == "driver_too_old"
    assert decision["figures"]["log_label"] == "driver_too_old"
    assert decision["figures"]["contradictions"] == 0
    assert decision["figures"]["remediation"] == "upgrade_driver"
    assert "new_feature_branch" in decision["figures"]["risks"]
    run = load_run(tmp_path)
    assert run["status"] == "ok" and len(run["runbooks"]) == 2
    assert _figures_render_offline(tmp_path) >= 3
    # Both results come back typed from what the run saved, checked against run.json's manifest.
    evidence = load_result(tmp_path, "evidence_capture")
    assert evidence.headline().to_dict() == heads["evidence_capture"]
    saved = load_result(tmp_path, "compatibility_decision")
    assert saved.headline().to_dict() == decision and saved.report.remediation.path == "upgrade_driver"


def test_cu130_on_r575_without_a_maintenance_window_goes_isolated_first(tmp_path: Path) -> None:
    heads = _suite("k3-cu130-on-r575", tmp_path, isolated_environment_available=True)
    # Kimi K3 has no cu129 image and the shared cluster cannot stop: move to an isolated environment.
    assert heads["compatibility_decision"]["figures"]["remediation"] == "isolated_environment_first"


def test_after_r580_upgrade_is_compatible(tmp_path: Path) -> None:
    heads = _suite("k3-after-r580-upgrade", tmp_path)
    decision = heads["compatibility_decision"]
    assert decision["verdict"] == "compatible"
    assert decision["figures"]["log_label"] == "healthy"
    assert decision["figures"]["remediation"] == "no_driver_change"
    assert "not the problem" in decision["figures"]["summary"]
