"""Per-GPU health from ``nvidia-smi -q -x`` (the bundle's artefact, NVML's fallback) in NVML's shape.

Why its own module: the health fields are a second reading of the same XML the ``nvidia`` item
reads, with one vocabulary for both sources (:mod:`.nvml_health` is the NVML side), so the
verdict in :mod:`.hardware` never asks where a fact came from. ``"N/A"`` in the XML stays
``"N/A"``; a tag that is absent (an older driver) is ``None``.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any

import yaml

from .parsers import nvidia_smi_root

NA = "N/A"
_NA_TEXT = {"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error"}
#: The XML this parser reads is already capped by the source (16 MiB); elements beyond this are ignored.
MAX_GPUS = 64
MAX_PROCESSES = 256


@functools.cache
def health_facts() -> dict[str, Any]:
    """data/gpu_health.yaml: clock event reasons, memory / PCIe / fabric rules, vLLM's fit rule."""
    text = resources.files("vllm_runbooks").joinpath("data/gpu_health.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def decode_clock_events(bits: Any) -> dict[str, Any]:
    """NVML's clock event bitmask → active reason names and which of them are faults."""
    if not isinstance(bits, int) or isinstance(bits, bool):
        return {"bitmask": bits, "active": [], "faults": []}
    reasons = health_facts()["clock_event_reasons"]["reasons"]
    active = [r["name"] for r in reasons if bits & int(r["bit"])]
    faults = [r["name"] for r in reasons if bits & int(r["bit"]) and r["fault"]]
    return {"bitmask": bits, "active": active, "faults": faults}


def _val(node: ET.Element | None, path: str) -> str | None:
    """Text at ``path``; ``"N/A"`` for the forms nvidia-smi prints for unsupported; None when absent."""
    if node is None:
        return None
    el = node.find(path)
    if el is None:
        return None
    text = (el.text or "").strip()
    if text in _NA_TEXT:
        return NA
    return text or (NA if len(el) == 0 else None)


def _num(text: str | None) -> Any:
    """'16x' → 16, '66.92 W' → 66.92, '36 C' → 36, N/A stays N/A, garbage → None."""
    if text is None or text == NA:
        return text
    m = re.match(r"^\s*(-?\d+(?:\.\d+)?)", text, re.ASCII)
    if not m:
        return None
    v = float(m.group(1))
    return int(v) if v.is_integer() else v


def _yes(text: str | None) -> Any:
    if text is None or text == NA:
        return text
    return text.strip().lower() in {"yes", "true", "1", "enabled", "active"}


def _ecc_scope(g: ET.Element, scope: str) -> tuple[Any, Any]:
    """(corrected, uncorrected) totals of one ECC scope; N/A when the GPU reports none of them.

    Newer drivers print ``sram_correctable`` / ``dram_uncorrectable`` …; older ones
    ``single_bit/total`` and ``double_bit/total``; both are summed the same way.
    """
    node = g.find(f"ecc_errors/{scope}")
    if node is None:
        return None, None
    totals: dict[bool, int | None] = {False: None, True: None}  # uncorrected? -> sum
    seen_na = False
    for el in node:
        if len(el):
            sub = el.find("total")
            text, unc = (sub.text if sub is not None else None), el.tag == "double_bit"
            if el.tag not in ("single_bit", "double_bit"):
                continue
        elif "correct" in el.tag:
            text, unc = el.text, "uncorrect" in el.tag
        else:
            continue  # sram_threshold_exceeded and other flags
        text = (text or "").strip()
        if text.isascii() and text.isdigit():
            totals[unc] = (totals[unc] or 0) + int(text)
        else:
            seen_na = seen_na or text in _NA_TEXT
    corr, unc_total = totals[False], totals[True]
    return (NA if corr is None and seen_na else corr), (NA if unc_total is None and seen_na else unc_total)


def _clock_events(g: ET.Element) -> dict[str, Any]:
    node = g.find("clocks_event_reasons")
    prefix = "clocks_event_reason_"
    if node is None:
        node, prefix = g.find("clocks_throttle_reasons"), "clocks_throttle_reason_"
    if node is None:
        return {"bitmask": None, "active": [], "faults": []}
    faults_by_name = {r["name"]: r["fault"] for r in health_facts()["clock_event_reasons"]["reasons"]}
    active = [
        el.tag[len(prefix) :]
        for el in node
        if el.tag.startswith(prefix) and (el.text or "").strip().lower() == "active"
    ]
    return {"bitmask": None, "active": active, "faults": [a for a in active if faults_by_name.get(a)]}


def _processes(g: ET.Element) -> Any:
    node = g.find("processes")
    if node is None:
        return None
    if len(node) == 0 and (node.text or "").strip() in _NA_TEXT:
        return NA
    out = []
    for p in node.findall("process_info")[:MAX_PROCESSES]:
        out.append(
            {
                "pid": _num(_val(p, "pid")),
                "name": _val(p, "process_name"),
                "used_mib": _num(_val(p, "used_memory")),
            }
        )
    return out


def _gpu(g: ET.Element, index: int) -> dict[str, Any]:
    vol_c, vol_u = _ecc_scope(g, "volatile")
    agg_c, agg_u = _ecc_scope(g, "aggregate")
    remap = g.find("remapped_rows")
    remap_na = remap is not None and len(remap) == 0 and (remap.text or "").strip() in _NA_TEXT
    power = g.find("gpu_power_readings")
    if power is None:
        power = g.find("power_readings")
    limit = None
    for tag in ("current_power_limit", "enforced_power_limit", "power_limit"):
        limit = _num(_val(power, tag))
        if limit is not None:
            break
    pending = _val(g, "retired_pages/pending_retirement")
    if pending is None:
        pending = _val(g, "retired_pages/pending_blacklist")
    return {
        "index": index,
        "source": "nvidia-smi-xml",
        "lost": None,
        "pci_bus_id": _val(g, "pci/pci_bus_id") or g.get("id"),
        "uuid": _val(g, "uuid"),
        "name": _val(g, "product_name"),
        "memory_total_mib": _num(_val(g, "fb_memory_usage/total")),
        "memory_used_mib": _num(_val(g, "fb_memory_usage/used")),
        "memory_free_mib": _num(_val(g, "fb_memory_usage/free")),
        "ecc": {
            "mode": _val(g, "ecc_mode/current_ecc"),
            "volatile_corrected": vol_c,
            "volatile_uncorrected": vol_u,
            "aggregate_corrected": agg_c,
            "aggregate_uncorrected": agg_u,
        },
        "retired_pages": {
            "single_bit": _num(_val(g, "retired_pages/multiple_single_bit_retirement/retired_count")),
            "double_bit": _num(_val(g, "retired_pages/double_bit_retirement/retired_count")),
            "pending": _yes(pending),
        },
        "remapped_rows": {
            "correctable": NA if remap_na else _num(_val(g, "remapped_rows/remapped_row_corr")),
            "uncorrectable": NA if remap_na else _num(_val(g, "remapped_rows/remapped_row_unc")),
            "pending": NA if remap_na else _yes(_val(g, "remapped_rows/remapped_row_pending")),
            "failure": NA if remap_na else _yes(_val(g, "remapped_rows/remapped_row_failure")),
        },
        "pcie": {
            "gen_current": _num(_val(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
            "gen_max": _num(_val(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
            "width_current": _num(_val(g, "pci/pci_gpu_link_info/link_widths/current_link_width")),
            "width_max": _num(_val(g, "pci/pci_gpu_link_info/link_widths/max_link_width")),
            "replay_counter": _num(_val(g, "pci/replay_counter")),
        },
        "clock_events": _clock_events(g),
        "temperature_c": _num(_val(g, "temperature/gpu_temp")),
        "temperature_slowdown_c": _num(_val(g, "temperature/gpu_temp_slow_threshold")),
        "power_draw_w": _num(_val(power, "power_draw")),
        "power_limit_w": limit,
        "vbios": _val(g, "vbios_version"),
        "persistence_mode": _val(g, "persistence_mode"),
        "mig_mode": _val(g, "mig_mode/current_mig"),
        "processes": _processes(g),
        "fabric_state": _val(g, "fabric/state"),
        "fabric_status": _val(g, "fabric/status"),
    }


def parse_health_xml(text: str) -> list[dict[str, Any]]:
    """``nvidia-smi -q -x`` → one health record per GPU. ParseError on garbage or a cut file."""
    root = nvidia_smi_root(text)
    return [_gpu(g, i) for i, g in enumerate(root.findall("gpu")[:MAX_GPUS])]


def finish(gpu: dict[str, Any]) -> dict[str, Any]:
    """Decode NVML's clock bitmask (the XML already names the reasons) and list the N/A fields."""
    if "clock_events" not in gpu:
        gpu["clock_events"] = decode_clock_events(gpu.pop("clock_event_bits", None))
    na = []
    for key, value in gpu.items():
        if value == NA:
            na.append(key)
        elif isinstance(value, dict):
            na.extend(f"{key}.{k}" for k, v in value.items() if v == NA)
    gpu["not_reported"] = sorted(na)
    return gpu


def vbios_summary(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """VBIOS versions per GPU model: a node whose same-model GPUs run different VBIOS is not uniform."""
    by_model: dict[str, set[str]] = {}
    for g in gpus:
        v = g.get("vbios")
        if v and v != NA:
            by_model.setdefault(str(g.get("name") or "?"), set()).add(str(v))
    return {
        "versions": {m: sorted(v) for m, v in by_model.items()},
        "uniform": None if not by_model else all(len(v) == 1 for v in by_model.values()),
    }


def expected_gpu_count(flags: dict[str, Any]) -> tuple[int | None, str]:
    """TP × PP × DP-local (or DP) from the launch flags, the GPUs this node must show; and how."""

    def n(flag: str) -> int | None:
        v = flags.get(flag)
        try:
            return int(str(v)) if v not in (None, True, False) else None
        except ValueError:
            return None

    tp, pp = n("tensor-parallel-size"), n("pipeline-parallel-size")
    dp_local, dp = n("data-parallel-size-local"), n("data-parallel-size")
    if tp is None and pp is None and dp is None and dp_local is None:
        return None, "no parallelism flags in the launch command"
    dp_used = dp_local if dp_local is not None else dp
    count = (tp or 1) * (pp or 1) * (dp_used or 1)
    how = f"tensor {tp or 1} × pipeline {pp or 1} × data {'(local) ' if dp_local is not None else ''}{dp_used or 1}"
    return count, f"from the launch command: {how}"
