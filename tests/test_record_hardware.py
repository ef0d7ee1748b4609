"""Runbook 06 and GPU health (issue 18 item 7): the baseline's Xid history, pending remaps and PCIe
links on record, and "GPU health unchanged by the change" ticked only from runbook 01 before and after.

The evidence is real collector output (``collect_evidence`` on the shipped incident bundle, with a
real-form Xid 79 line and a pending remap added to GPU 0's ``nvidia-smi -q -x`` for the faulty case).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from run_factory import write_run
from test_gpu_health_e2e import REMAP, SAMPLE, XID79, faulty_bundle
from vllm_runbooks.change_record import build_record, to_markdown
from vllm_runbooks.evidence import collect_evidence


def _run(run_dir: Path, bundle: Path) -> Path:
    """A run directory whose runbook 01 read ``bundle``: evidence on disk, listed in a signed run.json."""
    ev = collect_evidence(bundle, run_dir=run_dir)
    entry = {"name": "evidence_capture", "status": "ok", "headline": ev.headline().to_dict()}
    write_run(run_dir, [entry], {}, on_disk=("evidence",))
    return run_dir


def _quiet_bundle(tmp_path: Path, name: str = "quiet") -> Path:
    b = tmp_path / name
    shutil.copytree(SAMPLE, b)
    (b / "kernel-log.txt").write_text("2026-11-29T20:40:00+0000 k3-node-07 kernel: e1000e: eth0 NIC Link is Up\n")
    xml = (b / "nvidia-smi-q.xml").read_text()
    cut = xml.index("</ecc_errors>") + len("</ecc_errors>")  # GPU 0 reports its remaps: none pending
    xml = xml[:cut] + REMAP.replace("<remapped_row_pending>Yes", "<remapped_row_pending>No") + xml[cut:]
    (b / "nvidia-smi-q.xml").write_text(xml.replace("</pci_bus_id>", f"</pci_bus_id>{link(16)}", 1))
    return b


def link(width: int) -> str:
    """GPU 0's PCIe link block as nvidia-smi -q -x writes it (tests/data/gpu/netdata-tesla-p100.xml)."""
    return (
        "<pci_gpu_link_info><pcie_gen><max_link_gen>5</max_link_gen><current_link_gen>5</current_link_gen>"
        f"</pcie_gen><link_widths><max_link_width>16x</max_link_width><current_link_width>{width}x"
        "</current_link_width></link_widths></pci_gpu_link_info>"
    )


def _items(record, section: str) -> dict:
    return {i.item if section == "baseline" else i.name: i for i in getattr(record, section)}


def test_unchanged_health_is_ticked_and_the_baseline_items_are_cited(tmp_path: Path) -> None:
    base = _run(tmp_path / "before", _quiet_bundle(tmp_path))
    after = _run(tmp_path / "after", _quiet_bundle(tmp_path, "quiet2"))
    record = build_record(after, base)
    item = _items(record, "checklist")["gpu_health_unchanged"]
    assert item.ticked, item.reason
    assert "no new Xid" in item.reason and len(item.evidence) == 2
    assert {c.run for c in item.evidence} == {"before", "after"}
    baseline = _items(record, "baseline")
    assert baseline["xid_history"].present and "no Xid / SXid" in baseline["xid_history"].evidence[0].value
    assert baseline["pending_remaps"].evidence[0].value == "none pending on 1 GPU(s) that report row remapping"
    assert baseline["pcie_links"].evidence[0].value == "x16 on GPU 0"
    assert "GPU health unchanged by the change" in to_markdown(record)


def test_a_new_xid_and_pending_remap_after_the_change_leave_it_unticked(tmp_path: Path) -> None:
    base = _run(tmp_path / "before", _quiet_bundle(tmp_path))
    bad = tmp_path / "bad"
    bad.mkdir()
    after = _run(tmp_path / "after", faulty_bundle(bad))
    item = _items(build_record(after, base), "checklist")["gpu_health_unchanged"]
    assert not item.ticked and not item.evidence
    assert "Xid 79 on GPU 0 (1× new)" in item.reason and "a row remap is now pending" in item.reason


def test_the_baselines_own_xid_is_on_record_and_not_new_after(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    faulty = faulty_bundle(bad)
    base = _run(tmp_path / "before", faulty)
    after = _run(tmp_path / "after", faulty)  # the same history read again after the change
    record = build_record(after, base)
    assert "Xid 79 on GPU 0 (1×)" in _items(record, "baseline")["xid_history"].evidence[0].value
    assert "pending on GPU 0" in _items(record, "baseline")["pending_remaps"].evidence[0].value
    assert _items(record, "checklist")["gpu_health_unchanged"].ticked
    assert XID79 and REMAP  # the faulty case's own lines, shared with test_gpu_health_e2e


def test_without_a_kernel_log_or_baseline_it_is_not_called_unchanged(tmp_path: Path) -> None:
    no_log = _run(tmp_path / "before", SAMPLE)  # the shipped sample has no kernel-log.txt
    after = _run(tmp_path / "after", _quiet_bundle(tmp_path))
    item = _items(build_record(after, no_log), "checklist")["gpu_health_unchanged"]
    assert not item.ticked and "kernel log not read before the traffic" in item.reason
    on_record = _items(build_record(after, no_log), "baseline")
    assert not on_record["xid_history"].present and not on_record["pending_remaps"].present  # the sample says neither
    alone = _items(build_record(after), "checklist")["gpu_health_unchanged"]
    assert not alone.ticked and "no usable baseline run" in alone.reason


def test_a_baseline_of_other_gpus_is_not_compared(tmp_path: Path) -> None:
    base = _run(tmp_path / "before", _quiet_bundle(tmp_path))
    other = _quiet_bundle(tmp_path, "other")
    xml = (other / "nvidia-smi-q.xml").read_text()
    (other / "nvidia-smi-q.xml").write_text(xml.replace("<uuid>GPU-", "<uuid>GPU-ffff"))
    after = _run(tmp_path / "after", other)
    item = _items(build_record(after, base), "checklist")["gpu_health_unchanged"]
    assert not item.ticked and "not the same node" in item.reason


def test_a_link_that_trained_narrower_after_the_change_is_not_unchanged(tmp_path: Path) -> None:
    base = _run(tmp_path / "before", _quiet_bundle(tmp_path))
    narrow = _quiet_bundle(tmp_path, "narrow")
    xml = (narrow / "nvidia-smi-q.xml").read_text()
    (narrow / "nvidia-smi-q.xml").write_text(xml.replace(link(16), link(8)))
    item = _items(build_record(_run(tmp_path / "after", narrow), base), "checklist")["gpu_health_unchanged"]
    assert not item.ticked and "GPU 0 (GPU-" in item.reason and "PCIe link x16 → x8" in item.reason
