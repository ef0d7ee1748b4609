"""Runbook 02's stage: evidence + parameters → log diagnosis → compatibility report, saved and read back."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from vllm_runbooks.compat.stage import CompatResult, Config, decide_gathered, gather, run
from vllm_runbooks.execution.runjson import ArtefactError
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.runs import load_result

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
    gathered = gather(Config(evidence_dir=str(_evidence(tmp_path))))
    assert gathered.inputs.driver_version == "575.57.08"
    assert gathered.inputs.image_cuda_version == "13.0.1"
    assert gathered.log_paths and gathered.log_paths[0].endswith("evidence/logs/vllm.log")
    result = decide_gathered(gathered, today=TODAY)
    assert result.verdict == "driver_too_old"
    assert result.logs.label == "driver_too_old"
    # The log's "found version 12090" agrees with the verdict: no contradiction.
    assert result.report.decision.contradictions == []
    head = result.headline()
    assert head.runbook == "compatibility_decision" and head.figures["log_label"] == "driver_too_old"


def test_parameters_override_evidence_and_say_so(tmp_path: Path) -> None:
    gathered = gather(Config(evidence_dir=str(_evidence(tmp_path)), driver_version="580.95.05"))
    assert gathered.inputs.driver_version == "580.95.05"
    assert gathered.inputs.sources["driver_version"] == "parameter driver_version"
    result = decide_gathered(gathered, today=TODAY)
    assert result.verdict in {"compatible", "compatible_minor_version"}
    # The log still says the driver was too old: shown as a contradiction, not hidden.
    assert result.report.decision.contradictions


def test_missing_evidence_and_no_driver_is_unknown(tmp_path: Path) -> None:
    gathered = gather(Config(evidence_dir=str(tmp_path / "nowhere"), image_cuda="13.0"))
    assert gathered.evidence_path is None and "no evidence" in gathered.evidence_note
    result = decide_gathered(gathered, today=TODAY)
    assert result.verdict == "unknown"
    assert "driver_version" in result.report.decision.missing


def test_unknown_override_is_refused() -> None:
    from vllm_runbooks.compat import CompatInputs, apply_overrides

    with pytest.raises(TypeError, match="unknown decision inputs"):
        apply_overrides(CompatInputs(), {"driver": "575"})


def test_result_is_saved_and_read_back_typed_and_a_changed_file_is_refused(tmp_path: Path) -> None:
    run_dir = _evidence(tmp_path)
    result = run(Config(run_dir=str(run_dir), today=TODAY.isoformat()))
    path = result.save(run_dir)
    assert path == run_dir / "compat" / "decision.json"
    back = load_result(run_dir, "compatibility_decision")
    assert isinstance(back, CompatResult) and back.verdict == "driver_too_old"
    assert back.report.decision.facts[0].source == result.report.decision.facts[0].source  # typed, not dicts
    assert back.headline() == result.headline() and back.logs.label == "driver_too_old"
    assert result.save(run_dir).name == "decision-2.json"  # never over an earlier file
    (run_dir / "evidence" / "evidence.json").write_text("{}")  # evidence refused: the decision says so
    assert "refused" in gather(Config(run_dir=str(run_dir))).evidence_note


def test_a_tampered_decision_is_refused_naming_it(tmp_path: Path) -> None:
    from vllm_runbooks.execution.runjson import record_run
    from vllm_runbooks.execution.runner import RunbookResult

    run_dir = _evidence(tmp_path)
    run(Config(run_dir=str(run_dir), today=TODAY.isoformat())).save(run_dir)
    record_run(run_dir, RunbookResult("compatibility_decision", "n", None, "ok", "a", "b", 0.1, {}))
    path = run_dir / "compat" / "decision.json"
    path.write_text(path.read_text().replace("driver_too_old", "compatible"))
    with pytest.raises(ArtefactError, match="decision.json"):
        load_result(run_dir, "compatibility_decision")


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
    assert result.headline["schema"] == "headline"  # the typed headline, copied by the runner
    assert load_result(tmp_path / "run", "compatibility_decision").verdict == "compatible_forward_compat"
