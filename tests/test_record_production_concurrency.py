"""Runbook 06's "production concurrency" item is ticked only on runbook 05's own field.

A ramp stage that passed is not enough: it passes when it stopped below max_concurrency at the SLO
or at saturation, or when the global caps cut it. The record reads ``target_concurrency_verified``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from run_factory import write_run
from vllm_runbooks.change_record import build_record

STAGES = [{"stage": "ramp", "status": "pass", "reason": "knee at concurrency 4 (reached 8)"}]


def _run(run_dir: Path, figures: dict) -> Path:
    """A run folder as the runner leaves it: runbook 05's notebook and result (with ``figures``'
    fields), run.json signed."""
    entry = {"name": "load_check", "status": "ok", "parameters": {"max_concurrency": 8}}
    result = {"schema": "load_check_result", "verdict": "pass", "stages": STAGES, **figures}
    write_run(run_dir, [entry], {"load/load_check.json": result})
    return run_dir


def _item(run_dir: Path):
    record = build_record(run_dir)
    return next(s for s in record.verified + record.unverified if s.name == "production_concurrency")


@pytest.mark.parametrize(
    "figures",
    [
        {},  # an older result without the field
        {"target_concurrency_verified": False, "target_concurrency_reason": "knee at concurrency 4 is below 8"},
    ],
)
def test_a_passed_ramp_below_the_target_is_not_production_concurrency(tmp_path: Path, figures: dict) -> None:
    item = _item(_run(tmp_path, figures))
    assert not item.verified and not item.evidence
    assert "did not verify the target concurrency" in item.reason
    if figures:
        assert "below 8" in item.reason


def test_the_field_ticks_it_with_evidence(tmp_path: Path) -> None:
    figures = {"target_concurrency_verified": True, "target_concurrency_reason": "knee at concurrency 8 ≥ target 8"}
    item = _item(_run(tmp_path, figures))
    assert item.verified and item.evidence and item.evidence[0].artefact == "load/load_check.json"
    assert "knee at concurrency 8" in item.reason
