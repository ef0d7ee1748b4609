"""NVML collection through a fake ``pynvml`` module: the only fake, at the library boundary."""

from __future__ import annotations

import sys
import threading
import types
from collections import namedtuple
from pathlib import Path

import pytest

from vllm_runbooks.evidence import collect_evidence
from vllm_runbooks.evidence.nvml import nvml_facts

Mem = namedtuple("Mem", "total free used")
Pci = namedtuple("Pci", "busId")


class FakeNVMLError(Exception):
    pass


def fake_pynvml(
    gpus: int = 8,
    driver: str = "575.57.08",
    cuda: int = 12090,
    links: int = 18,
    init_error: Exception | None = None,
    block: threading.Event | None = None,
) -> types.ModuleType:
    """A stand-in for nvidia-ml-py with the calls and return shapes NVML documents (nvml.h)."""
    m = types.ModuleType("pynvml")
    m.NVML_NVLINK_MAX_LINKS = 18
    m.NVML_P2P_CAPS_INDEX_NVLINK = 2
    m.NVML_P2P_STATUS_OK = 0
    m.NVMLError = FakeNVMLError

    def init() -> None:
        if block is not None:
            block.wait()
        if init_error is not None:
            raise init_error

    def nvlink_state(h: int, link: int) -> int:
        if links == 0:
            raise FakeNVMLError("Not Supported")  # pynvml's NVMLError_NotSupported text
        if link >= links:
            raise FakeNVMLError("Invalid Argument")
        return 1

    m.nvmlInit = init
    m.nvmlShutdown = lambda: None
    m.nvmlSystemGetDriverVersion = lambda: driver
    m.nvmlSystemGetCudaDriverVersion_v2 = lambda: cuda
    m.nvmlDeviceGetCount = lambda: gpus
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: "NVIDIA H200"
    m.nvmlDeviceGetUUID = lambda h: f"GPU-fake-{h}"
    m.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)
    m.nvmlDeviceGetMemoryInfo = lambda h: Mem(143771 * 1048576, 143000 * 1048576, 771 * 1048576)
    m.nvmlDeviceGetBrand = lambda h: 14  # NVML_BRAND_NVIDIA
    m.nvmlDeviceGetArchitecture = lambda h: 9  # NVML_DEVICE_ARCH_HOPPER
    m.nvmlDeviceGetPciInfo = lambda h: Pci(f"00000000:{0x18 + h:02X}:00.0".encode())
    m.nvmlDeviceGetMigMode = lambda h: (0, 0)
    m.nvmlDeviceGetNvLinkState = nvlink_state
    m.nvmlDeviceGetTotalEccErrors = lambda h, t, c: 0
    m.nvmlDeviceGetPersistenceMode = lambda h: 1
    m.nvmlDeviceGetP2PStatus = lambda a, b, idx: 0 if links else 3
    m.nvmlDeviceGetTopologyCommonAncestor = lambda a, b: 40 if (a // 4) == (b // 4) else 50
    return m


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch):
    def _install(mod: types.ModuleType) -> None:
        monkeypatch.setitem(sys.modules, "pynvml", mod)

    return _install


def test_nvml_facts_decoded(install) -> None:
    install(fake_pynvml())
    it = nvml_facts(5)
    assert it.status == "ok", it.reason
    v = it.value
    assert v["driver_version"] == "575.57.08" and v["driver_branch"] == "r575"
    assert v["cuda_driver_version_int"] == 12090 and v["cuda_driver_version"] == "12.9"
    g = v["gpus"][2]
    assert (g["compute_capability"], g["brand"], g["brand_class"], g["architecture"]) == (
        "9.0",
        "NVIDIA",
        "datacenter",
        "Hopper",
    )
    assert g["memory_total_mib"] == 143771 and g["memory_used_mib"] == 771 and g["nvlink_active_links"] == 18
    assert g["pci_bus_id"] == "00000000:1A:00.0" and g["mig_mode"] == "Disabled"
    assert v["topology"]["matrix"][0][:3] == ["X", "NV18", "NV18"]


def test_nvml_pcie_topology_without_nvlink(install) -> None:
    install(fake_pynvml(gpus=8, links=0, cuda=12080))
    v = nvml_facts(5).value
    assert v["cuda_driver_version"] == "12.8"
    assert v["gpus"][0]["nvlink_active_links"] == 0
    assert v["topology"]["matrix"][0][1] == "NODE" and v["topology"]["matrix"][0][5] == "SYS"


def test_nvml_init_failure_is_a_reason(install) -> None:
    install(fake_pynvml(init_error=FakeNVMLError("Driver/library version mismatch")))
    it = nvml_facts(5)
    assert it.status == "unavailable" and "Driver/library version mismatch" in it.reason


def test_nvml_hang_is_bounded(install) -> None:
    gate = threading.Event()
    install(fake_pynvml(block=gate))
    try:
        it = nvml_facts(0.3)
        assert it.status == "unavailable" and "timed out" in it.reason
    finally:
        gate.set()


def test_local_collection_prefers_nvml(install, tmp_path: Path) -> None:
    install(fake_pynvml())
    ev = collect_evidence("local", run_dir=tmp_path / "run", only=["nvidia", "interconnect"], collector_timeout_s=20)
    nv = ev.items["nvidia"]
    assert nv.value["source"] == "nvml" and len(nv.value["gpus"]) == 8
    assert nv.status in {"ok", "partial"}
    assert ev.items["interconnect"].value["nvlink"] == "active"
