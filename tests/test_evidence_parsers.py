"""Parsers against outputs in the formats the tools really print (tests/data/evidence, examples/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_runbooks.evidence import parsers as P

DATA = Path(__file__).parent / "data" / "evidence"
R575 = Path(__file__).parents[1] / "examples" / "incidents" / "k3-cu130-on-r575"
R580 = Path(__file__).parents[1] / "examples" / "incidents" / "k3-after-r580-upgrade"


def test_cuda_version_encoding() -> None:
    assert P.cuda_int_to_str(12080) == "12.8"
    assert P.cuda_int_to_str(12090) == "12.9"
    assert P.cuda_int_to_str(13000) == "13.0"
    assert P.cuda_str_to_int("12.9") == 12090
    assert P.driver_branch("575.57.08") == "r575" and P.driver_branch("garbage") is None


def test_nvidia_smi_xml() -> None:
    x = P.parse_nvidia_smi_xml((R575 / "nvidia-smi-q.xml").read_text())
    assert x["driver_version"] == "575.57.08" and x["cuda_driver_version"] == "12.9"
    assert len(x["gpus"]) == 8
    g = x["gpus"][3]
    assert g["name"] == "NVIDIA H200" and g["brand"] == "NVIDIA" and g["brand_class"] == "datacenter"
    assert g["architecture"] == "Hopper" and g["pci_bus_id"] == "00000000:5D:00.0"
    assert g["memory_total_mib"] == 143771 and g["mig_mode"] == "Disabled" and g["ecc_errors_uncorrected"] == 0
    assert g["compute_capability"] is None  # -q -x does not print it; the CSV query fills it


@pytest.mark.parametrize("garbage", ["", "hello", "<nvidia_smi_log><gpu>", "\x00\x01binary"])
def test_nvidia_smi_xml_garbage(garbage: str) -> None:
    with pytest.raises(P.ParseError):
        P.parse_nvidia_smi_xml(garbage)


def test_nvidia_smi_text_both_drivers() -> None:
    a = P.parse_nvidia_smi_text((R575 / "nvidia-smi.txt").read_text())
    b = P.parse_nvidia_smi_text((R580 / "nvidia-smi.txt").read_text())
    assert (a["driver_version"], a["cuda_driver_version"]) == ("575.57.08", "12.9")
    assert (b["driver_version"], b["cuda_driver_version"]) == ("580.95.05", "13.0")
    assert [g["index"] for g in a["gpus"]] == list(range(8))
    assert a["gpus"][7]["pci_bus_id"] == "00000000:DB:00.0" and a["gpus"][0]["memory_total_mib"] == 143771
    assert b["gpus"][0]["memory_used_mib"] == 126848 and a["gpus"][0]["mig_mode"] == "Disabled"


def test_nvidia_smi_text_failure_says_why() -> None:
    with pytest.raises(P.ParseError, match="Driver/library version mismatch"):
        P.parse_nvidia_smi_text((DATA / "nvidia-smi-failed.txt").read_text())


def test_query_csv() -> None:
    rows = P.parse_nvidia_smi_query_csv((R575 / "nvidia-smi-query.csv").read_text())
    assert len(rows) == 8 and rows[0]["compute_cap"] == "9.0" and rows[0]["memory.total"] == "143771 MiB"


def test_topo_nvswitch_with_nics_and_ansi_header() -> None:
    t = P.parse_topo((DATA / "nvidia-smi-topo-h100-nic.txt").read_text())
    assert t["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert t["matrix"][0] == ["X", "NV18", "NV18", "NV18"]
    assert t["gpu_nic"]["GPU2"] == ["SYS", "PXB"]
    assert t["nics"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1"}
    assert t["affinity"]["GPU3"]["CPU Affinity"] == "56-111,168-223"
    assert P.nvlink_counts_from_topo(t) == [18, 18, 18, 18]


def test_topo_pcie_only_and_incident() -> None:
    t = P.parse_topo((DATA / "nvidia-smi-topo-pcie.txt").read_text())
    assert t["matrix"] == [["X", "SYS"], ["SYS", "X"]] and P.nvlink_counts_from_topo(t) == [None, None]
    big = P.parse_topo((R575 / "nvidia-smi-topo.txt").read_text())
    assert len(big["matrix"]) == 8 and big["nics"]["NIC7"] == "mlx5_7"
    with pytest.raises(P.ParseError):
        P.parse_topo("No devices were found")


def test_nvlink_status() -> None:
    s = P.parse_nvlink_status((DATA / "nvidia-smi-nvlink-s.txt").read_text())
    assert s == {0: {"active": 2, "inactive": 1}, 1: {"active": 0, "inactive": 2}}


def test_proc_driver_version_formats() -> None:
    new = P.parse_proc_driver_version((R575 / "proc-driver-nvidia-version.txt").read_text())
    old = P.parse_proc_driver_version((DATA / "proc-driver-nvidia-version-legacy.txt").read_text())
    assert new == {"kernel_module_version": "575.57.08", "open_kernel_module": True}
    assert old["kernel_module_version"] == "535.104.05" and not old["open_kernel_module"]


def test_host_files() -> None:
    osr = P.parse_os_release((R575 / "os-release").read_text())
    assert osr["PRETTY_NAME"] == "Ubuntu 24.04.2 LTS" and osr["VERSION_ID"] == "24.04"
    u = P.parse_uname((R575 / "uname.txt").read_text())
    assert u["kernel"] == "6.8.0-79-generic" and u["hostname"] == "gpu-node-17" and u["machine"] == "x86_64"
    assert P.parse_meminfo("MemTotal:       2113295560 kB\n") == 2113295560 * 1024
    assert P.parse_uptime("1814402.37 401234567.12\n") == pytest.approx(1814402.37)
    assert P.parse_df_bytes((R575 / "shm.txt").read_text()) == 1056647780 * 1024


def test_image_inspect() -> None:
    img = P.parse_image_inspect((R575 / "image-inspect.json").read_text())
    assert img["ref"] == "vllm/vllm-openai:kimi-k3" and img["digest"].startswith("sha256:")
    assert img["cuda_version"] == "13.0.2" and img["nv_cuda_compat_package"] == "cuda-compat-13-0"
    assert img["nvidia_require_cuda"].startswith("cuda>=13.0 brand=unknown,driver>=535,driver<536")
    assert "brand=nvidia,driver>=575,driver<576" in img["nvidia_require_cuda"]
    assert img["nvidia_disable_require"] is False and img["entrypoint"] == ["vllm", "serve"]
    assert img["vllm_env"] == {"VLLM_USAGE_SOURCE": "production-docker-image"}


def test_container_inspect() -> None:
    c = P.parse_container_inspect((R575 / "container-inspect.json").read_text())
    assert c["state"] == "exited" and c["exit_code"] == 1 and c["oom_killed"] is False
    assert c["shm_size_bytes"] == 67108864 and c["ipc_mode"] == "host"
    assert c["device_requests"][0]["Capabilities"] == [["gpu"]]
    assert "--tensor-parallel-size" in c["command"] and c["entrypoint"] == ["vllm", "serve"]
    with pytest.raises(P.ParseError, match="empty list"):
        P.parse_container_inspect("[]")
    with pytest.raises(P.ParseError):
        P.parse_container_inspect("Error: No such object: kimi-k3")


def test_docker_version_info_with_and_without_daemon() -> None:
    v = P.parse_docker_version((R575 / "docker-version.json").read_text())
    assert v["server_version"] == "28.3.3" and v["server_reachable"]
    info = P.parse_docker_info((R575 / "docker-info.json").read_text())
    assert info["runtimes"] == ["io.containerd.runc.v2", "nvidia", "runc"] and info["default_runtime"] == "runc"
    nod = P.parse_docker_info((DATA / "docker-info-no-daemon.json").read_text())
    assert nod["runtimes"] == [] and "Cannot connect" in nod["server_errors"][0]


def test_toolkit_versions() -> None:
    assert P.parse_tool_version((R575 / "nvidia-ctk-version.txt").read_text()) == "1.17.8"
    assert P.parse_tool_version((R575 / "nvidia-container-cli-version.txt").read_text()) == "1.17.8"


def test_env_dumps() -> None:
    assert P.parse_env_dump("A=1\nexport B='two words'\nnot a pair\n") == {"A": "1", "B": "two words"}
    assert P.parse_env_dump("A=1\0B=x=y\0") == {"A": "1", "B": "x=y"}


def test_collect_env() -> None:
    c = P.parse_collect_env((DATA / "collect_env-excerpt.txt").read_text())
    assert c["vllm_version"] == "0.24.0" and c["torch_version"] == "2.9.0+cu130"
    assert c["torch_cuda"] == "13.0" and c["driver_version"] == "575.57.08" and c["gpu_models"] is None
    assert c["env"]["NCCL_CUMEM_ENABLE"] == "0"


def test_vllm_version_and_commit_from_logs() -> None:
    assert P.vllm_version_from_log((R575 / "container-logs.txt").read_text()) == "0.27.1"
    assert (
        P.vllm_version_from_log("INFO 04-01 18:02:08 [api_server.py:1043] vLLM API server version 0.8.5.post1")
        == "0.8.5.post1"
    )
    assert P.vllm_version_from_log("INFO Initializing an LLM engine (v0.5.0.post1) with config") == "0.5.0.post1"
    assert P.commit_from_version("0.6.3.post2.dev308+gb489fc3c") == "b489fc3c"


def test_split_command_with_continuations() -> None:
    argv = P.split_command("vllm serve m \\\n  --tensor-parallel-size 8 \\\n  --api-key 'a b'")
    assert argv == ["vllm", "serve", "m", "--tensor-parallel-size", "8", "--api-key", "a b"]
    assert P.split_command("vllm serve 'unterminated") == ["vllm", "serve", "'unterminated"]
