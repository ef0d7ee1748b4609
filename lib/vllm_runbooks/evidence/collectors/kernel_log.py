"""Xid / SXid history from the kernel log (bundle ``kernel-log.txt``), deduplicated per (GPU, code)."""

from __future__ import annotations

from ..kernel_log import parse_kernel_log
from ..model import Item
from ..registry import Context, captured_here_or_in_bundle, register


@register("kernel_log", "Kernel log: Xid / SXid", applies=captured_here_or_in_bundle("kernel-log.txt"), order=27)
def collect_kernel_log(ctx: Context) -> Item:
    """Every Xid / SXid event of the lookback window, with its GPU; a refused or missing log says why."""
    got = ctx.read("kernel-log.txt")
    arts = ctx.artefact("kernel-log.txt")
    if got.data is None:
        return Item.unavailable(got.reason or "no kernel log", {"events": []}, arts)
    gh = ctx.results.get("gpu_health")
    nv = ctx.results.get("nvidia")
    gpus = (gh.value.get("gpus") if gh else None) or (nv.value.get("gpus") if nv else None) or []
    parsed = parse_kernel_log(got.data.decode("utf-8", "replace"), gpus)
    head = parsed["header"] or {}
    val = {
        "events": parsed["events"],
        "xid_codes": sorted({e["code"] for e in parsed["events"] if e["kind"] == "xid"}),
        "source": head.get("source") or "kernel-log.txt",
        "lookback_h": head.get("lookback_h"),
        "scanned_lines": head.get("scanned_lines"),
        "lines_read": parsed["lines"],
        "stopped": head.get("stopped"),
        "unmapped": [e["device"] for e in parsed["events"] if e["kind"] == "xid" and e["gpu_index"] is None],
    }
    bits = [got.reason] if got.reason else []
    if parsed["cut"]:
        bits.append(f"{parsed['cut']} lines or events past the parser's bounds not read")
    if got.status == "partial" or parsed["cut"]:
        return Item.partial(val, "; ".join(b for b in bits if b) or "kernel log cut short", arts)
    return Item.ok(val, arts, "; ".join(bits) or None)
