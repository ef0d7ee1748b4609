"""GPU health from real ``nvidia-smi -q -x`` outputs (tests/data/gpu/SOURCE.md), the verdict and the fit."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_runbooks.evidence.fit import disk_check, fit_check, memory_check
from vllm_runbooks.evidence.gpu_health import (
    decode_clock_events,
    expected_gpu_count,
    finish,
    parse_health_xml,
    vbios_summary,
)
from vllm_runbooks.evidence.hardware import hardware_verdict
from vllm_runbooks.evidence.parsers import ParseError

DATA = Path(__file__).parent / "data" / "gpu"
SAMPLE = Path(__file__).parent.parent / "examples" / "incidents" / "k3-after-r580-upgrade" / "nvidia-smi-q.xml"


def gpus_of(name: str) -> list[dict]:
    return [finish(g) for g in parse_health_xml((DATA / name).read_text())]


def test_a100_mig_reports_na_as_na_not_zero() -> None:
    g = gpus_of("netdata-a100-sxm4-mig.xml")[0]
    assert g["mig_mode"] == "Enabled" and g["persistence_mode"] == "Disabled"
    assert g["remapped_rows"] == {"correctable": "N/A", "uncorrectable": "N/A", "pending": "N/A", "failure": "N/A"}
    assert g["ecc"]["volatile_uncorrected"] == "N/A" and g["ecc"]["aggregate_uncorrected"] == 0
    assert "remapped_rows.pending" in g["not_reported"] and "ecc.aggregate_uncorrected" not in g["not_reported"]
    assert (g["pcie"]["width_current"], g["pcie"]["width_max"], g["power_limit_w"]) == (16, 16, 400)
    checks = {f["check"] for f in hardware_verdict([g], [])["findings"]}
    assert {"mig_mode", "persistence_mode"} <= checks  # noted, not faults


def test_p100_old_tags_retired_pages_and_throttle_reasons() -> None:
    g = gpus_of("netdata-tesla-p100.xml")[0]
    assert g["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
    assert g["ecc"]["aggregate_corrected"] == 3 and g["ecc"]["volatile_uncorrected"] == 0
    assert g["clock_events"]["active"] == ["gpu_idle"] and g["clock_events"]["faults"] == []
    assert hardware_verdict([g], [])["verdict"] == "healthy"


def test_rtx2080_link_at_x8_is_degraded_and_process_memory_na() -> None:
    g = gpus_of("netdata-rtx-2080-win.xml")[0]
    assert (g["pcie"]["width_current"], g["pcie"]["width_max"]) == (8, 16)
    assert g["processes"][0]["pid"] == 7724 and g["processes"][0]["used_mib"] == "N/A"
    v = hardware_verdict([g], [])
    assert v["verdict"] == "degraded" and v["findings"][0]["check"] == "pcie.width"
    assert v["findings"][0]["source"].startswith("https://docs.nvidia.com/")


def test_rtx4090_idle_gen_drop_is_a_note_not_a_fault() -> None:
    g = gpus_of("netdata-rtx-4090-driver-535.xml")[0]
    assert g["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert (g["pcie"]["gen_current"], g["pcie"]["gen_max"]) == (1, 3)
    v = hardware_verdict([g], [])
    assert v["verdict"] == "healthy" and [f["severity"] for f in v["findings"]] == ["info"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not xml at all",
        "<nvidia_smi_log><gpu id='0'><product_name>H200</product_name>",  # cut short
        "<nvidia_smi_log><gpu><</gpu></nvidia_smi_log>",
    ],
)
def test_garbage_or_truncated_xml_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_health_xml(text)


def test_pending_remap_and_failure_are_faulty_with_their_actions() -> None:
    g = gpus_of("netdata-rtx-4090-driver-535.xml")[0]
    g["remapped_rows"].update(pending=True)
    v = hardware_verdict([g], [])
    assert v["verdict"] == "faulty" and v["faulty_gpus"] == [0]
    assert "reset" in v["findings"][0]["action"]
    g["remapped_rows"].update(pending=False, failure=True)
    assert "RMA" in hardware_verdict([g], [])["findings"][0]["action"]


def test_clock_bitmask_decoded_idle_and_power_cap_are_not_faults() -> None:
    assert decode_clock_events(0x1 | 0x4)["faults"] == []
    got = decode_clock_events(0x4 | 0x40)
    assert got["active"] == ["sw_power_cap", "hw_thermal_slowdown"] and got["faults"] == ["hw_thermal_slowdown"]


def test_vbios_mixed_on_one_model_is_degraded() -> None:
    gpus = [
        {"index": 0, "name": "H200", "vbios": "96.00.A5.00.01"},
        {"index": 1, "name": "H200", "vbios": "96.00.A5.00.02"},
    ]
    vb = vbios_summary(gpus)
    assert vb["uniform"] is False
    assert hardware_verdict(gpus, [], vbios=vb)["verdict"] == "degraded"


def test_expected_count_from_parallel_flags_and_a_missing_gpu_is_faulty() -> None:
    assert expected_gpu_count({"tensor-parallel-size": "8", "pipeline-parallel-size": "2"})[0] == 16
    assert expected_gpu_count({"tensor-parallel-size": "4", "data-parallel-size": "2"})[0] == 8
    assert expected_gpu_count({})[0] is None
    gpus = [finish(g) for g in parse_health_xml(SAMPLE.read_text())][:7]
    v = hardware_verdict(gpus, [], expected=8, expected_how="test")
    assert v["verdict"] == "faulty" and v["findings"][0]["check"] == "gpu_count"


def test_no_gpu_facts_is_unknown_not_healthy() -> None:
    assert hardware_verdict([], [])["verdict"] == "unknown"


def test_fit_other_process_memory_fails_the_serving_process_does_not() -> None:
    g = {"index": 0, "memory_total_mib": 100_000, "memory_free_mib": 50_000, "memory_used_mib": 50_000}
    g["processes"] = [{"pid": 1, "name": "python train.py", "used_mib": 50_000}]
    row = memory_check([g], 0.9, [0], server_running=False)[0]
    assert row["status"] == "fail" and row["needed_mib"] == 90_000 and "train.py" in row["why"]
    g["processes"] = [{"pid": 2, "name": "VLLM::EngineCore", "used_mib": 50_000}]
    assert memory_check([g], 0.9, [0], server_running=True)[0]["status"] == "pass"


def test_fit_uses_the_launch_utilisation_and_visible_devices() -> None:
    gpus = [
        {"index": 0, "memory_total_mib": 1000, "memory_free_mib": 500, "processes": []},
        {"index": 1, "memory_total_mib": 1000, "memory_free_mib": 990, "processes": []},
    ]
    got = fit_check(
        gpus,
        flags={"gpu-memory-utilization": "0.95"},
        env={"CUDA_VISIBLE_DEVICES": "1"},
        expected=1,
        server_running=False,
        disk_blocks=[],
        weights=None,
    )
    assert got["status"] == "pass" and [m["gpu"] for m in got["memory"]] == [1]
    assert got["gpu_memory_utilization"] == 0.95 and got["disk"]["status"] == "unknown"


def test_disk_against_sourced_weights() -> None:
    block = {"path": "/data/hf", "why": "--download-dir", "mount": "/data", "avail_bytes": 500 * 10**9}
    weights = {"gb": 1680, "text": "MXFP4", "source": "https://recipes.vllm.ai/moonshotai/Kimi-K3"}
    assert disk_check([block], weights)["status"] == "fail"
    assert disk_check([{**block, "cached": "/data/hf/hub/models--moonshotai--Kimi-K3"}], weights)["status"] == "pass"
    assert disk_check([block], None)["status"] == "unknown"
