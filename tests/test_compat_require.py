"""NVIDIA_REQUIRE_CUDA evaluation, as the NVIDIA Container Toolkit does it."""

from __future__ import annotations

import pytest

from vllm_runbooks.compat import check_require

# Constructed per the data's official_image_env_examples pattern for nvidia/cuda 13.0.2:
# cuda>=13.0, then brand=<b>,driver>=B,driver<B+1 for B in 535, 550, 565, 570, 575 (no geforce brands).
BRANDS = [
    "unknown",
    "grid",
    "tesla",
    "nvidia",
    "quadro",
    "quadrortx",
    "nvidiartx",
    "vapps",
    "vpc",
    "vcs",
    "vws",
    "cloudgaming",
]
REQ_130 = "cuda>=13.0 " + " ".join(
    f"brand={b},driver>={br},driver<{br + 1}" for br in (535, 550, 565, 570, 575) for b in BRANDS
)

CASES = [
    # (driver, driver cuda, brand_raw, brand_class, expected will_start, satisfied-by contains)
    ("575.57.08", "12.9", "Tesla", None, True, "brand=tesla,driver>=575"),
    ("575.57.08", "12.9", "NVIDIA", None, True, "brand=nvidia,driver>=575"),
    ("575.57.08", "12.9", "GeForce", None, False, None),
    ("580.95.05", "13.0", "GeForce", None, True, "cuda>=13.0"),
    ("560.35.03", "12.6", "Tesla", None, False, None),
    ("570.195.03", "12.8", None, "datacenter", True, "driver>=570"),  # tesla and nvidia both admitted
    ("570.195.03", "12.8", None, "geforce", False, None),
    ("570.195.03", "12.8", None, None, None, None),  # brand unknown and needed
]


@pytest.mark.parametrize("driver, dcuda, brand, cls, expected, sat", CASES)
def test_require_table(driver, dcuda, brand, cls, expected, sat):
    r = check_require(REQ_130, driver_version=driver, driver_cuda_version=dcuda, brand_raw=brand, brand_class=cls)
    assert r.will_start is expected, r.message
    if sat:
        assert sat in (r.satisfied_by or "")
    if expected is False:
        assert "unsatisfied condition: cuda>=13.0" in r.message


def test_brand_clause_admission_warns_about_compat():
    r = check_require(REQ_130, driver_version="575.57.08", driver_cuda_version="12.9", brand_raw="Tesla")
    assert "cuda-compat" in r.message


def test_disable_require():
    r = check_require(
        REQ_130, driver_version="575.57.08", driver_cuda_version="12.9", brand_raw="GeForce", disable_require=True
    )
    assert r.will_start is True and r.disabled


def test_unknown_host_cuda_is_undetermined_not_guessed():
    r = check_require("cuda>=13.0", driver_version=None, driver_cuda_version=None)
    assert r.will_start is None and "cuda" in r.missing


def test_driver_cuda_derived_from_table_when_absent():
    r = check_require("cuda>=13.0", driver_version="575.57.08", driver_cuda_version=None)
    assert r.will_start is False and r.properties["cuda"] == "12.9"
    assert "derived" in r.message


def test_unknown_expression_is_undetermined_with_legacy_hint():
    r = check_require(None, driver_version="575.57.08", driver_cuda_version="12.9", image_cuda_version="13.0.1")
    assert r.will_start is None and r.missing == ["nvidia_require_cuda"]
    assert "be refused" in r.message


def test_legacy_rule_when_env_known_to_lack_require():
    r = check_require(
        None, driver_version="575.57.08", driver_cuda_version="12.9", image_cuda_version="13.0.1", legacy=True
    )
    assert r.will_start is False and r.legacy and r.expression == "cuda>=13.0"


def test_extra_require_vars_are_anded():
    r = check_require(
        "cuda>=12.0",
        driver_version="580.95.05",
        driver_cuda_version="13.0",
        compute_capability="7.0",
        extra_env={"NVIDIA_REQUIRE_ARCH": "arch>=7.5"},
    )
    assert r.will_start is False
    r2 = check_require(
        "cuda>=12.0",
        driver_version="580.95.05",
        driver_cuda_version="13.0",
        compute_capability="9.0",
        extra_env={"NVIDIA_REQUIRE_ARCH": "arch>=7.5"},
    )
    assert r2.will_start is True


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("driver!=575.57.08", False),
        ("driver=575.57.08", True),
        ("driver<=575", False),
        ("driver>575", True),
        ("driver<576", True),
        ("unsupported>=1 cuda>=13.0", False),
        ("cuda>=12.9", True),
        ("cuda>12.9", False),
    ],
)
def test_operators(expr, expected):
    r = check_require(expr, driver_version="575.57.08", driver_cuda_version="12.9", brand_raw="Tesla")
    assert r.will_start is expected, (expr, r.message)
