"""GPU health in the change record: the baseline's Xid history, pending remaps and PCIe links, and
whether runbook 01 after the change shows anything new against runbook 01 before it.

Why from the two runbook 01 captures and nothing else: "GPU health unchanged by the change" is a
comparison, and only the two evidence records were read the same way (``gpu_health`` and
``kernel_log`` collectors). The comparison is the canary's (``evidence.health_watch``): a new
Xid / SXid, a new pending remap or retirement, new uncorrected ECC errors, a narrower PCIe link or
a GPU that went away leave the item unticked, and so does anything either capture could not read.
"""

from __future__ import annotations

from typing import Any

from ..evidence.health_watch import compare_health, reading
from .cite import Cite
from .model import NO_BASELINE, ChecklistItem
from .sources import RunView


def xid_history(ev: Any) -> str | None:
    """The baseline's Xid / SXid events as one line (codes, GPUs, counts), or that there were none."""
    item = ev.items.get("kernel_log")
    if item is None or item.status not in ("ok", "partial"):
        return None
    events = item.value.get("events") or []
    window = item.value.get("lookback_h")
    where = f"{item.value.get('source') or 'kernel log'}" + (
        f", {window:g} h" if isinstance(window, int | float) else ""
    )
    if not events:
        return f"no Xid / SXid in the kernel log ({where})"
    shown = [
        f"{e.get('kind', 'xid').upper().replace('XID', 'Xid')} {e.get('code')} on "
        f"{'GPU ' + str(e['gpu_index']) if e.get('gpu_index') is not None else e.get('device')} ({e.get('count')}×)"
        for e in events[:8]
    ]
    more = f" and {len(events) - 8} more" if len(events) > 8 else ""
    return f"{'; '.join(shown)}{more} ({where})"


def pending_remaps(ev: Any) -> str | None:
    """Which GPUs had a row remap (or page retirement) pending before the change; None when no GPU says."""
    item = ev.items.get("gpu_health")
    if item is None or item.status not in ("ok", "partial"):
        return None
    gpus = reading({"gpu_health": item})["gpus"]
    told = [g for g in item.value.get("gpus") or [] if (g.get("remapped_rows") or {}).get("pending") in (True, False)]
    pending = [f"GPU {g['index']}" for g in gpus if g["remap_pending"] or g["retirement_pending"]]
    if pending:
        return f"pending on {', '.join(pending)} of {len(gpus)} GPU(s)"
    if not told:
        return None  # every GPU answered N/A (no row remapping on this model): not on record
    return f"none pending on {len(told)} GPU(s) that report row remapping"


def pcie_links(ev: Any) -> str | None:
    """The PCIe link width each GPU trained at before the change, grouped ('x16 on GPU 0-7')."""
    item = ev.items.get("gpu_health")
    if item is None or item.status not in ("ok", "partial"):
        return None
    by_width: dict[str, list[str]] = {}
    for g in item.value.get("gpus") or []:
        pcie = g.get("pcie") or {}
        cur, top = pcie.get("width_current"), pcie.get("width_max")
        if isinstance(cur, int):
            key = f"x{cur}" + (f" of x{top}" if isinstance(top, int) and top != cur else "")
            by_width.setdefault(key, []).append(str(g.get("index")))
    return "; ".join(f"{w} on GPU {', '.join(i)}" for w, i in by_width.items()) or None


#: baseline item → (evidence section, picker): the items of ``data/change_record.yaml``'s baseline
BASELINE_PICKS = {
    "xid_history": ("kernel_log", xid_history),
    "pending_remaps": ("gpu_health", pending_remaps),
    "pcie_links": ("gpu_health", pcie_links),
}


def _uuids(r: dict[str, Any]) -> set[str]:
    return {g["uuid"] for g in r["gpus"] if g.get("uuid")}


def gpu_health_unchanged(
    run: RunView, base: RunView | None, cite: Cite, cite_base: Cite | None, texts: dict
) -> ChecklistItem:
    """Ticked only when runbook 01 before and after both read GPU health and the kernel log, of the
    same GPUs, and the after shows nothing new."""
    name, text = "gpu_health_unchanged", texts["gpu_health_unchanged"]
    if base is None or cite_base is None:
        return ChecklistItem(name, text, False, f"{NO_BASELINE}: GPU health before the change is not on record")
    sides, files = [], []
    for label, view in (("the baseline", base), ("this run", run)):
        ev, why = view.evidence()
        if ev is None:
            return ChecklistItem(name, text, False, f"{label}: {why}")
        rel = view.result_file("evidence_capture")
        if rel is None or rel not in view.manifest:
            return ChecklistItem(name, text, False, f"{label}: runbook 01's evidence is not in its run.json manifest")
        files.append(rel)
        got = reading(ev.items)
        if not got["gpus"]:
            why = "; ".join(got["reasons"]) or "no GPU listed"
            return ChecklistItem(name, text, False, f"runbook 01 of {label} read no GPU health ({why})")
        sides.append(got)
    before, after = sides
    if _uuids(before) and _uuids(after) and not _uuids(before) & _uuids(after):
        return ChecklistItem(
            name, text, False, "the baseline's GPUs are not this run's (no GPU UUID in common): not the same node"
        )
    diff = compare_health(before, after)
    new = [
        f"{e['kind'].upper().replace('XID', 'Xid')} {e['code']} on "
        f"{'GPU ' + str(e['gpu_index']) if e.get('gpu_index') is not None else e.get('device')} ({e['new_count']}× new)"
        for e in diff["new_events"]
    ]
    bad = new + diff["new_memory"] + diff["lost"]
    if bad:
        return ChecklistItem(
            name, text, False, f"runbook 01 after the change shows what the baseline did not: {'; '.join(bad)}"
        )
    if not diff["comparable"]:
        return ChecklistItem(name, text, False, f"not compared in full: {'; '.join(diff['unread'])}")
    evidence = [
        cite_base("evidence_capture", files[0], "items.gpu_health, items.kernel_log", f"{len(before['gpus'])} GPU(s)"),
        cite("evidence_capture", files[1], "items.gpu_health, items.kernel_log", f"{len(after['gpus'])} GPU(s)"),
    ]
    same = (
        f"the same {len(after['gpus'])} GPU(s) by UUID"
        if _uuids(after) and _uuids(after) == _uuids(before)
        else f"{len(before['gpus'])} → {len(after['gpus'])} GPU(s)"
    )
    why = (
        f"runbook 01 before ({base.run_id}) and after: {same}; no new Xid / SXid, pending remap or retirement, "
        "uncorrected ECC error, narrower PCIe link or lost GPU"
    )
    return ChecklistItem(name, text, True, why, evidence)
