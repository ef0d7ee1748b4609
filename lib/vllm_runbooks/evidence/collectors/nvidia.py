"""GPUs, driver and the driver's CUDA: NVML on a local machine, nvidia-smi output otherwise."""

from __future__ import annotations

from typing import Any

from .. import parsers as P
from ..model import OK, PARTIAL, Item
from ..nvml import nvml_facts
from ..registry import Context, grouped_reasons, register


def _nvidia_applies_nvml(ctx: Context) -> bool:
    """NVML answers only for the machine we run on, never for a bundle."""
    return ctx.source.kind == "local"


@register("nvidia", "GPUs, driver and CUDA", order=20)
def collect_nvidia(ctx: Context) -> Item:
    """Driver, driver CUDA and GPUs; NVML first locally, then nvidia-smi XML/text, gaps filled from the rest."""
    notes: list[str] = []
    val: dict[str, Any] | None = None
    if _nvidia_applies_nvml(ctx):
        nv = nvml_facts(min(15.0, ctx.collector_timeout_s / 2))
        if nv.status == OK:
            val = nv.value
        else:
            notes.append(f"NVML: {nv.reason}")
    raw = {
        n: ctx.read(n)
        for n in (
            "nvidia-smi-q.xml",
            "nvidia-smi.txt",
            "nvidia-smi-query.csv",
            "nvidia-smi-topo.txt",
            "nvidia-smi-nvlink.txt",
            "proc-driver-nvidia-version.txt",
        )
    }
    txt = {k: (v.data.decode("utf-8", "replace") if v.data else None) for k, v in raw.items()}
    if val is None and txt["nvidia-smi-q.xml"]:
        try:
            x = P.parse_nvidia_smi_xml(txt["nvidia-smi-q.xml"])
            val = {**x, "source": "nvidia-smi-xml"}
        except P.ParseError as e:
            notes.append(f"nvidia-smi -q -x: {e}")
    if val is None and txt["nvidia-smi.txt"]:
        try:
            val = {**P.parse_nvidia_smi_text(txt["nvidia-smi.txt"]), "source": "nvidia-smi-text"}
        except P.ParseError as e:
            notes.append(f"nvidia-smi: {e}")
    notes.extend(grouped_reasons({k: v for k, v in raw.items() if k != "nvidia-smi-nvlink.txt"}))
    kernel_module = txt["proc-driver-nvidia-version.txt"]
    arts = [a for n in raw for a in ctx.artefact(n)]
    if val is None:
        if kernel_module:
            return Item.partial(
                {"kernel_module": kernel_module.strip(), "gpus": []},
                "kernel module loaded but no GPU facts: " + "; ".join(notes),
                arts,
            )
        return Item.unavailable("; ".join(notes) or "no NVIDIA facts", {"gpus": []}, arts)

    # fill what the primary source lacks from the others
    drv = val.get("driver_version")
    val["driver_branch"] = P.driver_branch(drv)
    if val.get("cuda_driver_version_int") is None:
        val["cuda_driver_version_int"] = P.cuda_str_to_int(val.get("cuda_driver_version"))
    if val.get("cuda_driver_version") is None and txt["nvidia-smi.txt"]:
        try:
            t = P.parse_nvidia_smi_text(txt["nvidia-smi.txt"])
            val["cuda_driver_version"] = t["cuda_driver_version"]
            val["cuda_driver_version_int"] = P.cuda_str_to_int(t["cuda_driver_version"])
        except P.ParseError:
            pass
    val["kernel_module"] = kernel_module.strip() if kernel_module else None
    if kernel_module:
        try:
            km = P.parse_proc_driver_version(kernel_module)
            val["kernel_module_version"] = km["kernel_module_version"]
            if drv and km["kernel_module_version"] != drv:
                notes.append(f"kernel module {km['kernel_module_version']} differs from user-space driver {drv}")
        except P.ParseError as e:
            notes.append(str(e))
    gpus: list[dict[str, Any]] = val.get("gpus") or []
    if txt["nvidia-smi-query.csv"]:
        try:
            rows = P.parse_nvidia_smi_query_csv(txt["nvidia-smi-query.csv"])
            by_bus = {r.get("pci.bus_id", "").upper(): r for r in rows}
            for g in gpus:
                r = by_bus.get((g.get("pci_bus_id") or "").upper()) or (
                    rows[g["index"]] if g["index"] < len(rows) else None
                )
                if r and not g.get("compute_capability"):
                    g["compute_capability"] = P._na(r.get("compute_cap"))
        except P.ParseError as e:
            notes.append(f"nvidia-smi --query-gpu: {e}")
    if txt["nvidia-smi-topo.txt"]:
        try:
            topo = P.parse_topo(txt["nvidia-smi-topo.txt"])
            val["topology"] = {**topo, "source": "nvidia-smi topo -m"}
            for g, nl in zip(gpus, P.nvlink_counts_from_topo(topo), strict=False):
                if g.get("nvlink_active_links") is None and nl is not None:
                    g["nvlink_active_links"] = nl
        except P.ParseError as e:
            notes.append(f"topo -m: {e}")
    if txt["nvidia-smi-nvlink.txt"]:
        for idx, st in P.parse_nvlink_status(txt["nvidia-smi-nvlink.txt"]).items():
            if idx < len(gpus):
                gpus[idx]["nvlink_active_links"] = st["active"]
    val.setdefault("topology", None)
    missing = [k for k in ("driver_version", "cuda_driver_version") if not val.get(k)]
    if not gpus:
        missing.append("gpus")
    if any(g.get("compute_capability") is None for g in gpus):
        missing.append("compute_capability")
    status = OK if not missing else PARTIAL
    reason_bits = ([f"not established: {', '.join(missing)}"] if missing else []) + notes
    return Item(status, "; ".join(reason_bits) or None, val, arts)
