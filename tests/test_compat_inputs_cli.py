"""inputs_from_evidence on a hand-made evidence.json, the one-call report, the chart and the CLI."""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json

import pytest

from vllm_runbooks.cli.compat import register
from vllm_runbooks.compat import VERDICTS, check, compat_chart, inputs_from_evidence

TODAY = dt.date(2026, 11, 29)
REQ = "cuda>=13.0 brand=tesla,driver>=570,driver<571 brand=nvidia,driver>=570,driver<571"


def ok(value):
    return {"status": "ok", "reason": None, "value": value, "artefacts": [], "duration_s": 0.01}


EVIDENCE = {
    "schema": "evidence",
    "schema_version": 1,
    "source": "local",
    "collected_at": "2026-11-29T21:00:00Z",
    "items": {
        "nvidia": ok(
            {
                "driver_version": "575.57.08",
                "driver_branch": "r575",
                "cuda_driver_version": "12.9",
                "cuda_driver_version_int": 12090,
                "gpus": [
                    {
                        "index": i,
                        "name": "NVIDIA H200",
                        "compute_capability": "9.0",
                        "brand": "NVIDIA",
                        "brand_class": "datacenter",
                        "nvlink_active_links": 18,
                    }
                    for i in range(8)
                ],
            }
        ),
        "image": ok(
            {
                "ref": "vllm/vllm-openai:kimi-k3",
                "cuda_version": "13.0.1",
                "nvidia_require_cuda": REQ,
                "nv_cuda_compat_package": "cuda-compat-13-0",
                "nvidia_disable_require": False,
                "env": {"CUDA_VERSION": "13.0.1", "NVIDIA_REQUIRE_CUDA": REQ},
            }
        ),
        "launch": ok(
            {
                "argv": [
                    "vllm",
                    "serve",
                    "moonshotai/Kimi-K3",
                    "-tp",
                    "8",
                    "--tool-call-parser",
                    "kimi_k2",
                    "--enable-auto-tool-choice",
                ],
                "env": {"HF_TOKEN": "<redacted>"},
                "origin": "parameter",
            }
        ),
        "interconnect": ok({"nccl_env": {}, "rdma_devices": ["mlx5_0"], "nvlink": "active", "mnnvl": False}),
        "container": {"status": "unavailable", "reason": "docker not found", "value": None, "artefacts": []},
    },
    "artefacts": {},
}


def test_inputs_from_evidence_reads_contract():
    i = inputs_from_evidence(EVIDENCE)
    assert i.image_cuda_version == "13.0.1" and i.driver_version == "575.57.08"
    assert i.driver_cuda_version == "12.9" and i.gpu_count == 8 and i.brand_raw == "NVIDIA"
    assert i.compute_capability == "9.0" and i.brand_class == "datacenter"
    assert i.nvidia_require_cuda == REQ and i.image_compat_package == "cuda-compat-13-0"
    assert i.compat_libs is False  # env seen, no VLLM_ENABLE_CUDA_COMPATIBILITY, no /compat on LD_LIBRARY_PATH
    assert i.model_profile == "kimi_k3"  # guessed from the model id
    assert i.sources["driver_version"] == "nvidia.driver_version"
    assert i.launch_argv[:2] == ["vllm", "serve"] and i.rdma_devices == ["mlx5_0"]


def test_inputs_from_evidence_degrades():
    ev = copy.deepcopy(EVIDENCE)
    ev["items"]["nvidia"] = {"status": "unavailable", "reason": "no GPU", "value": None}
    del ev["items"]["image"]["value"]["cuda_version"]
    i = inputs_from_evidence(ev)
    assert i.driver_version is None and i.image_cuda_version == "13.0.1"  # from image.env.CUDA_VERSION
    assert i.sources["image_cuda_version"] == "image.env.CUDA_VERSION"
    r = check(ev, today=TODAY)
    assert r.verdict == "unknown" and "driver_version" in r.decision.missing


def test_compat_env_detected():
    ev = copy.deepcopy(EVIDENCE)
    ev["items"]["launch"]["value"]["env"]["VLLM_ENABLE_CUDA_COMPATIBILITY"] = "1"
    assert inputs_from_evidence(ev).compat_libs is True
    ev["items"]["launch"]["value"]["env"] = {"LD_LIBRARY_PATH": "/usr/local/cuda-13.0/compat:/usr/lib"}
    ev["items"]["image"]["value"]["env"] = {}
    assert inputs_from_evidence(ev).compat_libs is True


def test_name_derivation_when_evidence_lacks_cc():
    ev = copy.deepcopy(EVIDENCE)
    for g in ev["items"]["nvidia"]["value"]["gpus"]:
        g["compute_capability"] = None
        g["brand_class"] = None
    i = inputs_from_evidence(ev)
    assert i.compute_capability == "9.0" and "compute_capability" in i.derived


def test_check_end_to_end_seed():
    r = check(
        EVIDENCE,
        log_findings=[
            {
                "label": "driver_too_old",
                "line": 40,
                "text": "The NVIDIA driver on your system is too old (found version 12090)",
            }
        ],
        constraints={"maintenance_window_available": True, "shared_nodes_can_stop": True},
        want_prefix_caching=True,
        today=TODAY,
    )
    assert r.verdict == "driver_too_old"
    # The image's brand/driver clauses do not cover r575 in this (constructed) expression: refused.
    assert r.decision.container_start.will_start is False
    assert r.decision.log_checks[0].relation == "confirms"
    assert r.remediation.path == "upgrade_driver"
    assert r.lint.by_flag("--tool-call-parser")[0].severity == "error"
    h = r.key_figures()
    assert r.verdict == "driver_too_old" and h["remediation"] == "upgrade_driver" and h["lint_errors"] >= 1
    assert "Recommended path" in r._repr_html_()
    json.dumps(r.to_dict())  # scrap-able


def test_chart_marks_host_and_uses_verdicts():
    i = inputs_from_evidence(EVIDENCE)
    fig = compat_chart(i, today=TODAY)
    heat, host = fig.data[0], fig.data[1]
    assert host.x == ("R575",) and host.y == ("CUDA 13.0",)
    col = list(heat.x).index("R575")
    row = list(heat.y).index("CUDA 13.0")
    assert VERDICTS[int(heat.z[row][col] - 0.5)] == "driver_too_old"
    col580 = list(heat.x).index("R580")
    assert VERDICTS[int(heat.z[row][col580] - 0.5)] == "compatible"
    with_fc = compat_chart(i, today=TODAY, compat_libs=True).data[0]
    assert VERDICTS[int(with_fc.z[row][list(heat.x).index("R570")] - 0.5)] == "compatible_forward_compat"
    assert VERDICTS[int(with_fc.z[row][col] - 0.5)] == "driver_too_old"  # R575 NFB
    html = fig.to_html(include_plotlyjs=True, full_html=False)
    assert 'src="https://cdn.plot.ly' not in html and len(html) > 1_000_000  # offline: plotly.js inlined


def _cli(argv, capsys):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(argv)
    rc = args.func(args)
    return rc, capsys.readouterr()


@pytest.mark.parametrize(
    "argv, verdict",
    [
        (["--image-cuda", "13.0", "--driver", "575.57.08", "--gpu", "NVIDIA H200"], "driver_too_old"),
        (["--image-cuda", "13.0", "--driver", "575.57.08", "--gpu", "NVIDIA H200", "--compat-libs"], "driver_too_old"),
        (
            [
                "--image-cuda",
                "13.0",
                "--driver",
                "570.195.03",
                "--compute-capability",
                "9.0",
                "--brand",
                "datacenter",
                "--compat-libs",
            ],
            "compatible_forward_compat",
        ),
        (
            [
                "--image-cuda",
                "13.0",
                "--driver",
                "570.195.03",
                "--gpu",
                "NVIDIA H200",
                "--brand",
                "geforce",
                "--compat-libs",
            ],
            "driver_too_old",
        ),
        (["--image-cuda", "12.9", "--driver", "570.195.03", "--gpu", "NVIDIA H200"], "compatible_minor_version"),
        (["--image-cuda", "13.0", "--gpu", "NVIDIA H200"], "unknown"),
    ],
)
def test_cli_json(argv, verdict, capsys):
    rc, out = _cli(["check-compat", *argv, "--format", "json"], capsys)
    assert rc == 0
    data = json.loads(out.out)
    assert data["verdict"] == verdict and data["reasons"]


def test_cli_evidence_dir(tmp_path, capsys):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "evidence.json").write_text(json.dumps(EVIDENCE))
    rc, out = _cli(["check-compat", "--evidence", str(tmp_path), "--format", "json"], capsys)
    assert rc == 0 and json.loads(out.out)["verdict"] == "driver_too_old"
    # flags override evidence
    rc, out = _cli(["check-compat", "--evidence", str(tmp_path), "--driver", "580.95.05", "--format", "json"], capsys)
    assert json.loads(out.out)["verdict"] == "compatible"
    rc, out = _cli(["check-compat", "--evidence", str(tmp_path)], capsys)
    assert rc == 0 and out.out.startswith("verdict: driver_too_old")


def test_cli_missing_evidence_exit_2(tmp_path, capsys):
    rc, out = _cli(["check-compat", "--evidence", str(tmp_path / "nope"), "--format", "json"], capsys)
    assert rc == 2 and "no evidence file" in out.err and "Traceback" not in out.err and out.out == ""
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "evidence.json").write_text("{not json")
    rc, out = _cli(["check-compat", "--evidence", str(tmp_path)], capsys)
    assert rc == 2 and "cannot read" in out.err
