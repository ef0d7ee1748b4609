"""Canary step 10: GPU health read before (step 1) and after the traffic; anything new fails the step.

Fakes, at the boundaries a CPU machine cannot reach: ``pynvml`` (the fake of
``test_gpu_health_nvml``, with remapped rows that can change) and ``journalctl`` (a script on PATH
printing a file). The "traffic" is a test-only step between the two readings that injects the
fault a real server cannot be made to show: a new kernel-log line, a pending remap, a lost GPU.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from test_gpu_health_nvml import fake
from vllm_runbooks.canary import registry
from vllm_runbooks.canary.model import Status
from vllm_runbooks.canary.registry import Step, passed, run_canary
from vllm_runbooks.evidence.health_watch import compare_health, lookback_after, read_health

# the line form of issue 18's acceptance case; the bus id is the fake's GPU 0 (00000000:18:00.0)
XID79_GPU0 = (
    "2026-12-02T03:01:07+0000 host kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, "
    "GPU has fallen off the bus."
)
# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150 (bus id moved onto the fake's GPU 1)
XID45_GPU1 = (
    "2026-12-02T02:40:00+0000 host kernel: NVRM: Xid (PCI:0000:19:00): 45, pid=1818990, name=python3, Ch 00000001"
)
# https://github.com/NVIDIA/nvtrust/issues/124
SXID_NONFATAL = (
    "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt"
)
QUIET = "2026-12-02T02:59:00+0000 host kernel: e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex"


class Node:
    """The fake node's mutable state: what NVML answers and what the journal holds."""

    def __init__(self, tmp: Path) -> None:
        self.journal = tmp / "journal.txt"
        self.journal.write_text(QUIET + "\n")
        self.pending = {0: 0, 1: 0}
        self.count = 2

    def add_line(self, line: str) -> None:
        with self.journal.open("a") as f:
            f.write(line + "\n")


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Node:
    n = Node(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "journalctl"
    tool.write_text(f"#!/bin/sh\ncat '{n.journal}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    m = fake(2)
    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: n.count
    m.nvmlDeviceGetRemappedRows = lambda h: (0, 0, n.pending[h], 0)
    m.nvmlDeviceGetRetiredPagesPendingStatus = lambda h: 0
    m.nvmlDeviceGetTotalEccErrors = lambda h, t, c: 0
    monkeypatch.setitem(sys.modules, "pynvml", m)
    return n


def canary_with(monkeypatch: pytest.MonkeyPatch, during: Callable[[], Any]) -> Any:
    """run_canary with steps 1 and 10 around a test-only 'traffic' step that calls ``during``."""

    def traffic(ctx: Any) -> Any:
        during()
        return passed("fault injected by the test")

    with registry.STEPS.temporarily(Step("test_traffic", "test traffic", 5.5, traffic, False)):
        return run_canary(steps=["gpu_cuda", "test_traffic", "gpu_health"], step_timeout_s=60)


def test_quiet_traffic_passes_with_both_readings(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    report = canary_with(monkeypatch, lambda: node.add_line(QUIET))
    step = report.step("gpu_health")
    assert step.status == Status.PASS, step.reason
    assert "2 GPU(s): no new Xid" in step.reason and "journalctl" in step.reason
    before, after = step.details["before"], step.details["after"]
    assert [g["uuid"] for g in before["gpus"]] == ["GPU-0", "GPU-1"] == [g["uuid"] for g in after["gpus"]]
    assert after["lookback_h"] >= before["lookback_h"]


def test_a_new_xid_and_a_new_pending_remap_fail_the_step(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    def fault() -> None:
        node.add_line(XID79_GPU0)
        node.pending[1] = 1

    report = canary_with(monkeypatch, fault)
    step = report.step("gpu_health")
    assert step.status == Status.FAIL
    assert "Xid 79" in step.reason and "GPU 0" in step.reason and "GPU_HAS_FALLEN_OFF_THE_BUS" in step.reason
    assert "GPU 1 (GPU-1): a row remap is now pending" in step.reason
    assert report.verdict == "fail"
    assert not report.plan[1].allowed and any("GPU health" in b for b in report.plan[1].blocking)


def test_an_old_xid_is_not_new_but_a_repeat_of_it_is(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    node.add_line(XID45_GPU1)
    quiet = canary_with(monkeypatch, lambda: None).step("gpu_health")
    assert quiet.status == Status.PASS, quiet.reason
    assert quiet.details["before"]["events"][0]["code"] == 45
    again = canary_with(monkeypatch, lambda: node.add_line(XID45_GPU1.replace("02:40:00", "03:05:00")))
    step = again.step("gpu_health")
    assert step.status == Status.FAIL and "Xid 45" in step.reason and "1×" in step.reason


def test_a_gpu_that_stops_answering_fails(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    def drop() -> None:
        node.count = 1

    step = canary_with(monkeypatch, drop).step("gpu_health")
    assert step.status == Status.FAIL and "GPU 1 (GPU-1) no longer answers" in step.reason


def test_a_nonfatal_sxid_is_noted_not_failed() -> None:
    base = {"gpu_health": "ok", "kernel_log": "ok", "gpus": [], "events": []}
    sx = {"kind": "sxid", "code": 22013, "device": "nvidia-nvswitch3", "pci": "0000:04:00", "count": 1}
    diff = compare_health(base, {**base, "events": [{**sx, "text": "Non-fatal, Link 44", "line": SXID_NONFATAL}]})
    assert diff["comparable"] and diff["new_events"][0]["code"] == 22013 and diff["new_events"][0]["new_count"] == 1
    from vllm_runbooks.canary.steps.gpu import _new_event

    fails, text = _new_event(diff["new_events"][0])
    assert not fails and "SXid 22013" in text


def test_a_journal_unread_on_one_side_is_not_called_unchanged() -> None:
    gpu = {"index": 0, "uuid": "GPU-0", "remap_pending": False, "volatile_uncorrected": 0}
    before = {"gpu_health": "ok", "kernel_log": "ok", "gpus": [gpu], "events": []}
    after = {"gpu_health": "ok", "kernel_log": "unavailable", "gpus": [gpu], "events": []}
    diff = compare_health(before, after)
    assert not diff["comparable"] and diff["unread"] == ["kernel log not read after the traffic"]
    worse = compare_health(before, {**after, "gpus": [{**gpu, "volatile_uncorrected": 3}]})
    assert worse["new_memory"] == ["GPU 0 (GPU-0): volatile uncorrected ECC errors 0 → 3"]


def test_no_gpu_here_skips_and_says_where_to_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails: no NVML library
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, journalctl or dmesg
    reading = read_health()
    assert reading["gpus"] == [] and reading["gpu_health"] == "unavailable"
    assert any("not installed" in r for r in reading["reasons"])
    step = run_canary(steps=["gpu_cuda", "gpu_health"]).step("gpu_health")
    assert step.status == Status.SKIP and "run the canary on the node under change" in step.reason


def test_without_step_one_there_is_no_before_reading() -> None:
    step = run_canary(steps=["gpu_health"]).step("gpu_health")
    assert step.status == Status.SKIP and "gpu_cuda did not run" in step.reason


def test_the_second_window_covers_the_first() -> None:
    import time

    assert lookback_after({"lookback_h": 3.0, "monotonic": time.monotonic() - 7000}) == 5.0  # 3 h + 1.94 h
    assert lookback_after({"lookback_h": 1.0, "monotonic": time.monotonic()}) == 2.0  # a moment later: rounded up
    assert lookback_after({"lookback_h": 1.0}) == 1.0  # no clock reading: the first window again
