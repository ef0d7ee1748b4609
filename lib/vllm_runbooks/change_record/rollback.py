"""Rollback conditions: when to undo the change, and whether the undo is clear.

Why its own concern: the conditions follow from the adopted path, the image change and the limits
runbooks 03, 04 and 05 used; the "rollback clear" checklist item needs the baseline's old driver
and image on record.
"""

from __future__ import annotations

from .compare import environment
from .model import NO_BASELINE, BaselineItem, ChecklistItem, RollbackCondition
from .options import RecordOptions
from .readings import LOAD_CHECK
from .sources import RunView


def rollback_conditions(
    run: RunView, base: RunView | None, path: str | None, steps: dict, opts: RecordOptions
) -> list[RollbackCondition]:
    """When to undo the change, derived from the path, the image change and the limits the runbooks used."""
    before = environment(base) if base is not None else {}
    after = environment(run)
    old_driver = before.get("driver") or "the driver recorded before the change"
    old_image = before.get("image_digest") or "the image digest recorded before the change"
    out: list[RollbackCondition] = []
    hours = opts.watch_hours
    if path == "upgrade_driver":
        out.append(
            RollbackCondition(
                "driver",
                f"the model fails to load or the startup failure returns on the upgraded node: reinstall {old_driver}",
                "adopted path upgrade_driver; runbook 02",
            )
        )
    elif path in ("self_built_older_cuda_image", "older_cuda_image", "forward_compatibility"):
        out.append(
            RollbackCondition(
                "image",
                f"the transitional image fails any canary step that passed: redeploy {old_image}",
                f"adopted path {path}",
            )
        )
    elif path and path.startswith("isolated_environment"):
        out.append(
            RollbackCondition(
                "node assignment",
                "the isolated environment fails the canary: return the workload to its previous nodes and labels",
                f"adopted path {path}",
            )
        )
    if after.get("image_digest") != before.get("image_digest"):
        new_image = after.get("image_digest") or "digest not recorded"
        out.append(
            RollbackCondition(
                "image",
                f"the new image ({new_image}) fails to start or its canary fails: redeploy {old_image}",
                "runbook 01 image digests",
            )
        )
    canary = run.result("canary_validation")
    threshold = canary.config.get("tool_accuracy_threshold") if canary is not None else None
    if threshold is not None:
        out.append(
            RollbackCondition(
                "image",
                f"tool-call schema accuracy below {threshold} in the scheduled canary",
                "runbook 03 tool_accuracy_threshold",
            )
        )
    load = run.entry(LOAD_CHECK)
    if load is not None:
        result = run.result(LOAD_CHECK)
        p = {**(result.config if result is not None else {}), **load.parameters}  # the limits 05 used
        conc = (result.knee_concurrency if result is not None else None) or p.get("max_concurrency")
        at = f" at concurrency {conc}" if conc else ""
        limits = {
            "slo_ttft_ms": f"p95 TTFT above {p.get('slo_ttft_ms')} ms{at}",
            "slo_tpot_ms": f"p95 time per output token above {p.get('slo_tpot_ms')} ms{at}",
            "max_error_rate": f"error rate above {p.get('max_error_rate')}{at}",
        }
        for key, text in limits.items():
            if p.get(key) is not None:
                out.append(
                    RollbackCondition(
                        "node assignment", f"{text}: take the node out of the pool", f"runbook 05 parameter {key}"
                    )
                )
    if not load:
        out.append(
            RollbackCondition(
                "node assignment",
                "no latency limit was checked (runbook 05 did not run): agree a p95 TTFT limit before widening",
                "missing runbook 05",
            )
        )
    comm = steps.get("multi_gpu")
    out.append(
        RollbackCondition(
            "driver",
            f"any NCCL / communication error class in the first {hours} hours "
            f"(canary multi-GPU step: {comm.status.value if comm is not None else 'not run'})",
            "runbook 02 log classes; parameter watch_hours",
        )
    )
    if run.verdict("prefix_cache_check") == "working":
        out.append(
            RollbackCondition(
                "image",
                "prefix-cache hits fall to zero for the shared prefix (runbook 04 no longer 'working')",
                "runbook 04 verdict",
            )
        )
    return out


def rollback_item(
    rollback: list[RollbackCondition], baseline: list[BaselineItem], base: RunView | None, words: dict
) -> ChecklistItem:
    """The 'rollback clear' checklist item: ticked only when the baseline holds the old driver and image."""
    text = words["checklist"]["rollback_clear"]
    have = {b.item: b for b in baseline if b.present}
    needed = [k for k in ("driver", "image", "rollback") if k not in have]
    if base is not None and not needed and rollback:
        ev = [c for k in ("driver", "image") for c in have[k].evidence]
        return ChecklistItem(
            "rollback_clear", text, True, f"{len(rollback)} conditions; previous driver and image on record", ev
        )
    why = NO_BASELINE if base is None else f"missing from the baseline: {', '.join(needed)}"
    return ChecklistItem("rollback_clear", text, False, why)
