"""GPU memory through NVML, for the experiment's before/after picture.

Why only for a local endpoint: NVML reads the GPUs of the machine the runbook runs on; for a
remote endpoint those numbers would describe the wrong node, so the result says so instead.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from ..records import Record

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


@dataclass
class GpuMemory(Record):
    """Used/total MiB per GPU, or ``available=False`` with the reason."""

    SCHEMA = "prefix_cache_gpu_memory"
    available: bool
    reason: str = ""
    gpus: list[dict[str, Any]] = field(default_factory=list)

    @property
    def used_mib(self) -> float | None:
        """Memory used on all GPUs together, MiB."""
        return sum(g["used_mib"] for g in self.gpus) if self.available and self.gpus else None


def gpu_memory(endpoint: str | None = None, nvml: Any = None) -> GpuMemory:
    """Read NVML; ``nvml`` is the pynvml module (tests pass a fake). Never raises."""
    host = urlparse(endpoint).hostname if endpoint else None
    if host and host not in LOCAL_HOSTS:
        return GpuMemory(False, f"endpoint {host} is remote: NVML here would read this machine's GPUs, not its")
    try:
        n = nvml or importlib.import_module("pynvml")
    except ImportError as exc:
        return GpuMemory(False, f"pynvml (nvidia-ml-py) not installed: {exc}")
    try:
        n.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return GpuMemory(False, f"NVML unavailable: {exc}")
    try:
        gpus = []
        for i in range(n.nvmlDeviceGetCount()):
            h = n.nvmlDeviceGetHandleByIndex(i)
            mem = n.nvmlDeviceGetMemoryInfo(h)
            name = n.nvmlDeviceGetName(h)
            gpus.append(
                {
                    "index": i,
                    "name": name.decode() if isinstance(name, bytes) else str(name),
                    "used_mib": round(mem.used / 2**20, 1),
                    "total_mib": round(mem.total / 2**20, 1),
                }
            )
        return GpuMemory(True, "", gpus) if gpus else GpuMemory(False, "NVML reports no GPUs")
    except Exception as exc:
        return GpuMemory(False, f"NVML read failed: {exc}")
    finally:
        try:
            n.nvmlShutdown()
        except Exception:  # noqa: S110 - shutdown failure changes nothing we report
            pass
