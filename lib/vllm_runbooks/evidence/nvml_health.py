"""Per-GPU health through NVML: ECC, retired pages, row remaps, PCIe link, clock events, power.

Standard library plus ``pynvml`` only, and no package imports, so ``scripts/gpu_check.sh`` can load
this file by path with a node's system ``python3`` (``python3 nvml_health.py --json``). The
evidence collector calls :func:`read_all` with the imported module. Each value is what NVML
returned, ``"N/A"`` where NVML says the GPU does not support the query (consumer cards, MIG, old
drivers), or ``None`` where the query failed otherwise; a GPU lost between two calls
(``NVML_ERROR_GPU_IS_LOST``) is recorded ``lost`` with the call that saw it, never raised.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

NA = "N/A"
NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED
GPU_IS_LOST = 15  # NVML_ERROR_GPU_IS_LOST
MIB = 1024 * 1024


class GpuLost(Exception):
    """NVML said the GPU is lost (fell off the bus) in the middle of reading it."""


def _text(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _kind(e: BaseException) -> str:
    """'na' for NOT_SUPPORTED, 'lost' for GPU_IS_LOST, 'error' otherwise (by code, then by text)."""
    code = getattr(e, "value", None)
    text = str(e).lower().replace("_", " ")
    if code == GPU_IS_LOST or "gpu is lost" in text:
        return "lost"
    if code == NOT_SUPPORTED or "not supported" in text:
        return "na"
    return "error"


class _Reader:
    """One GPU's queries: each answer, N/A or None, and the first 'GPU is lost' stops the rest."""

    def __init__(self, n: Any, handle: Any) -> None:
        self.n = n
        self.h = handle
        self.errors: dict[str, str] = {}

    def q(self, name: str, *args: Any) -> Any:
        fn: Callable[..., Any] | None = getattr(self.n, name, None)
        if fn is None:
            return None  # an older binding without this call
        try:
            return fn(self.h, *args)
        except Exception as e:
            kind = _kind(e)
            if kind == "lost":
                raise GpuLost(f"{name}: {e}") from e
            if kind == "na":
                return NA
            self.errors[name] = f"{type(e).__name__}: {e}"[:200]
            return None


def _mib(v: Any) -> Any:
    return int(v // MIB) if isinstance(v, int) else v


def _ecc(r: _Reader) -> dict[str, Any]:
    n = r.n
    corr = getattr(n, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    unc = getattr(n, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    vol = getattr(n, "NVML_VOLATILE_ECC", 0)
    agg = getattr(n, "NVML_AGGREGATE_ECC", 1)
    mode = r.q("nvmlDeviceGetEccMode")
    return {
        "mode": mode if mode in (NA, None) else ("Enabled" if mode[0] else "Disabled"),
        "volatile_corrected": r.q("nvmlDeviceGetTotalEccErrors", corr, vol),
        "volatile_uncorrected": r.q("nvmlDeviceGetTotalEccErrors", unc, vol),
        "aggregate_corrected": r.q("nvmlDeviceGetTotalEccErrors", corr, agg),
        "aggregate_uncorrected": r.q("nvmlDeviceGetTotalEccErrors", unc, agg),
    }


def _retired(r: _Reader) -> dict[str, Any]:
    n = r.n
    sbe = r.q("nvmlDeviceGetRetiredPages", getattr(n, "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0))
    dbe = r.q("nvmlDeviceGetRetiredPages", getattr(n, "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1))
    pending = r.q("nvmlDeviceGetRetiredPagesPendingStatus")
    return {
        "single_bit": len(sbe) if isinstance(sbe, (list, tuple)) else sbe,
        "double_bit": len(dbe) if isinstance(dbe, (list, tuple)) else dbe,
        "pending": pending if pending in (NA, None) else bool(pending),
    }


def _remapped(r: _Reader) -> dict[str, Any]:
    got = r.q("nvmlDeviceGetRemappedRows")
    if got in (NA, None):
        return {"correctable": got, "uncorrectable": got, "pending": got, "failure": got}
    corr, unc, pending, failure = got
    return {"correctable": corr, "uncorrectable": unc, "pending": bool(pending), "failure": bool(failure)}


def _processes(r: _Reader) -> Any:
    procs = r.q("nvmlDeviceGetComputeRunningProcesses")
    if procs in (NA, None):
        return procs
    out = []
    for p in list(procs)[:256]:
        pid = getattr(p, "pid", None)
        used = getattr(p, "usedGpuMemory", None)
        name = None
        get_name = getattr(r.n, "nvmlSystemGetProcessName", None)
        if get_name is not None and pid is not None:
            try:
                name = _text(get_name(pid))
            except Exception:
                name = None
        out.append({"pid": pid, "name": name, "used_mib": _mib(used) if isinstance(used, int) else NA})
    return out


def read_gpu(n: Any, handle: Any, index: int) -> dict[str, Any]:
    """Every health field of one GPU; ``lost`` set (and the rest left None) when it disappeared."""
    r = _Reader(n, handle)
    g: dict[str, Any] = {"index": index, "source": "nvml", "lost": None}
    try:
        pci = r.q("nvmlDeviceGetPciInfo")
        g["pci_bus_id"] = _text(getattr(pci, "busId", None)) if pci not in (NA, None) else None
        g["uuid"] = _text(r.q("nvmlDeviceGetUUID"))
        g["name"] = _text(r.q("nvmlDeviceGetName"))
        mem = r.q("nvmlDeviceGetMemoryInfo")
        ok_mem = mem not in (NA, None)
        g["memory_total_mib"] = _mib(mem.total) if ok_mem else mem
        g["memory_used_mib"] = _mib(mem.used) if ok_mem else mem
        g["memory_free_mib"] = _mib(mem.free) if ok_mem else mem
        g["ecc"] = _ecc(r)
        g["retired_pages"] = _retired(r)
        g["remapped_rows"] = _remapped(r)
        g["pcie"] = {
            "gen_current": r.q("nvmlDeviceGetCurrPcieLinkGeneration"),
            "gen_max": r.q("nvmlDeviceGetMaxPcieLinkGeneration"),
            "width_current": r.q("nvmlDeviceGetCurrPcieLinkWidth"),
            "width_max": r.q("nvmlDeviceGetMaxPcieLinkWidth"),
            "replay_counter": r.q("nvmlDeviceGetPcieReplayCounter"),
        }
        bits = r.q("nvmlDeviceGetCurrentClocksEventReasons")
        if bits is None:
            bits = r.q("nvmlDeviceGetCurrentClocksThrottleReasons")
        g["clock_event_bits"] = bits
        g["temperature_c"] = r.q("nvmlDeviceGetTemperature", getattr(n, "NVML_TEMPERATURE_GPU", 0))
        g["temperature_slowdown_c"] = r.q(
            "nvmlDeviceGetTemperatureThreshold", getattr(n, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)
        )
        power = r.q("nvmlDeviceGetPowerUsage")
        limit = r.q("nvmlDeviceGetEnforcedPowerLimit")
        g["power_draw_w"] = round(power / 1000, 1) if isinstance(power, (int, float)) else power
        g["power_limit_w"] = round(limit / 1000, 1) if isinstance(limit, (int, float)) else limit
        g["vbios"] = _text(r.q("nvmlDeviceGetVbiosVersion"))
        pers = r.q("nvmlDeviceGetPersistenceMode")
        g["persistence_mode"] = pers if pers in (NA, None) else ("Enabled" if pers else "Disabled")
        mig = r.q("nvmlDeviceGetMigMode")
        g["mig_mode"] = mig if mig in (NA, None) else ("Enabled" if mig[0] else "Disabled")
        g["processes"] = _processes(r)
        fab = r.q("nvmlDeviceGetGpuFabricInfo")
        states = {0: NA, 1: "Not Started", 2: "In Progress", 3: "Completed"}
        g["fabric_state"] = fab if fab in (NA, None) else states.get(getattr(fab, "state", None))
    except GpuLost as e:
        g["lost"] = str(e)[:200]
    if r.errors:
        g["errors"] = r.errors
    return g


def read_all(n: Any) -> dict[str, Any]:
    """Driver version and every GPU's health; NVML already initialised by the caller."""
    try:
        driver = _text(n.nvmlSystemGetDriverVersion())
    except Exception:
        driver = None
    count = n.nvmlDeviceGetCount()
    gpus = []
    for i in range(count):
        try:
            handle = n.nvmlDeviceGetHandleByIndex(i)
        except Exception as e:  # counted, then gone: the GPU fell off between the two calls
            gpus.append({"index": i, "source": "nvml", "lost": f"nvmlDeviceGetHandleByIndex: {e}"[:200]})
            continue
        gpus.append(read_gpu(n, handle, i))
    return {"driver_version": driver, "count": count, "gpus": gpus, "source": "nvml"}


def main(argv: list[str] | None = None) -> int:
    """``python3 nvml_health.py --json``: the health facts as JSON (gpu_check.sh writes them to a bundle)."""
    try:
        import pynvml as n  # type: ignore[import-not-found]
    except ImportError as e:
        print(json.dumps({"error": f"pynvml (nvidia-ml-py) not installed: {e}"}))
        return 0
    try:
        n.nvmlInit()
    except Exception as e:
        print(json.dumps({"error": f"NVML init failed: {type(e).__name__}: {e}"}))
        return 0
    try:
        print(json.dumps(read_all(n), indent=2, default=str))
    finally:
        try:
            n.nvmlShutdown()
        except Exception:  # noqa: S110 - shutting down is best effort
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
