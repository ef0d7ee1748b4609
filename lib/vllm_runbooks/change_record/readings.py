"""What runbook 03 (canary steps) and runbook 05 (load stages) recorded, with citations.

Why one module: the scope, the checklist, the baseline and the rollback conditions all ask the
same questions of these results (did a step pass, did a stage pass, did restarts come back);
answering them in one place keeps the record's sections agreeing with each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .cite import Cite, short
from .model import Citation
from .sources import RunView

if TYPE_CHECKING:
    from ..canary.model import StepResult
    from ..load.result import StageOutcome

LOAD_CHECK = "load_check"


def canary_file(run: RunView) -> str | None:
    """The canary report runbook 03's result was read from, the fallback citation for any step."""
    return run.result_file("canary_validation")


def step_file(run: RunView, step: str) -> str | None:
    """The file that proves one canary step: its own step file, else the whole canary report."""
    report = run.result("canary_validation")
    own = run.artefact(report.step_file(step)) if report is not None else None
    return own or canary_file(run)


def step_scope(run: RunView, steps: dict[str, StepResult], name: str, cite: Cite) -> tuple[bool, str, list[Citation]]:
    """(verified, reason, citations) of one canary step."""
    entry = run.entry("canary_validation")
    if entry is None:
        return False, "runbook 03 (canary) did not run", []
    if not steps:
        return (
            False,
            f"runbook 03 left no canary report ({run.unread('canary_validation') or 'it recorded no step'})",
            [],
        )
    step = steps.get(name)
    if step is None:
        return False, f"canary step {name!r} did not run (not in the canary report)", []
    status, reason = step.status, step.reason
    rel = step_file(run, name)
    if status == "pass" and rel:
        return True, reason, [cite("canary_validation", rel, f"step {name}: pass", short(reason, 100))]
    if status == "skip":
        return False, f"canary step {name} skipped: {reason}", []
    return False, f"canary step {name} {status}: {reason}", []


def load_stages(run: RunView) -> dict[str, StageOutcome]:
    """Runbook 05's typed stages by name ({} when it left no result)."""
    result = run.result(LOAD_CHECK)
    return {s.stage: s for s in result.stages} if result is not None else {}


def load_stage(run: RunView, stage: str) -> tuple[bool | None, str]:
    """(passed, reason) of one runbook 05 stage; None when 05 did not run or did not record it."""
    entry = run.entry(LOAD_CHECK)
    if entry is None:
        return None, "runbook 05 (load check) did not run"
    if entry.status != "ok":
        return None, f"runbook 05 (load check) failed: {entry.error or 'no error recorded'}"
    if run.result(LOAD_CHECK) is None:
        return None, f"runbook 05 left no result: {run.unread(LOAD_CHECK)}"
    found = load_stages(run).get(stage)
    if found is None:
        return None, f"runbook 05 recorded no {stage!r} stage"
    status, reason = found.status.value, found.reason
    return status == "pass", f"runbook 05 stage {stage}: {status}" + (f" ({reason})" if reason else "")


def load_restarts(run: RunView) -> tuple[bool | None, str]:
    """Restart stability: runbook 05's health stage restarted the server N times, each healthy again."""
    ok, reason = load_stage(run, "health")
    if ok is None:
        return None, reason
    restarts = load_stages(run)["health"].details.get("restarts")
    if not restarts or not isinstance(restarts, list):
        return None, "runbook 05 ran without restarts (give restart_count with restart_command or restart_target)"
    not_proven = [r for r in restarts if isinstance(r, dict) and r.get("status") == "not_proven"]
    if not_proven:  # the command ran, but no restart was seen to happen (a balancer's replicas, say)
        why = str(not_proven[0].get("message") or "no lasting new server identity and no health drop")
        return None, f"runbook 05: {len(not_proven)} of {len(restarts)} restarts not proven ({why})"
    bad = [r for r in restarts if not (isinstance(r, dict) and r.get("ok"))]
    if bad:
        return False, f"runbook 05: {len(bad)} of {len(restarts)} restarts did not come back healthy"
    # A result saved before restarts had to be observed (health dropped or identity changed) may
    # count the old server answering as a restart: such a result proves nothing.
    unseen = [r for r in restarts if not r.get("observed")]
    if unseen:
        return None, f"runbook 05: {len(unseen)} of {len(restarts)} restarts were not observed to happen"
    times = [r.get("seconds_to_healthy") for r in restarts]
    return True, f"runbook 05: {len(restarts)} restarts, healthy again after {times} s"


def cite_load(run: RunView, cite: Cite, what: str, value: Any) -> list[Citation]:
    """A citation of the file runbook 05's result was read from; none when it left no result."""
    rel = run.result_file(LOAD_CHECK)
    return [cite(LOAD_CHECK, rel, what, value)] if rel else []
