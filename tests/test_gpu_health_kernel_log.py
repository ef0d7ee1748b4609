"""Xid / SXid lines as real kernels print them (public threads, URLs beside each), and the bounded scan."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from vllm_runbooks import probe
from vllm_runbooks.evidence.hardware import hardware_verdict
from vllm_runbooks.evidence.kernel_log import parse_kernel_log, pci_key

# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1151
XID79 = [
    "May 18 19:02:39 kernel: NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
    "May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
    "May 18 19:02:39 kernel: NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
]
# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1150
XID45 = [
    "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
    "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000002 caused by previous Xid 149",
]
# https://github.com/leptonai/gpud/pull/1160
XID149 = (
    "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 "
    "(0x026001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
)
# https://github.com/NVIDIA/nvtrust/issues/124
SXID = "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt"
# https://pastebin.com/xJaypMZt (older driver: no "PCI:" prefix, no Xid number for the loss)
OLD = [
    "Jan 18 11:38:05 localhost kernel: [ 269.516977] NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
    "Jan 18 11:38:05 localhost kernel: [ 269.517039] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc",
]
# https://raw.githubusercontent.com/stas00/ml-engineering/7bc7c3054eb93c277a4755c597ae0864d77a63f1/compute/accelerator/nvidia/debug.md
XID63 = "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."

GPUS = [{"index": 0, "pci_bus_id": "00000000:2B:00.0"}, {"index": 1, "pci_bus_id": "00000000:DC:00.0"}]


def test_xid79_mapped_to_its_gpu_and_faulty() -> None:
    got = parse_kernel_log("\n".join(XID79), GPUS)
    (ev,) = got["events"]  # the Xid line and the un-numbered "fallen off" line are one (GPU, code)
    assert (ev["code"], ev["gpu_index"], ev["count"], ev["first_time"]) == (79, 0, 2, "May 18 19:02:39")
    v = hardware_verdict([{"index": 0}, {"index": 1}], got["events"])
    assert v["verdict"] == "faulty" and v["xids"] == [79] and "RESTART_BM" in v["findings"][0]["text"]
    assert v["findings"][0]["source"] == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


def test_xid45_flood_deduplicated_and_not_a_fault() -> None:
    got = parse_kernel_log("\n".join(XID45 * 50), GPUS)
    assert [(e["code"], e["gpu_index"], e["count"]) for e in got["events"]] == [(45, 1, 100)]
    assert hardware_verdict([{"index": 0}, {"index": 1}], got["events"])["verdict"] == "healthy"


def test_nvlink5_xid_sxid_old_format_and_row_remap_lines() -> None:
    got = parse_kernel_log("\n".join([XID149, SXID, *OLD, XID63]), [])
    kinds = {(e["kind"], e["code"]) for e in got["events"]}
    assert kinds == {("xid", 149), ("sxid", 22013), ("xid", 79), ("xid", 3), ("xid", 63)}
    inferred = next(e for e in got["events"] if e["code"] == 79)
    assert "without an Xid number" in inferred["inferred"] and inferred["pci"] == "0000:01:00"
    sev = {f["code"]: f["severity"] for f in hardware_verdict([{"index": 0}], got["events"])["findings"]}
    assert sev[149] == "faulty" and sev[22013] == "info" and sev[63] == "info"


def test_unknown_code_is_not_given_a_meaning() -> None:
    got = parse_kernel_log("NVRM: Xid (PCI:0000:2b:00): 999, something new", GPUS)
    f = hardware_verdict([{"index": 0}], got["events"])["findings"][0]
    assert f["severity"] == "degraded" and "not in the catalog" in f["text"]


def test_pci_keys_agree_between_nvml_xml_and_kernel() -> None:
    assert pci_key("00000000:18:00.0") == pci_key("PCI:0000:18:00") == pci_key("0000:18:00") == "0000:18:00"


def _fake_tool(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def bindir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    return d


def test_a_hanging_journal_is_killed_at_the_time_bound(bindir: Path) -> None:
    _fake_tool(bindir, "journalctl", f"echo '{XID79[1]}'; exec sleep 600")
    t0 = time.monotonic()
    kept, stats = probe.scan_filtered(["journalctl"], timeout_s=1.0)
    assert time.monotonic() - t0 < 5
    assert stats["stopped"].startswith("time bound") and len(kept) == 1 and b"79, GPU" in kept[0]


def test_journal_then_dmesg_both_refused_is_a_reason_not_a_crash(bindir: Path) -> None:
    _fake_tool(bindir, "journalctl", "echo 'No journal files were opened due to insufficient permissions.' >&2; exit 1")
    _fake_tool(bindir, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    got = probe.kernel_log(72, 5)
    assert got.status == "unavailable" and got.reason.count("permission denied") == 2


def test_missing_tools_are_reasons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    got = probe.kernel_log(72, 5)
    assert got.status == "unavailable" and "journalctl not found" in got.reason and "dmesg not found" in got.reason


def test_journal_empty_falls_back_to_dmesg_with_header(bindir: Path) -> None:
    _fake_tool(bindir, "journalctl", "exit 0")
    _fake_tool(bindir, "dmesg", f"echo '[Tue Dec  1 20:01:04 2026] {XID79[1].split('kernel: ')[1]}'; echo '[x] usb'")
    got = probe.kernel_log(24, 5)
    text = got.data.decode()
    assert got.status == "ok" and '"source": "dmesg"' in text.splitlines()[0] and text.count("\n") == 2
    assert parse_kernel_log(text, GPUS)["events"][0]["code"] == 79


def test_a_1gb_journal_is_cut_at_the_byte_bound_and_keeps_the_rare_xid(bindir: Path) -> None:
    """1 GiB of kernel noise with an Xid 79 at the start and an Xid 48 flood: bounded in bytes and time."""
    noise = "2026-11-29T20:41:02+0000 node kernel: " + "x" * 200
    _fake_tool(
        bindir,
        "journalctl",
        f"echo '{XID79[1]}'; yes '{XID45[0]}' | head -n 10000; yes '{noise}' | head -c 1073741824",
    )
    t0 = time.monotonic()
    kept, stats = probe.scan_filtered(["journalctl"], timeout_s=60, keep_lines=100)
    took = time.monotonic() - t0
    assert stats["stopped"] == f"byte bound {probe.KERNEL_LOG_READ_BYTES} reached"
    assert probe.KERNEL_LOG_READ_BYTES <= stats["bytes"] <= probe.KERNEL_LOG_READ_BYTES + 1024 * 1024
    assert any(b"79, GPU" in k for k in kept) and len(kept) == 100 and stats["dropped"] == 10000 - 99
    assert took < 30, took
    print(f"\nkernel-log scan: {stats['bytes']} bytes, {stats['lines']} lines in {took:.2f} s")


def test_overlong_lines_are_cut(bindir: Path) -> None:
    _fake_tool(bindir, "journalctl", f"printf '%s' '{XID79[1]} '; head -c 3000000 /dev/zero | tr '\\0' 'a'; echo")
    kept, stats = probe.scan_filtered(["journalctl"], timeout_s=10)
    assert len(kept) == 1 and len(kept[0]) <= probe.KERNEL_LOG_LINE_BYTES
