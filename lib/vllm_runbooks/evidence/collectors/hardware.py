"""The hardware verdict (healthy | degraded | faulty | unknown) from the health, kernel-log and fabric items."""

from __future__ import annotations

from typing import Any

from ..gpu_health import expected_gpu_count
from ..hardware import Finding, hardware_verdict
from ..model import OK, PARTIAL, UNAVAILABLE, Item
from ..registry import Context, register


def expected(ctx: Context) -> tuple[int | None, str]:
    """The parameter when given, else TP × PP × DP of the recorded launch command."""
    if ctx.expected_gpu_count:
        return ctx.expected_gpu_count, "runbook 01 parameter expected_gpu_count"
    launch = ctx.results.get("launch")
    flags = (launch.value.get("flags") if launch and launch.status != UNAVAILABLE else None) or {}
    return expected_gpu_count(flags)


@register("hardware", "Hardware verdict", order=95)
def collect_hardware(ctx: Context) -> Item:
    """One verdict with every finding's source and action; what could not be read is a finding too."""
    gh = ctx.results.get("gpu_health") or Item.unavailable("gpu_health was not collected")
    kl = ctx.results.get("kernel_log")
    fab = ctx.results.get("fabric")
    gpus: list[dict[str, Any]] = gh.value.get("gpus") or [] if gh.status != UNAVAILABLE else []
    if not gpus:
        nv = ctx.results.get("nvidia")
        gpus = [dict(g) for g in (nv.value.get("gpus") if nv else None) or []]
    notes: list[Finding] = []
    if kl is None:
        notes.append(
            Finding(
                "kernel_log",
                "info",
                "Xid / SXid history not read: the bundle has no kernel-log.txt",
                "probe the node (vllm-runbooks probe) or add `journalctl -k` output as kernel-log.txt",
                "docs/BUNDLE.md",
            )
        )
    elif kl.status != OK:
        notes.append(
            Finding(
                "kernel_log",
                "info",
                f"Xid / SXid history {'incomplete' if kl.status == PARTIAL else 'not read'}: {kl.reason}",
                "run the probe as root (or a member of adm / systemd-journal) to read the kernel log",
                "docs/BUNDLE.md",
            )
        )
    if gh.status == UNAVAILABLE:
        notes.append(Finding("gpu_health", "info", f"GPU health not read: {gh.reason}", "see nvidia item", "-"))
    count, how = expected(ctx)
    val = hardware_verdict(
        gpus,
        (kl.value.get("events") or []) if kl is not None else [],
        vbios=gh.value.get("vbios") if gh.status != UNAVAILABLE else None,
        expected=count,
        expected_how=how,
        fabric=fab.value if fab is not None else {},
        notes=notes,
    )
    val["expected_gpus"] = count
    val["expected_from"] = how
    val["gpus_seen"] = len([g for g in gpus if not g.get("lost")])
    if val["verdict"] == "unknown":
        return Item.partial(val, "no GPU facts: the hardware cannot be judged")
    return Item.ok(val)
