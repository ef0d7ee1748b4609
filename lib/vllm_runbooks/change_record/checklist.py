"""The change checklist, each item ticked only from a runbook result that proves it.

Why its own concern: the checklist is the part of a change that people tick from memory; here
each item states the result and citation that ticks it, or the reason it stays unticked.
"""

from __future__ import annotations

from .adopted import compat_file
from .cite import Cite
from .compare import error_classes, log_failures, log_label_lines
from .hardware import gpu_health_unchanged
from .model import NO_BASELINE, ChecklistItem, Citation, ScopeItem
from .readings import cite_load, load_restarts, load_stage, load_stages, step_scope
from .sources import RunView

#: Prefix-cache verdicts that explain the hit conditions (only "inconclusive" does not).
EXPLAINED = {"working", "disabled", "prefix_too_short", "prefix_mismatch", "evicted"}
#: Runbook 02 verdicts that are the startup failure itself ("unknown" proves nothing).
FAILURE_VERDICTS = {"driver_too_old", "arch_unsupported"}


def verdict_citation(view: RunView, name: str, c: Cite) -> list[Citation]:
    """A citation of a runbook's verdict in ``view``, or none when no listed file holds it."""
    rel = view.result_file(name)
    if not rel or rel not in view.manifest:
        return []
    return [c(name, rel, "verdict", view.verdict(name))]


def checklist_items(
    run: RunView,
    base: RunView | None,
    steps: dict,
    verified: list[ScopeItem],
    cite: Cite,
    cite_base: Cite | None,
    words: dict,
) -> list[ChecklistItem]:
    """Items 1-9 of the checklist (rollback is added by the assembly), each ticked only with evidence."""
    texts = words["checklist"]
    by = {s.name: s for s in verified}
    out: list[ChecklistItem] = []

    # 1. the startup failure no longer reproduces: before (baseline) failing, after starting
    after = run.entry("compatibility_decision")
    after_verdict = run.verdict("compatibility_decision")
    after_ok = after is not None and after.status == "ok" and str(after_verdict or "").startswith("compatible")
    loads = "model_load" in by
    if base is None:
        out.append(
            ChecklistItem(
                "startup_failure_gone",
                texts["startup_failure_gone"],
                False,
                f"{NO_BASELINE}: the failure before the change is not on record",
            )
        )
    else:
        before = base.entry("compatibility_decision")
        before_verdict = base.verdict("compatibility_decision")
        ran = before is not None and before.status == "ok"
        labels = sorted(log_failures(base)) if ran else []
        before_bad = ran and (before_verdict in FAILURE_VERDICTS or bool(labels))
        if before_bad and after_ok and loads:
            ev = verdict_citation(base, "compatibility_decision", cite_base) + verdict_citation(
                run, "compatibility_decision", cite
            )
            ev += by["model_load"].evidence
            rel = compat_file(base)
            if rel and cite_base is not None:  # the lines each failing label rests on, signature or learned
                ev += [
                    cite_base(
                        "compatibility_decision", rel, f"log line {ln['line']}: {label} ({ln['how']})", ln["text"]
                    )
                    for label, lines in sorted(log_label_lines(base).items())
                    for ln in lines[:2]
                ][:6]
            shown = f"{before_verdict}" + (f", failing log labels {', '.join(labels)}" if labels else "")
            out.append(
                ChecklistItem(
                    "startup_failure_gone",
                    texts["startup_failure_gone"],
                    True,
                    f"before: {shown}; after: compatible and the model loads",
                    ev,
                )
            )
        else:
            why = []
            if not before_bad:
                why.append(
                    "the baseline's runbook 02 does not show the failure "
                    f"(verdict {before_verdict if before else 'not run'}, no failing log label; "
                    f"it must be one of {', '.join(sorted(FAILURE_VERDICTS))} or name a failing log label)"
                )
            if not after_ok:
                why.append(f"runbook 02 after the change: {after_verdict if after else 'not run'}")
            if not loads:
                why.append("model load not verified after the change")
            out.append(ChecklistItem("startup_failure_gone", texts["startup_failure_gone"], False, "; ".join(why)))

    # 2. model load and restart
    rest, reason = load_restarts(run)
    if loads and rest:
        ev = by["model_load"].evidence + cite_load(run, cite, "restart stability", reason)
        out.append(
            ChecklistItem(
                "load_and_restart", texts["load_and_restart"], True, "model load (03) and restarts (05) pass", ev
            )
        )
    else:
        why = [] if loads else ["model load not verified (runbook 03)"]
        if not rest:
            why.append(f"restart stability unverified: {reason}")
        out.append(ChecklistItem("load_and_restart", texts["load_and_restart"], False, "; ".join(why)))

    # 3. prefix cache explained (runbook 04's verdict)
    entry = run.entry("prefix_cache_check")
    rel = run.result_file("prefix_cache_check")
    prefix_verdict = run.verdict("prefix_cache_check")
    if entry is not None and entry.status == "ok" and prefix_verdict in EXPLAINED and rel in run.manifest:
        ev = [cite("prefix_cache_check", rel, "verdict", prefix_verdict)]
        out.append(
            ChecklistItem(
                "prefix_cache_explained",
                texts["prefix_cache_explained"],
                True,
                f"runbook 04 verdict: {prefix_verdict}",
                ev,
            )
        )
    else:
        why = (
            "runbook 04 did not run"
            if entry is None
            else (
                f"runbook 04 failed: {entry.error}"
                if entry.status != "ok"
                else f"runbook 04 verdict {prefix_verdict!r} does not explain the hit conditions"
            )
        )
        out.append(ChecklistItem("prefix_cache_explained", texts["prefix_cache_explained"], False, why))

    # 4. agent tool calls, retries and structured output
    agent = by.get("agent_tools")
    if agent:
        out.append(ChecklistItem("agent_tools", texts["agent_tools"], True, agent.reason, agent.evidence))
    else:
        parts = [step_scope(run, steps, s, cite) for s in ("tool_calling", "structured_agent", "agent_retry")]
        out.append(
            ChecklistItem(
                "agent_tools", texts["agent_tools"], False, "; ".join(dict.fromkeys(p[1] for p in parts if not p[0]))
            )
        )

    # 5. multi-node communication: canary multi_gpu pass and no communication error class in the logs
    comm = by.get("communication")
    comm_errors = sorted(
        c for c in error_classes(run) if "nccl" in c.lower() or "communication" in c.lower() or c == "canary:multi_gpu"
    )
    multi_node = load_stages(run).get("multi_node")
    load_failed = multi_node is not None and multi_node.status == "fail"
    load_reason = load_stage(run, "multi_node")[1]
    if comm and not comm_errors and not load_failed:
        out.append(ChecklistItem("communication", texts["communication"], True, comm.reason, comm.evidence))
    else:
        why = []
        if not comm:
            why.append(step_scope(run, steps, "multi_gpu", cite)[1])
        if comm_errors:
            why.append(f"communication error classes in the logs: {', '.join(comm_errors)}")
        if load_failed:
            why.append(load_reason)
        out.append(ChecklistItem("communication", texts["communication"], False, "; ".join(why)))

    # 6-8. monitoring, log storage, access control
    ok, reason, ev = step_scope(run, steps, "monitoring", cite)
    out.append(ChecklistItem("monitoring", texts["monitoring"], ok, reason, ev))
    out.append(log_storage(run, base, cite, texts))
    ok, reason, ev = step_scope(run, steps, "access_control", cite)
    step = steps.get("access_control")
    warning = step.details.get("warning") if step is not None else None
    out.append(ChecklistItem("access_control", texts["access_control"], ok, str(warning or reason), ev))

    # 9. GPU health unchanged by the change: runbook 01 before and after, nothing new
    out.append(gpu_health_unchanged(run, base, cite, cite_base, texts))
    return out


def stored_logs(view: RunView) -> list[str]:
    """The server logs runbook 01's typed evidence says it stored, relative to the run directory,
    that the run's manifest lists."""
    evidence, _ = view.evidence()
    if evidence is None:
        return []
    out = []
    for path in evidence.log_paths():
        try:
            rel = path.resolve().relative_to(view.path).as_posix()
        except ValueError:
            continue  # stored outside this run directory: not this run's evidence
        if rel in view.manifest:
            out.append(rel)
    return sorted(set(out))


def log_storage(run: RunView, base: RunView | None, cite: Cite, texts: dict) -> ChecklistItem:
    """Ticked only for logs this run's runbook 01 stored that are not the baseline's logs again.

    The reason says what is shown: logs captured into this run's evidence, not that the
    production log store keeps them (no runbook reads that store).
    """
    logs = stored_logs(run)
    old = {base.manifest[rel] for rel in stored_logs(base)} if base is not None else set()
    fresh = [rel for rel in logs if run.manifest[rel] not in old]
    if fresh:
        ev = [cite("evidence_capture", rel, "server log stored (redacted)") for rel in fresh[:5]]
        against = (
            "none of them byte-identical to the baseline's logs"
            if base is not None
            else "no baseline given, so they are not shown to differ from the logs before the change"
        )
        why = (
            f"runbook 01 of this run captured {len(fresh)} server log file(s) into its evidence ({against}); "
            "where production keeps its logs is not checked by any runbook"
        )
        return ChecklistItem("log_storage", texts["log_storage"], True, why, ev)
    entry = run.entry("evidence_capture")
    if logs:
        why = (
            f"the {len(logs)} log file(s) runbook 01 stored are byte-identical to the baseline's: "
            "no log from after the change"
        )
    elif entry is None:
        why = "runbook 01 did not run"
    else:
        why = "runbook 01 stored no server log (no container, log path or bundle logs given)"
    return ChecklistItem("log_storage", texts["log_storage"], False, why)
