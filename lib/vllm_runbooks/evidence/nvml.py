"""NVML reader: driver, CUDA and per-GPU facts through ``pynvml``, bounded by a timeout.

Its own module because it is a reader of one library's API (and the biggest part of the GPU
facts), not a collector: the ``nvidia`` collector falls back from it to nvidia-smi output."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from . import parsers as P
from .model import Item
from .registry import run_bounded

ARCH_NAMES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
BRAND_NAMES = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NVIDIA vApps",
    8: "NVIDIA VPC",
    9: "NVIDIA VCS",
    10: "NVIDIA VWS",
    11: "NVIDIA Cloud Gaming",
    12: "Quadro RTX",
    13: "NVIDIA RTX",
    14: "NVIDIA",
    15: "GeForce RTX",
    16: "Titan RTX",
}
ANCESTOR = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def _s(v: Any) -> Any:
    """NVML returns bytes in older bindings, str in newer ones."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def nvml_facts(timeout_s: float = 15.0) -> Item:
    """Driver, CUDA and per-GPU facts through NVML (``pynvml``), bounded by a timeout."""
    return run_bounded(_nvml_facts, timeout_s, "NVML")


def _nvml_facts() -> Item:
    return with_nvml(_nvml_read)


def with_nvml(read: Callable[[Any], Item]) -> Item:
    """``read(pynvml)`` between nvmlInit and nvmlShutdown; a missing library or a failed init is a reason.

    The one NVML session of the evidence package (facts and health both open it this way).
    """
    try:
        n = importlib.import_module("pynvml")
    except ImportError as e:
        return Item.unavailable(f"pynvml (nvidia-ml-py) not installed: {e}")
    try:
        n.nvmlInit()
    except Exception as e:
        return Item.unavailable(f"NVML init failed: {type(e).__name__}: {e}")
    try:
        return read(n)
    finally:
        try:
            n.nvmlShutdown()
        except Exception:  # noqa: S110
            pass


def _try(fn: Callable[..., Any], *a: Any) -> Any:
    """One NVML query, None when this GPU or driver does not support it."""
    try:
        return fn(*a)
    except Exception:
        return None


def _nvml_read(n: Any) -> Item:
    drv = _s(n.nvmlSystemGetDriverVersion())
    cuda_int = _try(n.nvmlSystemGetCudaDriverVersion_v2) or _try(n.nvmlSystemGetCudaDriverVersion)
    count = n.nvmlDeviceGetCount()
    handles: list[Any] = []
    lost: dict[int, str] = {}
    for i in range(count):
        try:
            handles.append(n.nvmlDeviceGetHandleByIndex(i))
        except Exception as e:  # counted, then gone (GPU_IS_LOST): recorded, the others still read
            handles.append(None)
            lost[i] = f"{type(e).__name__}: {e}"[:200]
    max_links = getattr(n, "NVML_NVLINK_MAX_LINKS", 18)
    gpus = []
    for i, h in enumerate(handles):
        if h is None:  # never query a handle NVML did not give
            gpus.append({"index": i, "name": None, "pci_bus_id": None, "nvlink_active_links": None, "lost": lost[i]})
            continue
        cc = _try(n.nvmlDeviceGetCudaComputeCapability, h)
        mem = _try(n.nvmlDeviceGetMemoryInfo, h)
        brand = _try(n.nvmlDeviceGetBrand, h)
        arch = _try(n.nvmlDeviceGetArchitecture, h)
        pci = _try(n.nvmlDeviceGetPciInfo, h)
        mig = _try(n.nvmlDeviceGetMigMode, h)
        active = 0
        link_seen = False
        for link in range(max_links):
            try:
                state = n.nvmlDeviceGetNvLinkState(h, link)
            except Exception as e:
                # NOT_SUPPORTED on link 0 means no NVLink at all; other errors end the link list
                link_seen = link_seen or "not supported" in str(e).lower().replace("_", " ")
                break
            link_seen = True
            active += 1 if state else 0
        ecc = _try(
            n.nvmlDeviceGetTotalEccErrors,
            h,
            getattr(n, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1),
            getattr(n, "NVML_VOLATILE_ECC", 0),
        )
        pers = _try(n.nvmlDeviceGetPersistenceMode, h)
        brand_name = BRAND_NAMES.get(brand) if isinstance(brand, int) else None
        gpus.append(
            {
                "index": i,
                "name": _s(_try(n.nvmlDeviceGetName, h)),
                "uuid": _s(_try(n.nvmlDeviceGetUUID, h)),
                "pci_bus_id": _s(getattr(pci, "busId", None)) if pci is not None else None,
                "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                "brand": brand_name,
                "brand_class": P.brand_class(brand_name),
                "architecture": ARCH_NAMES.get(arch) if isinstance(arch, int) else None,
                "memory_total_mib": int(mem.total // 1048576) if mem is not None else None,
                "memory_used_mib": int(mem.used // 1048576) if mem is not None else None,
                "persistence_mode": None if pers is None else ("Enabled" if pers else "Disabled"),
                "mig_mode": None if not mig else ("Enabled" if mig[0] else "Disabled"),
                "ecc_errors_uncorrected": ecc,
                "nvlink_active_links": active if link_seen else None,
            }
        )

    topo = None
    if count > 1:
        labels = [f"GPU{i}" for i in range(count)]
        matrix = []
        nvl_idx = getattr(n, "NVML_P2P_CAPS_INDEX_NVLINK", 2)
        for i, hi in enumerate(handles):
            row = []
            for j, hj in enumerate(handles):
                if i == j:
                    row.append("X")
                    continue
                if hi is None or hj is None:
                    row.append("?")
                    continue
                p2p = _try(n.nvmlDeviceGetP2PStatus, hi, hj, nvl_idx)
                links = gpus[i]["nvlink_active_links"]
                if p2p == getattr(n, "NVML_P2P_STATUS_OK", 0) and links:
                    row.append(f"NV{links}")
                else:
                    row.append(ANCESTOR.get(_try(n.nvmlDeviceGetTopologyCommonAncestor, hi, hj), "?"))
            matrix.append(row)
        topo = {"gpus": labels, "matrix": matrix, "source": "nvml"}
    return Item.ok(
        {
            "driver_version": drv,
            "driver_branch": P.driver_branch(drv),
            "cuda_driver_version_int": cuda_int,
            "cuda_driver_version": P.cuda_int_to_str(cuda_int),
            "gpus": gpus,
            "topology": topo,
            "source": "nvml",
        }
    )
