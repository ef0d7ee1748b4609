"""Launch parsing and lint against the model profiles."""

from __future__ import annotations

import pytest

from vllm_runbooks.compat import lint_launch, parse_launch

KIMI_OK = (
    "vllm serve moonshotai/Kimi-K3 -tp 8 --tool-call-parser kimi_k3 --reasoning-parser=kimi_k3 "
    "--enable-auto-tool-choice --enable-prefix-caching"
)


@pytest.mark.parametrize(
    "argv, entry, model, flag, value",
    [
        ("vllm serve m/x --tensor-parallel-size=4", "vllm serve", "m/x", "--tensor-parallel-size", "4"),
        ("vllm serve m/x -tp 8", "vllm serve", "m/x", "--tensor-parallel-size", "8"),
        (
            ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m/x", "--max_model_len", "4096"],
            "api_server",
            "m/x",
            "--max-model-len",
            "4096",
        ),
        (
            "/usr/bin/python -m vllm.entrypoints.openai.api_server --model=m/x --enable-expert-parallel -dp 2",
            "api_server",
            "m/x",
            "--data-parallel-size",
            "2",
        ),
        (
            ["m/x", "--enable-auto-tool-choice", "--tool-call-parser", "kimi_k3"],
            None,
            "m/x",
            "--tool-call-parser",
            "kimi_k3",
        ),
        (
            "VLLM_X=1 vllm serve m/x --enable-prefix-caching --served-model-name a",
            "vllm serve",
            "m/x",
            "--served-model-name",
            "a",
        ),
    ],
)
def test_parse_launch(argv, entry, model, flag, value):
    p = parse_launch(argv)
    assert p.entry == entry and p.model == model
    assert p.get(flag) == value


def test_boolean_flag_does_not_swallow_model():
    p = parse_launch("vllm serve --enable-auto-tool-choice m/x")
    assert p.get("--enable-auto-tool-choice") is True and p.model == "m/x"


def _sev(report, flag):
    return [f.severity for f in report.by_flag(flag)]


def test_kimi_clean_launch_has_no_errors():
    r = lint_launch(KIMI_OK, profile="kimi_k3", gpu_count=8, nvlink="active", mnnvl=False, want_prefix_caching=True)
    assert r.errors == [], [f.message for f in r.errors]
    assert _sev(r, "--tool-call-parser") == ["ok"]


@pytest.mark.parametrize(
    "argv, flag, severity",
    [
        # wrong parser (K2's) for K3
        (KIMI_OK.replace("--tool-call-parser kimi_k3", "--tool-call-parser kimi_k2"), "--tool-call-parser", "error"),
        (KIMI_OK.replace(" --reasoning-parser=kimi_k3", ""), "--reasoning-parser", "error"),
        (KIMI_OK.replace(" --enable-auto-tool-choice", ""), "--enable-auto-tool-choice", "error"),
        # caching wanted, but off by default for Kimi K3
        (KIMI_OK.replace(" --enable-prefix-caching", ""), "--enable-prefix-caching", "warning"),
        # TP beyond the GPUs on the host
        (KIMI_OK.replace("-tp 8", "-tp 16"), "--tensor-parallel-size", "error"),
        # below the recipe minimum of 8 for TP
        (KIMI_OK.replace("-tp 8", "-tp 4"), "--tensor-parallel-size", "error"),
        (KIMI_OK + " --all2all-backend bogus", "--all2all-backend", "error"),
    ],
)
def test_kimi_lint_findings(argv, flag, severity):
    r = lint_launch(argv, profile="kimi_k3", gpu_count=8, nvlink="active", mnnvl=False, want_prefix_caching=True)
    assert severity in _sev(r, flag), [(f.severity, f.flag, f.message) for f in r.findings]
    assert all(f.source for f in r.by_flag(flag) if f.severity in ("error", "warning"))


DEP = (
    "vllm serve moonshotai/Kimi-K3 -tp 8 -dp 2 --enable-expert-parallel --nnodes 2 --tool-call-parser kimi_k3 "
    "--reasoning-parser kimi_k3 --enable-auto-tool-choice"
)


@pytest.mark.parametrize(
    "extra, inter, expected_backend, severity",
    [
        ("", dict(rdma_devices=["mlx5_0"], nvlink="active", mnnvl=False), "deepep_v2", "warning"),
        (" --all2all-backend deepep_v2", dict(rdma_devices=["mlx5_0"], nvlink="active", mnnvl=False), None, "ok"),
        (
            " --all2all-backend deepep_v2",
            dict(rdma_devices=[], nvlink="active", mnnvl=True),
            "flashinfer_nvlink_one_sided",
            "warning",
        ),
        (
            " --all2all-backend flashinfer_nvlink_one_sided",
            dict(rdma_devices=[], nvlink="active", mnnvl=True),
            None,
            "ok",
        ),
    ],
)
def test_all2all_matches_interconnect(extra, inter, expected_backend, severity):
    r = lint_launch(DEP + extra, profile="kimi_k3", gpu_count=8, **inter)
    found = r.by_flag("--all2all-backend")
    assert severity in [f.severity for f in found], [(f.severity, f.message) for f in found]
    if expected_backend:
        assert any(f.suggestion == f"--all2all-backend {expected_backend}" for f in found)


def test_nvl_env_checked_on_mnnvl():
    env = {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1"}
    r = lint_launch(
        DEP + " --all2all-backend flashinfer_nvlink_one_sided",
        profile="kimi_k3",
        gpu_count=4,
        env=env,
        mnnvl=True,
        nvlink="active",
    )
    assert _sev(r, "NCCL_NVLS_ENABLE") == ["warning"]
    assert _sev(r, "NCCL_MNNVL_ENABLE") == ["ok"]


def test_dep_without_expert_parallel_warns():
    r = lint_launch(
        DEP.replace(" --enable-expert-parallel", ""),
        profile="kimi_k3",
        gpu_count=8,
        rdma_devices=["mlx5_0"],
        nvlink="active",
        mnnvl=False,
    )
    assert "warning" in _sev(r, "--enable-expert-parallel")


def test_generic_profile_auto_tool_choice_needs_parser():
    r = lint_launch("vllm serve m/x --enable-auto-tool-choice", profile="generic_vllm", gpu_count=1)
    assert "error" in _sev(r, "--tool-call-parser")
    r2 = lint_launch("vllm serve m/x", profile="generic_vllm", gpu_count=1)
    assert r2.errors == []


def test_no_launch_is_reported_not_raised():
    r = lint_launch(None, profile="kimi_k3")
    assert r.warnings and "nothing to lint" in r.warnings[0].message
    assert "Launch lint" in r._repr_html_()
