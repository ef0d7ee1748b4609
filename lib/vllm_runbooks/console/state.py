"""The step state machine: which steps can run, from what the incident's run.json records.

Pure logic (no widgets) so it is tested directly: a step can run only when its runbook is
installed, the previous installed step has a result with a verdict, and it has no result yet
(a cancelled or failed attempt can be run again; its notebook was kept under ``attempts/``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from .incident import StepRecord
from .plan import StepSpec


class StepState(enum.StrEnum):
    """Where one step stands."""

    UNAVAILABLE = "unavailable"  # the runbook template is not installed
    LOCKED = "locked"  # waiting for the previous step's result
    READY = "ready"
    RUNNING = "running"
    DONE = "done"  # ran to the end with a verdict
    FAILED = "failed"  # a cell raised; the notebook is kept; can be run again
    CANCELLED = "cancelled"  # stopped from the console; can be run again


def step_states(
    plan: Sequence[StepSpec], records: Mapping[str, StepRecord], running: str | None = None
) -> dict[str, tuple[StepState, str]]:
    """runbook → (state, reason shown beside the step)."""
    out: dict[str, tuple[StepState, str]] = {}
    previous: StepSpec | None = None
    for spec in plan:
        record = records.get(spec.runbook)
        if not spec.available:
            out[spec.runbook] = (StepState.UNAVAILABLE, f"runbook {spec.runbook} is not installed here yet")
            continue
        if running == spec.runbook:
            out[spec.runbook] = (StepState.RUNNING, "running")
        elif record is not None and record.status == "ok" and record.verdict is not None:
            out[spec.runbook] = (StepState.DONE, f"verdict: {record.verdict}")
        elif previous is not None and out[previous.runbook][0] != StepState.DONE:
            out[spec.runbook] = (StepState.LOCKED, f"waiting for a result of {previous.title}")
        elif running is not None:
            out[spec.runbook] = (StepState.LOCKED, "another step is running")
        elif record is not None and record.status == "cancelled":
            out[spec.runbook] = (StepState.CANCELLED, "cancelled; can be run again")
        elif record is not None:
            out[spec.runbook] = (StepState.FAILED, f"failed: {record.error or 'no verdict'}; can be run again")
        else:
            out[spec.runbook] = (StepState.READY, "ready")
        previous = spec
    return out
