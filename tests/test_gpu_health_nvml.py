"""NVML health through a fake ``pynvml`` at the library boundary: one case per field and per N/A, a lost GPU."""

from __future__ import annotations

import types
from collections import namedtuple

import pytest

from vllm_runbooks.evidence import nvml_health
from vllm_runbooks.evidence.gpu_health import finish
from vllm_runbooks.evidence.hardware import hardware_verdict

Mem = namedtuple("Mem", "total free used")
Pci = namedtuple("Pci", "busId")
Proc = namedtuple("Proc", "pid usedGpuMemory")
Fabric = namedtuple("Fabric", "state")


class NVMLError(Exception):
    """pynvml's NVMLError carries the nvmlReturn_t in ``value``."""

    def __init__(self, value: int, text: str) -> None:
        super().__init__(text)
        self.value = value


NOT_SUPPORTED = NVMLError(3, "Not Supported")

#: NVML call → (its answer, the key path in the health record, the value recorded)
FIELDS = {
    "nvmlDeviceGetTotalEccErrors": (lambda h, t, c: 7 if t else 2, ("ecc", "volatile_uncorrected"), 7),
    "nvmlDeviceGetRetiredPages": (lambda h, cause: [1, 2] if cause else [1], ("retired_pages", "double_bit"), 2),
    "nvmlDeviceGetRetiredPagesPendingStatus": (lambda h: 1, ("retired_pages", "pending"), True),
    "nvmlDeviceGetRemappedRows": (lambda h: (0, 1, 1, 0), ("remapped_rows", "pending"), True),
    "nvmlDeviceGetCurrPcieLinkGeneration": (lambda h: 4, ("pcie", "gen_current"), 4),
    "nvmlDeviceGetMaxPcieLinkGeneration": (lambda h: 5, ("pcie", "gen_max"), 5),
    "nvmlDeviceGetCurrPcieLinkWidth": (lambda h: 8, ("pcie", "width_current"), 8),
    "nvmlDeviceGetMaxPcieLinkWidth": (lambda h: 16, ("pcie", "width_max"), 16),
    "nvmlDeviceGetPcieReplayCounter": (lambda h: 3, ("pcie", "replay_counter"), 3),
    "nvmlDeviceGetCurrentClocksEventReasons": (lambda h: 0x40, ("clock_events", "faults"), ["hw_thermal_slowdown"]),
    "nvmlDeviceGetTemperature": (lambda h, s: 61, ("temperature_c",), 61),
    "nvmlDeviceGetTemperatureThreshold": (lambda h, t: 87, ("temperature_slowdown_c",), 87),
    "nvmlDeviceGetPowerUsage": (lambda h: 350_500, ("power_draw_w",), 350.5),
    "nvmlDeviceGetEnforcedPowerLimit": (lambda h: 700_000, ("power_limit_w",), 700.0),
    "nvmlDeviceGetVbiosVersion": (lambda h: b"96.00.A5.00.01", ("vbios",), "96.00.A5.00.01"),
    "nvmlDeviceGetPersistenceMode": (lambda h: 0, ("persistence_mode",), "Disabled"),
    "nvmlDeviceGetMigMode": (lambda h: (1, 1), ("mig_mode",), "Enabled"),
    "nvmlDeviceGetMemoryInfo": (lambda h: Mem(100 * 2**20, 60 * 2**20, 40 * 2**20), ("memory_free_mib",), 60),
    "nvmlDeviceGetComputeRunningProcesses": (
        lambda h: [Proc(42, 5 * 2**20)],
        ("processes",),
        [{"pid": 42, "name": "python3", "used_mib": 5}],
    ),
    "nvmlDeviceGetGpuFabricInfo": (lambda h: Fabric(2), ("fabric_state",), "In Progress"),
    "nvmlDeviceGetEccMode": (lambda h: (1, 1), ("ecc", "mode"), "Enabled"),
}


def fake(count: int = 2, overrides: dict | None = None, lost_handle: int | None = None) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.nvmlSystemGetDriverVersion = lambda: "580.95.05"
    m.nvmlDeviceGetCount = lambda: count

    def handle(i: int) -> int:
        if i == lost_handle:
            raise NVMLError(15, "GPU is lost")
        return i

    m.nvmlDeviceGetHandleByIndex = handle
    m.nvmlDeviceGetPciInfo = lambda h: Pci(f"00000000:{0x18 + h:02X}:00.0".encode())
    m.nvmlDeviceGetUUID = lambda h: f"GPU-{h}"
    m.nvmlDeviceGetName = lambda h: "NVIDIA H200"
    m.nvmlSystemGetProcessName = lambda pid: b"python3"
    for name, (fn, _, _) in FIELDS.items():
        setattr(m, name, fn)
    for name, fn in (overrides or {}).items():
        setattr(m, name, fn)
    return m


def at(g: dict, path: tuple[str, ...]):
    for k in path:
        g = g[k]
    return g


@pytest.mark.parametrize("call", sorted(FIELDS))
def test_each_field_read_from_its_nvml_call(call: str) -> None:
    _, path, want = FIELDS[call]
    g = finish(nvml_health.read_all(fake(1))["gpus"][0])
    assert at(g, path) == want


def _raise(e: Exception):
    def f(*a: object) -> None:
        raise e

    return f


@pytest.mark.parametrize("call", sorted(FIELDS))
def test_each_field_not_supported_is_recorded_na(call: str) -> None:
    _, path, _ = FIELDS[call]
    g = finish(nvml_health.read_all(fake(1, {call: _raise(NOT_SUPPORTED)}))["gpus"][0])
    got = at(g, path[:1]) if call in ("nvmlDeviceGetCurrentClocksEventReasons",) else at(g, path)
    if call == "nvmlDeviceGetCurrentClocksEventReasons":
        assert got["bitmask"] == "N/A" and got["faults"] == []
    else:
        assert got == "N/A", (call, got)
        assert ".".join(path) in g["not_reported"] or path[0] in g["not_reported"]


def test_other_errors_are_none_with_the_error_kept() -> None:
    g = nvml_health.read_all(fake(1, {"nvmlDeviceGetVbiosVersion": _raise(NVMLError(999, "Unknown Error"))}))["gpus"][0]
    assert g["vbios"] is None and "Unknown Error" in g["errors"]["nvmlDeviceGetVbiosVersion"]


def test_gpu_lost_between_count_and_handle() -> None:
    got = nvml_health.read_all(fake(3, lost_handle=1))
    assert [g.get("lost") is not None for g in got["gpus"]] == [False, True, False]
    assert got["gpus"][2]["pcie"]["width_current"] == 8  # the GPUs after it are still read
    lost = [f for f in hardware_verdict([finish(g) for g in got["gpus"]], [])["findings"] if f["check"] == "nvml.lost"]
    assert [f["gpu"] for f in lost] == [1] and lost[0]["severity"] == "faulty"


def test_gpu_lost_in_the_middle_of_its_reads() -> None:
    calls: list[str] = []

    def pcie(h: int) -> int:
        calls.append("pcie")
        if h == 0:
            raise NVMLError(15, "GPU is lost")
        return 4

    got = nvml_health.read_all(fake(2, {"nvmlDeviceGetCurrPcieLinkGeneration": pcie}))
    g0, g1 = got["gpus"]
    assert "nvmlDeviceGetCurrPcieLinkGeneration" in g0["lost"] and "vbios" not in g0  # stopped there
    assert g1["lost"] is None and g1["pcie"]["gen_current"] == 4


def test_local_collector_uses_nvml_health(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import sys

    from vllm_runbooks.evidence import collect_evidence

    m = fake(2)
    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None
    monkeypatch.setitem(sys.modules, "pynvml", m)
    ev = collect_evidence("local", run_dir=tmp_path / "r", only=["gpu_health", "hardware"], collector_timeout_s=20)
    gh = ev.items["gpu_health"]
    assert gh.value["source"] == "nvml" and gh.value["gpus"][1]["pcie"]["width_current"] == 8
    assert ev.items["hardware"].value["verdict"] == "faulty"  # pending remap and pending retirement
