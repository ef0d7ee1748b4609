"""GPU health read twice around traffic: did the canary (or the load) leave a new Xid or a pending remap?

Why a reading and a comparison rather than a second hardware verdict: a node can be ``degraded``
before anyone touches it (an old Xid, a link at x8), and that is runbook 01's finding. What the
canary must answer is narrower: did *its* traffic make something new happen on these GPUs. The
reading uses the same collectors as runbook 01 (``gpu_health``, ``kernel_log``) on this machine,
so the facts mean the same thing, but it writes no run directory: the step's details keep the
compact reading, and the verdict rests only on what both readings established.

The second reading looks further back than the first (its window covers the first one's), so
per (device, code) the Xid counts can only grow; a count that grew or a last time that moved is a
new event. A GPU matched by UUID (else index) whose pending remap, remap failure, pending page
retirement or volatile uncorrected ECC count appeared or grew is new memory trouble.
"""

from __future__ import annotations

import contextlib
import io
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from ..records import utc_now
from .model import OK, UNAVAILABLE

#: the collectors a reading runs, in their registry order (kernel_log maps bus ids by gpu_health)
WATCH_COLLECTORS = ("gpu_health", "kernel_log")
#: journalctl --since is in whole hours; one hour covers any canary that started in the last one
MIN_LOOKBACK_H = 1.0


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _memory(g: dict[str, Any]) -> dict[str, Any]:
    rows = g.get("remapped_rows") or {}
    pages = g.get("retired_pages") or {}
    ecc = g.get("ecc") or {}
    return {
        "remap_pending": rows.get("pending") is True,
        "remap_failure": rows.get("failure") is True,
        "retirement_pending": pages.get("pending") is True,
        "volatile_uncorrected": _int(ecc.get("volatile_uncorrected")),
    }


def read_health(lookback_h: float = MIN_LOOKBACK_H, timeout_s: float = 30.0) -> dict[str, Any]:
    """This machine's GPUs (memory-error flags) and Xid / SXid counts now; never raises.

    ``lookback_h`` is the kernel-log window. Nothing is kept on disk: the collectors' raw reads
    go to a temporary directory removed on return.
    """
    from ..probe import Options  # the collector stack only for a reading here, not to compare saved ones
    from .registry import Context, run_collectors
    from .sources import LocalSource

    started = time.monotonic()
    opts = Options(timeout_s=max(1.0, timeout_s / 2), kernel_log_hours=max(MIN_LOOKBACK_H, float(lookback_h)))
    with tempfile.TemporaryDirectory(prefix="vllm-runbooks-health-") as tmp:
        src = LocalSource(opts)
        try:
            ctx = Context(src, opts, Path(tmp), float(timeout_s))
            with contextlib.redirect_stdout(io.StringIO()):  # one step, one line: not a progress line per collector
                items = run_collectors(ctx, list(WATCH_COLLECTORS))
        finally:
            src.close()
    found = reading(items)
    found.update(monotonic=round(started, 3), lookback_h=opts.kernel_log_hours)
    return found


def reading(items: dict[str, Any]) -> dict[str, Any]:
    """The compact reading from evidence items (``gpu_health``, ``kernel_log``): this machine's, or a
    saved runbook 01 capture's, so the canary and the change record compare the same way."""
    gh, kl = items.get("gpu_health"), items.get("kernel_log")
    reasons = [
        f"{name}: {items[name].reason}"
        for name in WATCH_COLLECTORS
        if name in items and items[name].status != OK and items[name].reason
    ]
    gpus = (gh.value.get("gpus") or []) if gh is not None and gh.status != UNAVAILABLE else []
    events = (kl.value.get("events") or []) if kl is not None and kl.status != UNAVAILABLE else []
    return {
        "taken_at": utc_now(),
        "gpu_health": gh.status if gh is not None else UNAVAILABLE,
        "kernel_log": kl.status if kl is not None else UNAVAILABLE,
        "kernel_log_source": (kl.value.get("source") if kl is not None else None),
        "lookback_h": kl.value.get("lookback_h") if kl is not None else None,
        "reasons": reasons,
        "gpus": [
            {
                "index": g.get("index"),
                "uuid": g.get("uuid"),
                "pci_bus_id": g.get("pci_bus_id"),
                "lost": g.get("lost") or None,
                "pcie_width": _int((g.get("pcie") or {}).get("width_current")),
                **_memory(g),
            }
            for g in gpus
            if isinstance(g, dict)
        ],
        "events": [
            {k: e.get(k) for k in ("kind", "code", "device", "pci", "gpu_index", "count", "last_time", "text", "line")}
            for e in events
            if isinstance(e, dict)
        ],
    }


def lookback_after(before: dict[str, Any]) -> float:
    """The second reading's window: the first one's, plus the time since, in whole hours."""
    taken = before.get("monotonic")
    since_h = max(0.0, time.monotonic() - float(taken)) / 3600 if isinstance(taken, int | float) else 0.0
    return float(math.ceil(float(before.get("lookback_h") or MIN_LOOKBACK_H) + since_h))


def _gpu_key(g: dict[str, Any]) -> str:
    return f"uuid:{g['uuid']}" if g.get("uuid") else f"index:{g.get('index')}"


def _where(g: dict[str, Any]) -> str:
    return f"GPU {g.get('index')}" + (f" ({g['uuid']})" if g.get("uuid") else "")


def compare_health(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What is new in ``after``: Xid / SXid events, memory-error flags, lost GPUs; and what could not be compared.

    ``comparable`` is False when a side lacks the facts (no GPU list, no kernel log): the caller
    then says "not established", never "unchanged".
    """
    unread: list[str] = []
    for what, key in (("GPU health", "gpu_health"), ("kernel log", "kernel_log")):
        missing = [side for side, r in (("before", before), ("after", after)) if r.get(key) == UNAVAILABLE]
        if missing:
            unread.append(f"{what} not read {' and '.join(missing)} the traffic")
    old = {(e.get("device"), e.get("kind"), e.get("code")): e for e in before.get("events") or []}
    new_events = []
    for e in after.get("events") or []:
        prior = old.get((e.get("device"), e.get("kind"), e.get("code")))
        grew = prior is None or int(e.get("count") or 0) > int(prior.get("count") or 0)
        moved = prior is not None and e.get("last_time") and e.get("last_time") != prior.get("last_time")
        if grew or moved:
            seen = int(e.get("count") or 0) - (int(prior.get("count") or 0) if prior else 0)
            new_events.append({**e, "new_count": max(1, seen)})
    gpus_before = {_gpu_key(g): g for g in before.get("gpus") or []}
    new_memory: list[str] = []
    lost: list[str] = []
    for g in after.get("gpus") or []:
        prior = gpus_before.pop(_gpu_key(g), None)
        if g.get("lost"):
            lost.append(f"{_where(g)} lost: {g['lost']}")
        if prior is None:
            continue
        for flag, text in (
            ("remap_pending", "a row remap is now pending"),
            ("remap_failure", "a row remap failed"),
            ("retirement_pending", "a page retirement is now pending"),
        ):
            if g.get(flag) and not prior.get(flag):
                new_memory.append(f"{_where(g)}: {text}")
        wa, wb = g.get("pcie_width"), prior.get("pcie_width")
        if isinstance(wa, int) and isinstance(wb, int) and wa < wb:
            new_memory.append(f"{_where(g)}: PCIe link x{wb} → x{wa}")
        unc_a, unc_b = g.get("volatile_uncorrected"), prior.get("volatile_uncorrected")
        if isinstance(unc_a, int) and unc_a > (unc_b if isinstance(unc_b, int) else 0):
            new_memory.append(f"{_where(g)}: volatile uncorrected ECC errors {unc_b or 0} → {unc_a}")
    if before.get("gpus") and after.get("gpu_health") != UNAVAILABLE:
        lost += [f"{_where(g)} no longer answers" for g in gpus_before.values()]
    return {
        "comparable": not unread,
        "unread": unread,
        "new_events": new_events,
        "new_memory": new_memory,
        "lost": lost,
    }
