"""Local collection on this machine, and the bounded primitives it rests on."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from vllm_runbooks import probe
from vllm_runbooks.evidence import collect_evidence

HAS_GPU = shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia/version").exists()


def test_local_run_completes_and_says_why(tmp_path: Path) -> None:
    ev = collect_evidence(
        "local",
        run_dir=tmp_path / "run",
        container="no-such-container",
        log_paths=[str(tmp_path / "missing.log")],
        collector_timeout_s=60,
    )
    assert (tmp_path / "run" / "evidence" / "evidence.json").is_file()
    assert ev.items["host"].status in {"ok", "partial"} and ev.get("host", "kernel")
    assert ev.get("host", "cpus") and ev.get("host", "memory_bytes")
    if not HAS_GPU:
        nv = ev.items["nvidia"]
        assert nv.status == "unavailable"
        assert "NVML" in nv.reason and "nvidia-smi" in nv.reason
    cont = ev.items["container"]
    assert cont.status == "unavailable" and cont.reason
    assert ev.items["image"].reason == "no image given"
    assert "missing.log" in ev.items["logs"].reason or ev.items["logs"].status != "ok"
    assert ev.verdict() == "partial"
    assert ev.headline().figures["unavailable_count"] >= 3
    assert "cuda_probe" not in ev.items  # only when probe_image is asked


def test_probe_image_without_docker_daemon_is_unavailable(tmp_path: Path) -> None:
    ev = collect_evidence(
        "local",
        run_dir=tmp_path / "run",
        image="vllm/vllm-openai:kimi-k3",
        probe_image=True,
        only=["image", "cuda_probe"],
        collector_timeout_s=30,
    )
    cp = ev.items["cuda_probe"]
    assert cp.status == "unavailable" and cp.value["ran"] is False and cp.reason
    assert ev.items["image"].status == "unavailable" and ev.items["image"].reason


def test_local_launch_command_parameter_is_redacted(tmp_path: Path) -> None:
    ev = collect_evidence(
        "local",
        run_dir=tmp_path / "run",
        only=["launch"],
        launch_command="HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 vllm serve m --api-key p4ssw0rd99",
    )
    v = ev.items["launch"].value
    assert v["origin"] == "parameter" and v["argv"][:3] == ["vllm", "serve", "m"]
    assert v["env"]["HF_TOKEN"] == "<redacted:secret>" and "p4ssw0rd99" not in str(v)


def test_endpoint_timeout_and_refusal() -> None:
    got = probe.http_get_version("http://127.0.0.1:9", 2.0)
    assert got.status == "unavailable" and "failed" in got.reason
    assert probe.http_get_version("file:///etc/passwd", 1).reason.startswith("endpoint is not http")


def test_run_missing_tool_timeout_and_failure() -> None:
    assert probe.run(["definitely-not-a-tool-xyz"], 5).reason == "definitely-not-a-tool-xyz not found on PATH"
    slow = probe.run([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
    assert slow.status == "unavailable" and "timed out after 0.5s" in slow.reason
    bad = probe.run([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"], 5)
    assert bad.status == "unavailable" and bad.rc == 3 and "boom" in bad.reason


def test_read_path_reasons(tmp_path: Path) -> None:
    assert "does not exist" in probe.read_path(tmp_path / "x").reason
    d = tmp_path / "d"
    d.mkdir()
    assert probe.read_path(d).status == "unavailable"


@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU")
def test_real_gpu_facts(tmp_path: Path) -> None:
    ev = collect_evidence("local", run_dir=tmp_path / "run", only=["nvidia"])
    assert ev.get("nvidia", "driver_version") and ev.get("nvidia", "gpus")
    assert all(g["compute_capability"] for g in ev.get("nvidia", "gpus"))
