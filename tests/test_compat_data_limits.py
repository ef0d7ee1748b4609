"""Where the data stops, the verdict says `unknown` and names the missing fact; bad input is named as such.

Review findings 7-9: a CUDA version or driver beyond the data, a malformed driver version, an
unparsable image CUDA / compute capability. Every row here failed on the code before the fix.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json

import pytest

from vllm_runbooks.cli.compat import register
from vllm_runbooks.compat import CompatInputs, check_require, decide, load_facts, recommend
from vllm_runbooks.compat.facts import (
    parse_compute_capability,
    parse_cuda_version,
    parse_driver_version,
    parse_version,
)

TODAY = dt.date(2026, 11, 29)
H200 = "NVIDIA H200"


def _decide(**kw):
    return decide(CompatInputs(**kw), today=TODAY)


def _text(d) -> str:
    return "\n".join(d.reasons).lower()


# (id, inputs, verdict, substrings of `missing` entries, substrings that must be in reasons,
#  substrings that must NOT be in reasons)
CASES = [
    # --- finding 7: beyond the data ---------------------------------------------------------------
    (
        "cu140_driver_beyond_table",
        dict(image_cuda_version="14.0", driver_version="700.10.01", gpu_name=H200),
        "unknown",
        ["fact: minimum Linux driver for CUDA 14.0", "driver_cuda_version"],
        ["newer than every row of the toolkit table", "no architecture facts for CUDA 14.x"],
        ["offers CUDA 13.3", "CC 9.0 is supported by CUDA 14.0."],
    ),
    # A driver the table covers still says nothing about a CUDA major the table lacks.
    (
        "cu140_covered_driver",
        dict(image_cuda_version="14.0", driver_version="575.57.08", gpu_name=H200),
        "unknown",
        ["fact: minimum Linux driver for CUDA 14.0"],
        ["no minimum driver for CUDA 14.0"],
        [],
    ),
    # Evidence from the driver itself (NVML / nvidia-smi) decides native support where the table is silent;
    # the architecture side is still silent for 14.x.
    (
        "cu140_driver_reports_140",
        dict(image_cuda_version="14.0", driver_version="700.10.01", driver_cuda_version="14.0", gpu_name=H200),
        "unknown",
        ["fact: architecture support in CUDA 14.x"],
        ["The driver reports CUDA 14.0"],
        ["CC 9.0 is supported by CUDA 14.0."],
    ),
    (
        "cu140_driver_reports_130",
        dict(
            image_cuda_version="14.0",
            driver_version="700.10.01",
            driver_cuda_version="13.0",
            gpu_name=H200,
            compat_libs=False,
        ),
        "driver_too_old",
        [],
        ["offers CUDA 13.0 (reported by the driver", "The driver reports CUDA 13.0"],
        ["13.3"],
    ),
    (
        "cu140_driver_reports_130_compat",
        dict(
            image_cuda_version="14.0",
            driver_version="700.10.01",
            driver_cuda_version="13.0",
            gpu_name=H200,
            compat_libs=True,
        ),
        "unknown",
        ["fact: forward-compatibility matrix row for cuda-compat-14-0"],
        [],
        [],
    ),
    # A published minimum is a minimum: a newer driver runs CUDA 13.0; its own CUDA stays unnamed.
    (
        "cu130_driver_beyond_table",
        dict(image_cuda_version="13.0", driver_version="700.10.01", gpu_name=H200),
        "compatible",
        [],
        ["the driver's own CUDA version is unknown"],
        ["offers CUDA 13.3"],
    ),
    # --- finding 8: malformed driver, one driver-CUDA figure ---------------------------------------
    (
        "bare_branch_driver",
        dict(image_cuda_version="13.0", driver_version="580", gpu_name=H200, nvidia_require_cuda="cuda>=13.0"),
        "unknown",
        ["driver_version"],
        ["could not parse driver_version '580'"],
        ["12.9"],
    ),
    (
        "r580_below_first_row",
        dict(image_cuda_version="13.0", driver_version="580.10.01", gpu_name=H200, nvidia_require_cuda="cuda>=13.0"),
        "compatible_minor_version",
        [],
        ["below the first toolkit row of its branch R580"],
        ["12.9"],
    ),
    # --- finding 9: bad input named as such ----------------------------------------------------------
    (
        "image_major_only",
        dict(image_cuda_version="13", driver_version="580.65.06", gpu_name=H200),
        "unknown",
        ["image_cuda_version"],
        ["could not parse image_cuda_version '13': give major.minor"],
        [],
    ),
    (
        "image_garbage_no_gpu",
        dict(image_cuda_version="latest", driver_version="580.65.06"),
        "unknown",
        ["image_cuda_version"],
        ["could not parse image_cuda_version 'latest'"],
        [],
    ),
    (
        "nothing_given",
        dict(),
        "unknown",
        ["image_cuda_version", "driver_version"],
        ["no image CUDA version given", "no host driver version given"],
        [],
    ),
    (
        "cu130_tag",
        dict(image_cuda_version="cu130", driver_version="580.65.06", gpu_name=H200),
        "compatible",
        [],
        ["read image CUDA 'cu130' as CUDA 13.0"],
        [],
    ),
    (
        "cu129_tag",
        dict(image_cuda_version="cu129", driver_version="570.195.03", gpu_name=H200),
        "compatible_minor_version",
        [],
        ["read image CUDA 'cu129' as CUDA 12.9"],
        [],
    ),
    (
        "cu128_tag",
        dict(image_cuda_version="cu128", driver_version="570.195.03", gpu_name=H200),
        "compatible",
        [],
        ["read image CUDA 'cu128' as CUDA 12.8"],
        [],
    ),
    (
        "cc_garbage_gpu_known",
        dict(image_cuda_version="13.0", driver_version="580.65.06", gpu_name=H200, compute_capability="abc"),
        "compatible",
        [],
        ["could not parse compute_capability 'abc'", "Fell back to CC 9.0 from GPU name"],
        ["no GPU name matched"],
    ),
    (
        "cc_garbage_no_gpu",
        dict(image_cuda_version="13.0", driver_version="580.65.06", compute_capability="abc"),
        "unknown",
        ["compute_capability"],
        ["could not parse compute_capability 'abc'"],
        ["no GPU name matched"],
    ),
    # The fallback feeds the architecture check: V100 by name is below CUDA 13's floor.
    (
        "cc_garbage_v100",
        dict(image_cuda_version="13.0", driver_version="580.95.05", gpu_name="Tesla V100", compute_capability="sm?"),
        "arch_unsupported",
        [],
        ["Fell back to CC 7.0"],
        [],
    ),
]


@pytest.mark.parametrize("case_id, kw, verdict, missing, has, lacks", CASES, ids=[c[0] for c in CASES])
def test_data_limits_table(case_id, kw, verdict, missing, has, lacks):
    d = _decide(**kw)
    text = _text(d)
    assert d.verdict == verdict, (case_id, d.reasons)
    assert d.reasons, "never an empty reasons list"
    for m in missing:
        assert any(m in x for x in d.missing), (m, d.missing)
    for s in has:
        assert s.lower() in text, (s, d.reasons)
    for s in lacks:
        assert s.lower() not in text, (s, d.reasons)
    if d.verdict == "unknown":
        assert d.missing, "unknown always names what is missing"
    for f in d.facts:
        assert f.source.startswith("http"), f


def test_tag_reads_like_dotted_version():
    for tag, dotted in (("cu130", "13.0"), ("cu129", "12.9"), ("cu128", "12.8")):
        a = _decide(image_cuda_version=tag, driver_version="575.57.08", gpu_name=H200)
        b = _decide(image_cuda_version=dotted, driver_version="575.57.08", gpu_name=H200)
        assert a.verdict == b.verdict
        assert a.inputs.compat_package_name == b.inputs.compat_package_name


@pytest.mark.parametrize(
    "driver, dcuda, expected_cuda",
    [
        ("575.57.08", None, "12.9"),  # covered branch: derived
        ("575.57.08", "12.8", "12.8"),  # evidence wins over derivation
        ("700.10.01", None, None),  # beyond the table
        ("565.57.01", None, None),  # branch without a row of its own
        ("580.10.01", None, None),  # below its branch's first row
        ("580", None, None),  # malformed
    ],
)
def test_one_driver_cuda_figure(driver, dcuda, expected_cuda):
    d = _decide(
        image_cuda_version="13.0",
        driver_version=driver,
        driver_cuda_version=dcuda,
        gpu_name=H200,
        nvidia_require_cuda="cuda>=13.0",
    )
    shown = d.evidence_used.get("driver_cuda_version")
    assert (shown.split()[0] if shown else None) == expected_cuda
    assert d.container_start is not None
    assert d.container_start.properties["cuda"] == expected_cuda
    if expected_cuda is None:
        assert d.container_start.will_start is None
        assert "host CUDA version" in d.container_start.message
    if d.verdict in ("compatible", "compatible_minor_version"):
        # The verdict never stands beside a refusal computed from a different driver-CUDA figure.
        assert d.container_start.will_start is not False or expected_cuda is not None


def test_evidence_vs_table_disagreement_is_said():
    d = _decide(image_cuda_version="13.0", driver_version="575.57.08", driver_cuda_version="12.8", gpu_name=H200)
    assert any("evidence's driver CUDA 12.8 is used" in r and "12.9" in r for r in d.reasons)
    assert d.reasons[0].startswith("The host driver 575.57.08 offers CUDA 12.8 (reported by the driver")


@pytest.mark.parametrize(
    "driver, expected",
    [
        ("580", None),
        ("700.10.01", None),
        ("580.10.01", None),
        ("575.57.08", False),  # 12.9 from the table
        ("610.43.02", True),  # 13.3 (SECONDARY row) from the table
    ],
)
def test_require_standalone_derivation(driver, expected):
    r = check_require("cuda>=13.0", driver_version=driver, driver_cuda_version=None)
    assert r.will_start is expected, r.message
    if driver == "580":
        assert "could not parse driver_version '580'" in r.message


def test_require_keeps_published_driver_spelling():
    r = check_require("cuda>=13.0", driver_version="575.57.08", driver_cuda_version="12.9")
    assert r.properties["driver"] == "575.57.08" and "driver=575.57.08" in r.message


@pytest.mark.parametrize(
    "text, version, note",
    [
        ("13.0", (13, 0), ""),
        ("13.0.1", (13, 0, 1), ""),
        (" 12.9 ", (12, 9), ""),
        ("CUDA 13.0", (13, 0), ""),
        ("cu130", (13, 0), "cu130 = 13.0"),
        ("cu118", (11, 8), "read image CUDA"),
        ("13", None, "give major.minor"),
        ("cu13", None, "could not parse"),
        ("13.0.1.5", None, "could not parse"),
        (None, None, "no image CUDA version given"),
    ],
)
def test_parse_cuda_version(text, version, note):
    v, n = parse_cuda_version(text)
    assert v == version
    assert note in n


@pytest.mark.parametrize(
    "text, ok",
    [
        ("575.57.08", True),
        ("570.26", True),
        ("580", False),
        ("r580", False),
        ("580.x", False),
        ("", False),
    ],
)
def test_parse_driver_version(text, ok):
    v, note = parse_driver_version(text)
    assert (v is not None) is ok
    if not ok and text:
        assert "could not parse" in note


@pytest.mark.parametrize("text, ok", [("9.0", True), ("12.0", True), ("abc", False), ("9", False)])
def test_parse_compute_capability(text, ok):
    assert (parse_compute_capability(text)[0] is not None) is ok


@pytest.mark.parametrize(
    "driver, cuda",
    [
        ("575.57.08", (12, 9)),
        ("570.195.03", (12, 8)),
        ("580.95.05", (13, 0)),
        ("610.43.02", (13, 3)),
        ("700.10.01", None),
        ("565.57.01", None),
        ("600.10.01", None),
        ("580.10.01", None),
    ],
)
def test_driver_cuda_only_where_branch_covered(driver, cuda):
    got, row, why = load_facts().driver_cuda(parse_version(driver))
    assert got == cuda, why
    assert (row is None) is (cuda is None)
    assert why


def test_arch_claims_stop_at_data_majors():
    majors = load_facts().data_cuda_majors()
    assert 13 in majors and 14 not in majors
    # Volta's last CUDA is 12.x (a fact): that still rules out 14.0.
    d = _decide(
        image_cuda_version="14.0", driver_version="700.10.01", driver_cuda_version="14.0", gpu_name="Tesla V100"
    )
    assert d.verdict == "arch_unsupported"
    assert "floor" not in _text(d), "CUDA 13's floor is not applied to CUDA 14"


def test_missing_fact_gets_a_way_to_add_it():
    d = _decide(image_cuda_version="14.0", driver_version="700.10.01", gpu_name=H200)
    rem = recommend(d, today=TODAY)
    assert rem.path == "collect_evidence"
    assert any(p.startswith("fact: ") and "data/cuda_compat.yaml" in p for p in rem.prerequisites)
    assert any(p.startswith("driver_cuda_version: ") for p in rem.prerequisites)


# ---- CLI ---------------------------------------------------------------------------------------


def _cli(argv, capsys):
    parser = argparse.ArgumentParser(prog="vllm-runbooks")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(["check-compat", *argv, "--format", "json"])
    rc = args.func(args)
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "argv, verdict, reason",
    [
        (["--image-cuda", "14.0", "--driver", "700.10.01", "--gpu", H200], "unknown", "newer than every row"),
        (
            ["--image-cuda", "13.0", "--require-cuda", "cuda>=13.0", "--driver", "580", "--gpu", H200],
            "unknown",
            "could not parse driver_version '580'",
        ),
        (["--image-cuda", "13", "--driver", "580.65.06"], "unknown", "could not parse image_cuda_version '13'"),
        (["--image-cuda", "cu130", "--driver", "580.65.06", "--gpu", H200], "compatible", "'cu130' as CUDA 13.0"),
        (
            ["--image-cuda", "13.0", "--driver", "580.65.06", "--gpu", H200, "--compute-capability", "abc"],
            "compatible",
            "could not parse compute_capability 'abc'",
        ),
    ],
)
def test_cli_findings(argv, verdict, reason, capsys):
    rc, out = _cli(argv, capsys)
    assert rc == 0
    assert out["verdict"] == verdict and out["reasons"]
    assert any(reason.lower() in r.lower() for r in out["reasons"]), out["reasons"]


def test_cli_driver_override_drops_evidence_driver_cuda(tmp_path, capsys):
    ev = {
        "schema": "evidence",
        "schema_version": 1,
        "items": {
            "nvidia": {
                "status": "ok",
                "value": {
                    "driver_version": "575.57.08",
                    "cuda_driver_version": "12.9",
                    "gpus": [{"name": H200, "compute_capability": "9.0"}],
                },
            },
            "image": {"status": "ok", "value": {"cuda_version": "13.0.1"}},
        },
    }
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "evidence.json").write_text(json.dumps(copy.deepcopy(ev)))
    rc, out = _cli(["--evidence", str(tmp_path)], capsys)
    assert out["evidence_used"]["driver_cuda_version"].startswith("12.9 (reported by the driver")
    # The evidence's 12.9 belongs to driver 575.57.08, not to the driver given on the command line.
    rc, out = _cli(["--evidence", str(tmp_path), "--driver", "580.95.05"], capsys)
    assert out["verdict"] == "compatible"
    assert out["evidence_used"]["driver_cuda_version"].startswith("13.0 (derived from the toolkit table")
