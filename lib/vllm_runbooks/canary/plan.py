"""The overall verdict and the expansion plan (isolated node → a few nodes → shared cluster).

Why explicit conditions: "the canary passed" is not a licence to roll out everywhere. Each stage
names what must be true before it starts, and which canary results block it, so the approver
sees what the canary proved and what it did not.
"""

from __future__ import annotations

from .model import ExpansionStage, Status, StepResult

SERVING_STEPS = ("model_load", "short_text", "tool_calling", "structured_agent")


def not_applicable(step: StepResult) -> bool:
    """A skip that proves nothing is missing (a text-only model refusing images, a single GPU)."""
    return step.status == Status.SKIP and bool(step.details.get("not_applicable"))


def overall_verdict(steps: list[StepResult]) -> str:
    """fail: any step failed; incomplete: a step skipped for a missing input; pass: all else."""
    if not steps:
        return "incomplete"
    if any(s.status == Status.FAIL for s in steps):
        return "fail"
    if any(s.status == Status.SKIP and not not_applicable(s) for s in steps):
        return "incomplete"
    return "pass"


def expansion_plan(steps: list[StepResult], verdict: str) -> list[ExpansionStage]:
    """Isolated node → a few nodes → shared cluster: what each stage needs and what blocks it now."""
    by = {s.step: s for s in steps}
    failed = [f"{s.title}: {s.reason}" for s in steps if s.status == Status.FAIL]
    missing = [f"{s.title}: skipped ({s.reason})" for s in steps if s.status == Status.SKIP and not not_applicable(s)]
    serving_ok = all(by.get(n) is not None and by[n].status == Status.PASS for n in SERVING_STEPS)
    serving_block = [f"{n} did not pass" for n in SERVING_STEPS if by.get(n) is None or by[n].status != Status.PASS]

    isolated = ExpansionStage(
        "1. isolated canary node",
        allowed=serving_ok,
        conditions=[
            "node drained from the shared pool (cordoned / excluded from scheduling)",
            "model load, short text, tool calling and structured output / agent round trip pass on it",
            "runbook 01 evidence and this executed notebook attached to the change",
        ],
        blocking=serving_block,
    )
    few = ExpansionStage(
        "2. a few nodes (staged, 2-3)",
        allowed=verdict == "pass",
        conditions=[
            "canary verdict 'pass' on the isolated node (every step pass or not applicable)",
            "GPU and container CUDA recognition proven from evidence (step 1 pass)",
            "multi-GPU communication proven where the model spans GPUs (step 7 pass)",
            "GPU health unchanged by the canary's traffic: no new Xid, pending remap or lost GPU (step 10 pass)",
            "runbook 03 re-run on each added node; load check (runbook 05) within its limits",
            "rollback ready: previous image / driver kept on the rest of the pool",
        ],
        blocking=failed + missing,
    )
    shared = ExpansionStage(
        "3. shared cluster",
        allowed=False,
        conditions=[
            "the staged nodes served real traffic for the agreed soak window without canary or load regressions",
            "change record (runbook 06) approved by the platform owner, with rollback conditions",
            "application team's scheduled canary (runbook 03 via papermill) green against the staged nodes",
        ],
        blocking=(failed + missing) or ["soak window and change-record approval happen outside this canary"],
    )
    return [isolated, few, shared]
