"""Fabric: Fabric Manager state and version against the driver, NVSwitches, IMEX, per-GPU fabric state."""

from __future__ import annotations

import re
from typing import Any

from ..model import Item
from ..registry import Context, captured_here_or_in_bundle, register

_FILES = ("fabric-manager.txt", "fabric-manager-version.txt", "imex-status.txt", "nvswitch-devices.txt")


def parse_systemctl_show(text: str) -> dict[str, str]:
    """``Key=Value`` lines of ``systemctl show`` → dict (bounded to the first 64 lines)."""
    out = {}
    for line in text.splitlines()[:64]:
        k, eq, v = line.partition("=")
        if eq and re.fullmatch(r"[A-Za-z]+", k):
            out[k] = v.strip()
    return out


@register("fabric", "Fabric Manager, NVSwitch and IMEX", applies=captured_here_or_in_bundle(*_FILES), order=28)
def collect_fabric(ctx: Context) -> Item:
    """Whether the fabric a multi-GPU NVSwitch / MNNVL system needs is up and matches the driver."""
    raw = {n: ctx.read(n) for n in _FILES}
    text = {n: (c.data.decode("utf-8", "replace") if c.data is not None else None) for n, c in raw.items()}
    mgr = parse_systemctl_show(text["fabric-manager.txt"]) if text["fabric-manager.txt"] else None
    if mgr is not None and mgr.get("LoadState") == "not-found":
        mgr = None  # no Fabric Manager unit on this node
    version = None
    if text["fabric-manager-version.txt"]:
        m = re.search(r"(\d{3,}\.\d+(?:\.\d+)?)", text["fabric-manager-version.txt"])
        version = m.group(1) if m else None
    nvswitches = [x for x in (text["nvswitch-devices.txt"] or "").split() if x.startswith("nvidia-nvswitch")]
    nv = ctx.results.get("nvidia")
    gh = ctx.results.get("gpu_health")
    gpus = (gh.value.get("gpus") if gh else None) or []
    imex: dict[str, Any] | None = None
    if text["imex-status.txt"] is not None:
        imex = {"output": "\n".join(text["imex-status.txt"].splitlines()[:40]), "error": raw["imex-status.txt"].reason}
    val = {
        "manager": mgr,
        "manager_version": version,
        "driver_version": nv.value.get("driver_version") if nv else None,
        "nvswitches": nvswitches,
        "imex": imex,
        "gpu_fabric_states": {str(g.get("index")): g.get("fabric_state") for g in gpus},
    }
    arts = [a for n in _FILES for a in ctx.artefact(n)]
    not_there = [f"{n}: {c.reason}" for n, c in raw.items() if c.data is None and c.reason]
    return Item.ok(val, arts, "; ".join(not_there)[:600] or None)
