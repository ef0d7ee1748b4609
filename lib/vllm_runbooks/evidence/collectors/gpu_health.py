"""Per-GPU health: NVML on this machine, else the bundle's NVML dump or ``nvidia-smi -q -x``."""

from __future__ import annotations

import json
from typing import Any

from .. import gpu_health as H
from .. import nvml_health
from ..model import OK, Item
from ..nvml import with_nvml
from ..parsers import ParseError
from ..registry import Context, register, run_bounded


def _nvml(timeout_s: float) -> Item:
    """NVML's health facts, bounded: a hung driver call becomes a reason, not a stuck capture."""

    def read() -> Item:
        return with_nvml(lambda n: Item.ok(nvml_health.read_all(n)))

    return run_bounded(read, timeout_s, "NVML health")


def _from_dump(text: str) -> dict[str, Any] | None:
    """A bundle's ``nvml-health.json`` (scripts/gpu_check.sh): NVML's reading made on the node."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("gpus"), list) else None


@register("gpu_health", "GPU health", order=25)
def collect_gpu_health(ctx: Context) -> Item:
    """ECC, retired pages, row remaps, PCIe, clock events, power, VBIOS, processes, memory; N/A kept."""
    notes: list[str] = []
    val: dict[str, Any] | None = None
    arts: list[str] = []
    if ctx.source.kind == "local":
        got = _nvml(min(15.0, ctx.collector_timeout_s / 2))
        if got.status == OK:
            val = got.value
        else:
            notes.append(f"NVML: {got.reason}")
    else:
        dump = ctx.text("nvml-health.json")
        if dump:
            val = _from_dump(dump)
            arts += ctx.artefact("nvml-health.json")
            if val is None:
                notes.append("nvml-health.json is not the NVML dump's shape: ignored")
    if val is None:
        xml = ctx.text("nvidia-smi-q.xml")
        arts += ctx.artefact("nvidia-smi-q.xml")
        if xml:
            try:
                val = {"gpus": H.parse_health_xml(xml), "source": "nvidia-smi-xml"}
            except ParseError as e:
                notes.append(f"nvidia-smi -q -x: {e}")
        else:
            notes.append(ctx.read("nvidia-smi-q.xml").reason or "no nvidia-smi -q -x")
    if val is None:
        return Item.unavailable("; ".join(notes) or "no GPU health facts", {"gpus": []}, arts)
    gpus = [H.finish(dict(g)) for g in val.get("gpus") or [] if isinstance(g, dict)][: H.MAX_GPUS]
    out = {
        "source": val.get("source"),
        "gpus": gpus,
        "vbios": H.vbios_summary(gpus),
        "lost": [g.get("index") for g in gpus if g.get("lost")],
    }
    reason = "; ".join(notes) or None
    if not gpus:
        return Item.partial(out, reason or "the GPU list is empty", arts)
    return Item.ok(out, arts, reason)
