"""Runbook 02's stage: evidence + parameters → log diagnosis → compatibility report."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from vllm_runbooks import decision
from vllm_runbooks.compat import OrgConstraints
from vllm_runbooks.runner import run_runbook

TODAY = dt.date(2026, 11, 29)
SEED_LOG = (
    "INFO 11-29 10:00:01 [__init__.py:239] Automatically detected platform cuda.\n"
    "ERROR 11-29 10:00:09 [core.py:700] RuntimeError: The NVIDIA driver on your system is too old "
    "(found version 12090). Please update your GPU driver by downloading and installing a new version\n"
    "RuntimeError: Engine core initialization failed. See root cause above.\n"
)


def _evidence(tmp_path: Path, driver: str = "575.57.08", log: str = SEED_LOG) -> Path:
    """A minimal evidence.json in runbook 01's contract (docs/EVIDENCE_SCHEMA.md)."""
    root = tmp_path / "run"
    (root / "evidence" / "logs").mkdir(parents=True)
    (root / "evidence" / "logs" / "vllm.log").write_text(log)
    items = {
        "nvidia": {
            "status": "ok",
            "reason": None,
            "value": {
                "driver_version": driver,
                "cuda_driver_version": "12.9",
                "gpus": [
                    {
                        "index": i,
                        "name": "NVIDIA H200",
                        "compute_capability": "9.0",
                        "brand": "NVIDIA",
                        "brand_class": "datacenter",
                    }
                    for i in range(8)
                ],
            },
        },
        "image": {
            "status": "ok",
            "reason": None,
            "value": {"ref": "vllm/vllm-openai:kimi-k3", "cuda_version": "13.0.1", "env": {}},
        },
        "launch": {
            "status": "ok",
            "reason": None,
            "value": {
                "argv": [
                    "vllm",
                    "serve",
                    "moonshotai/Kimi-K3",
                    "--tensor-parallel-size",
                    "8",
                    "--tool-call-parser",
                    "kimi_k3",
                    "--reasoning-parser",
                    "kimi_k3",
                    "--enable-auto-tool-choice",
                ],
                "env": {},
            },
        },
        "logs": {
            "status": "ok",
            "reason": None,
            "value": {"files": [{"name": "vllm.log", "stored_as": "logs/vllm.log", "lines": 3}]},
        },
    }
    (root / "evidence" / "evidence.json").write_text(
        json.dumps({"schema": "evidence", "schema_version": 1, "source": "test", "items": items})
    )
    return root


def test_evidence_and_its_logs_drive_the_decision(tmp_path: Path) -> None:
    gathered = decision.gather_inputs(_evidence(tmp_path))
    assert gathered.inputs.driver_version == "575.57.08"
    assert gathered.inputs.image_cuda_version == "13.0.1"
    assert gathered.log_paths and gathered.log_paths[0].endswith("evidence/logs/vllm.log")
    result = decision.decide_from(gathered, OrgConstraints(), today=TODAY)
    assert result.verdict == "driver_too_old"
    assert result.logs.label == "driver_too_old"
    # The log's "found version 12090" agrees with the verdict: no contradiction.
    assert result.report.decision.contradictions == []
    head = result.headline()
    assert head["runbook"] == "compatibility_decision" and head["figures"]["log_label"] == "driver_too_old"


def test_parameters_override_evidence_and_say_so(tmp_path: Path) -> None:
    gathered = decision.gather_inputs(_evidence(tmp_path), driver_version="580.95.05")
    assert gathered.inputs.driver_version == "580.95.05"
    assert gathered.inputs.sources["driver_version"] == "parameter driver_version"
    result = decision.decide_from(gathered, today=TODAY)
    assert result.verdict in {"compatible", "compatible_minor_version"}
    # The log still says the driver was too old: shown as a contradiction, not hidden.
    assert result.report.decision.contradictions


def test_missing_evidence_and_no_driver_is_unknown(tmp_path: Path) -> None:
    gathered = decision.gather_inputs(tmp_path / "nowhere", image_cuda="13.0")
    assert gathered.evidence_path is None and "no evidence" in gathered.evidence_note
    result = decision.decide_from(gathered, today=TODAY)
    assert result.verdict == "unknown"
    assert "driver_version" in result.report.decision.missing


def test_unknown_override_is_refused() -> None:
    with pytest.raises(TypeError, match="unknown decision inputs"):
        decision.gather_inputs(None, driver="575")


@pytest.mark.slow
def test_runbook02_from_parameters(tmp_path: Path) -> None:
    result = run_runbook(
        "compatibility_decision",
        {
            "image_cuda": "13.0",
            "driver_version": "570.195.03",
            "gpu_name": "NVIDIA H200",
            "compat_libs": True,
            "today": "2026-11-29",
        },
        tmp_path / "run",
    )
    assert result.status == "ok", result.error
    assert result.headline["verdict"] == "compatible_forward_compat"
