"""The verified and unverified scope of the change.

Why its own concern: the scope is what the change was shown to support; an item is verified only
with a citation of the result that proves it, and the items no runbook here can prove (production
concurrency unless 05 verified it, long-running stability, failure recovery) stay unverified with
the reason.
"""

from __future__ import annotations

from .cite import Cite
from .model import ScopeItem
from .readings import LOAD_CHECK, cite_load, load_restarts, load_stage, step_scope
from .sources import RunView


def scope_items(
    run: RunView, steps: dict, canary_file: str | None, cite: Cite, words: dict
) -> tuple[list[ScopeItem], list[ScopeItem]]:
    """(verified, unverified) scope items; a verified item without a citation is a bug and raises."""
    titles = words["scope"]
    items: list[ScopeItem] = []
    for key, step in (("model_load", "model_load"), ("short_text", "short_text")):
        ok, reason, ev = step_scope(run, steps, step, cite)
        items.append(ScopeItem(key, titles[key], ok, reason, ev))
    ok, reason = load_stage(run, "single_long")
    ev = cite_load(run, cite, "stage single_long", "pass") if ok else []
    items.append(ScopeItem("long_text", titles["long_text"], bool(ok and ev), reason, ev))
    ok, reason, ev = step_scope(run, steps, "image_input", cite)
    items.append(ScopeItem("image", titles["image"], ok, reason, ev))
    parts = [step_scope(run, steps, s, cite) for s in ("tool_calling", "structured_agent", "agent_retry")]
    ok = all(p[0] for p in parts)
    reason = (
        "; ".join(dict.fromkeys(p[1] for p in parts if not p[0])) or "tool calls, structured output and retry verified"
    )
    items.append(
        ScopeItem("agent_tools", titles["agent_tools"], ok, reason, [c for p in parts for c in p[2]] if ok else [])
    )
    ok, reason, ev = step_scope(run, steps, "multi_gpu", cite)
    items.append(ScopeItem("communication", titles["communication"], ok, reason, ev))

    always = words["unverified_always"]
    # Only runbook 05's own field says so: a passed ramp may have stopped below the target
    # (SLO, saturation) or been cut by the global caps.
    conc, reason = load_stage(run, "ramp")
    load = run.result(LOAD_CHECK)
    if conc is not None and load is not None:
        conc = load.target_concurrency_verified is True
        why = load.target_concurrency_reason
        if not conc:
            reason = "runbook 05 did not verify the target concurrency: " + (
                why or "its result records no target_concurrency_verified (rerun runbook 05)"
            )
        else:
            reason = f"runbook 05 verified the target concurrency: {why}"
    ev = cite_load(run, cite, "target_concurrency_verified", True) if conc else []
    items.append(
        ScopeItem(
            "production_concurrency",
            always["production_concurrency"],
            bool(conc and ev),
            reason,
            ev,
        )
    )
    items.append(
        ScopeItem(
            "long_running_stability",
            always["long_running_stability"],
            False,
            "no soak window is part of this procedure: watch the first hours (rollback conditions)",
        )
    )
    rest, reason = load_restarts(run)
    ev = cite_load(run, cite, "restart stability", reason) if rest else []
    items.append(
        ScopeItem(
            "failure_recovery",
            always["failure_recovery"],
            bool(rest and ev),
            "restart stability verified by runbook 05" if rest and ev else f"restart stability unverified: {reason}",
            ev,
        )
    )
    verified = [i for i in items if i.verified]
    unverified = [i for i in items if not i.verified]
    for item in verified:  # a verified item without a citation would be a claim by hand
        if not item.evidence:
            raise AssertionError(f"scope item {item.name} verified without evidence")
    return verified, unverified
