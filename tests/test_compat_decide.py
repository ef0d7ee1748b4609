"""Compatibility verdicts, table-driven; each row cites the data fact it rests on."""

from __future__ import annotations

import datetime as dt

import pytest

from ci_rules import need_path
from vllm_runbooks.compat import CompatInputs, decide, load_facts
from vllm_runbooks.compat.facts import parse_version

TODAY = dt.date(2026, 11, 29)


def _decide(**kw):
    return decide(CompatInputs(**kw), today=TODAY)


# (id, inputs, expected verdict, fact it rests on)
CASES = [
    # Seed: CUDA 13.0 needs >=580.65.06 (toolkit table); 13.x MVC floor >=580; R575 is an NFB (not an FC target).
    (
        "seed_h200_r575",
        dict(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200"),
        "driver_too_old",
        "toolkit 13.0 GA >=580.65.06; MVC 13 >=580",
    ),
    (
        "seed_h200_r575_compat",
        dict(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200", compat_libs=True),
        "driver_too_old",
        "forward-compat rule: New Feature Branches are not supported targets",
    ),
    # FC matrix: cuda-compat-13-0 on r570 = C; data-center GPU.
    (
        "r570_datacenter_compat",
        dict(image_cuda_version="13.0.1", driver_version="570.195.03", gpu_name="NVIDIA H200", compat_libs=True),
        "compatible_forward_compat",
        "support_matrix cuda-compat-13-0 r570: C",
    ),
    (
        "r570_datacenter_no_compat",
        dict(image_cuda_version="13.0.1", driver_version="570.195.03", gpu_name="NVIDIA H200", compat_libs=False),
        "driver_too_old",
        "without compat libs only native / MVC apply",
    ),
    # FC not applicable on GeForce (error 804).
    (
        "geforce_compat",
        dict(
            image_cuda_version="13.0", driver_version="570.195.03", gpu_name="NVIDIA GeForce RTX 5090", compat_libs=True
        ),
        "driver_too_old",
        "forward_compatibility.not_applicable: GeForce",
    ),
    (
        "geforce_brand_flag",
        dict(
            image_cuda_version="13.0",
            driver_version="570.195.03",
            compute_capability="8.9",
            brand_class="geforce",
            compat_libs=True,
        ),
        "driver_too_old",
        "forward_compatibility.not_applicable: GeForce",
    ),
    # CUDA 13 floor CC 7.5: V100 (7.0) dropped, even on a driver that runs 13.0 natively.
    (
        "v100_cuda13",
        dict(image_cuda_version="13.0", driver_version="580.95.05", gpu_name="Tesla V100-SXM2-32GB"),
        "arch_unsupported",
        "cuda13_floor 7.5",
    ),
    (
        "v100_cuda13_old_driver",
        dict(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="Tesla V100"),
        "arch_unsupported",
        "an architecture gap outranks the driver",
    ),
    # 12.9 GA needs >=575.51.03; 12.x MVC floor >=525.60.13.
    (
        "cu129_on_r570",
        dict(image_cuda_version="12.9", driver_version="570.195.03", gpu_name="NVIDIA H200"),
        "compatible_minor_version",
        "MVC 12.x >=525.60.13",
    ),
    # CUDA 13 floor CC 7.5 alone (CC 7.2 has no arch_matrix row): Jetson Xavier class.
    (
        "cc72_cuda13_floor_only",
        dict(image_cuda_version="13.0", driver_version="580.95.05", compute_capability="7.2", brand_class="datacenter"),
        "arch_unsupported",
        "cuda13_floor 7.5",
    ),
    # Exactly at the 12.x MVC floor 525.60.13 (12.2 GA needs 535.54.03).
    (
        "cu122_at_mvc_floor",
        dict(image_cuda_version="12.2", driver_version="525.60.13", gpu_name="NVIDIA A100"),
        "compatible_minor_version",
        "MVC 12.x >=525.60.13 (equal is enough)",
    ),
    ("missing_driver", dict(image_cuda_version="13.0", gpu_name="NVIDIA H200"), "unknown", "no driver"),
    # Native rows of the toolkit table.
    (
        "cu130_ga_at_min",
        dict(image_cuda_version="13.0.0", driver_version="580.65.06", gpu_name="NVIDIA H200"),
        "compatible",
        "13.0 GA >=580.65.06 (equal is enough)",
    ),
    (
        "cu1301_below_update_min",
        dict(image_cuda_version="13.0.1", driver_version="580.65.06", gpu_name="NVIDIA H200"),
        "compatible_minor_version",
        "13.0 Update 1 >=580.82.07; MVC 13 >=580",
    ),
    (
        "cu1302_native",
        dict(image_cuda_version="13.0.2", driver_version="580.95.05", gpu_name="NVIDIA B200"),
        "compatible",
        "13.0 Update 2 >=580.95.05",
    ),
    (
        "cu132_on_r580",
        dict(image_cuda_version="13.2", driver_version="580.95.05", gpu_name="NVIDIA H100 80GB HBM3"),
        "compatible_minor_version",
        "13.2 GA >=595.45.04; MVC 13 >=580",
    ),
    (
        "cu132_on_r595",
        dict(image_cuda_version="13.2.0", driver_version="595.45.04", gpu_name="NVIDIA H100"),
        "compatible",
        "13.2 GA >=595.45.04",
    ),
    (
        "cu128_on_r570_26",
        dict(image_cuda_version="12.8.0", driver_version="570.26", gpu_name="NVIDIA A100"),
        "compatible",
        "12.8 GA >=570.26",
    ),
    (
        "cu1281_on_r570_26",
        dict(image_cuda_version="12.8.1", driver_version="570.26", gpu_name="NVIDIA A100"),
        "compatible_minor_version",
        "12.8 Update 1 >=570.124.06; MVC 12",
    ),
    (
        "cu124_on_r535_mvc",
        dict(image_cuda_version="12.4.1", driver_version="535.104.05", gpu_name="NVIDIA A100"),
        "compatible_minor_version",
        "12.4 Update 1 >=550.54.15; MVC 12 >=525.60.13",
    ),
    (
        "cu12_below_mvc_floor",
        dict(image_cuda_version="12.2", driver_version="520.61.05", gpu_name="NVIDIA A100"),
        "driver_too_old",
        "MVC 12 >=525.60.13; 520 not in the FC matrix",
    ),
    # FC on r535 (LTSB) for 13.x packages: C.
    (
        "r535_compat_cu132",
        dict(image_cuda_version="13.2", driver_version="535.104.05", gpu_name="NVIDIA A100", compat_libs=True),
        "compatible_forward_compat",
        "support_matrix cuda-compat-13-2 r535: C",
    ),
    # r550 is not in the current matrix (older secondary matrix listed it): unsupported target.
    (
        "r550_compat_cu130",
        dict(image_cuda_version="13.0", driver_version="550.54.15", gpu_name="NVIDIA H200", compat_libs=True),
        "driver_too_old",
        "unlisted branches are not supported targets",
    ),
    # cuda-compat-12-9 on r580 is X, but r580 runs 12.9 natively anyway (backward compatibility).
    (
        "cu129_on_r580",
        dict(image_cuda_version="12.9.1", driver_version="580.65.06", gpu_name="NVIDIA L40S"),
        "compatible",
        "12.9 Update 1 >=575.57.08",
    ),
    # Professional RTX on r570 with compat: C, with the select-SKU caveat.
    (
        "professional_r570_compat",
        dict(
            image_cuda_version="13.0",
            driver_version="570.195.03",
            gpu_name="NVIDIA RTX 6000 Ada Generation",
            compat_libs=True,
        ),
        "compatible_forward_compat",
        "FC: select NGC Server Ready RTX SKUs",
    ),
    # Blackwell CC 10.0 needs CUDA >= 12.8.
    (
        "b200_cu126",
        dict(image_cuda_version="12.6.3", driver_version="580.95.05", gpu_name="NVIDIA B200"),
        "arch_unsupported",
        "minimum_toolkit_for_gpu 10.0 -> 12.8",
    ),
    # Kepler 3.5: last CUDA 11.x.
    (
        "kepler_cu12",
        dict(image_cuda_version="12.2", driver_version="535.104.05", compute_capability="3.5"),
        "arch_unsupported",
        "arch_matrix Kepler last_cuda 11.x",
    ),
    # Driver fine but GPU unknown: architecture unchecked -> unknown naming compute_capability.
    ("no_gpu_info", dict(image_cuda_version="13.0", driver_version="580.95.05"), "unknown", "arch unchecked"),
    # Driver too old and GPU unknown: too old stands.
    (
        "old_driver_no_gpu",
        dict(image_cuda_version="13.0", driver_version="575.57.08"),
        "driver_too_old",
        "toolkit + MVC",
    ),
    # FC would apply (r570 C) but compat-lib use is not known -> unknown naming compat_libs.
    (
        "r570_compat_unknown",
        dict(image_cuda_version="13.0", driver_version="570.195.03", gpu_name="NVIDIA H200"),
        "unknown",
        "verdict hinges on compat libs",
    ),
    # 13.4 minimum is UNCONFIRMED: it must not drive; MVC (confirmed) does.
    (
        "cu134_unconfirmed_on_r580",
        dict(image_cuda_version="13.4.1", driver_version="580.95.05", gpu_name="NVIDIA H200"),
        "compatible_minor_version",
        "13.4 min UNCONFIRMED -> MVC 13 >=580",
    ),
]


@pytest.mark.parametrize("case_id, kw, expected, fact", CASES, ids=[c[0] for c in CASES])
def test_verdict_table(case_id, kw, expected, fact):
    d = _decide(**kw)
    assert d.verdict == expected, (case_id, fact, d.reasons)
    assert d.reasons, "a verdict always carries reasons"
    for f in d.facts:
        assert f.source.startswith("http"), f
        assert f.status, f


def test_seed_case_details():
    d = _decide(image_cuda_version="13.0.1", driver_version="575.57.08", gpu_name="NVIDIA H200")
    assert d.verdict == "driver_too_old"
    ids = {f.id for f in d.facts}
    assert {"toolkit_driver_minimums", "minor_version_compatibility"} <= ids
    assert any("580.82.07" in f.text for f in d.facts)  # published spelling, zero padding kept
    kinds = {r.kind for r in d.risks}
    assert "new_feature_branch" in kinds and "end_of_life_branch" in kinds
    assert d.driver_branch and d.driver_branch.type == "NFB"
    assert any("12.9" in r for r in d.reasons)  # the driver's own CUDA is named
    assert d.evidence_used["compute_capability"] == "9.0"
    assert "compute_capability" in d.inputs.derived


def test_unknown_names_missing_input():
    assert _decide(image_cuda_version="13.0", gpu_name="NVIDIA H200").missing == ["driver_version"]
    assert _decide(driver_version="580.95.05", gpu_name="NVIDIA H200").missing == ["image_cuda_version"]
    assert "compute_capability" in _decide(image_cuda_version="13.0", driver_version="580.95.05").missing
    assert (
        "compat_libs" in _decide(image_cuda_version="13.0", driver_version="570.195.03", gpu_name="NVIDIA H200").missing
    )
    d = _decide(image_cuda_version="13.0", driver_version="570.195.03", compute_capability="9.0", compat_libs=True)
    assert d.verdict == "unknown" and "brand_class" in d.missing


def test_seed_with_compat_cites_nfb_rule():
    d = _decide(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200", compat_libs=True)
    assert any("New Feature Branches are not supported" in f.text for f in d.facts)
    assert d.forward_compat["supported"] is False and "R575 is a New Feature Branch" in d.forward_compat["why"]


def test_unconfirmed_toolkit_row_is_not_used(monkeypatch):
    import copy
    import importlib

    from vllm_runbooks.compat.facts import CompatFacts

    decide_mod = importlib.import_module("vllm_runbooks.compat.decide")

    data = copy.deepcopy(load_facts().data)
    for e in data["toolkit_driver_minimums"]["entries"]:
        if str(e["cuda"]).startswith("13.0"):
            e["status"] = "UNCONFIRMED"
    for module in ("decide", "driver_rules", "side_checks"):  # every module that reads the facts
        mod = importlib.import_module(f"vllm_runbooks.compat.{module}")
        monkeypatch.setattr(mod, "load_facts", lambda: CompatFacts(data))
    d = decide_mod.decide(
        CompatInputs(image_cuda_version="13.0.1", driver_version="580.95.05", gpu_name="NVIDIA H200"), today=TODAY
    )
    assert d.verdict == "compatible_minor_version"  # MVC (confirmed) decides, not the unconfirmed minimum
    assert not any(f.status == "UNCONFIRMED" for f in d.facts)


def test_unconfirmed_fact_does_not_drive():
    d = _decide(image_cuda_version="13.4.1", driver_version="575.57.08", gpu_name="NVIDIA H200")
    assert d.verdict == "driver_too_old"
    assert not any(f.status == "UNCONFIRMED" for f in d.facts)
    assert any(r.kind == "unconfirmed_fact" for r in d.risks)


def test_error_803_risk_when_compat_forced_on_newer_driver():
    d = _decide(image_cuda_version="13.0.1", driver_version="580.95.05", gpu_name="NVIDIA H200", compat_libs=True)
    assert d.verdict == "compatible"
    assert any(r.kind == "error_803" and r.severity == "error" for r in d.risks)
    d2 = _decide(image_cuda_version="13.0.1", driver_version="580.95.05", gpu_name="NVIDIA H200", compat_libs=False)
    assert not any(r.kind == "error_803" for r in d2.risks)


def test_eol_depends_on_date():
    kw = dict(image_cuda_version="13.0.1", driver_version="570.195.03", gpu_name="NVIDIA H200", compat_libs=True)
    before = decide(CompatInputs(**kw), today=dt.date(2026, 1, 15))
    after = decide(CompatInputs(**kw), today=dt.date(2026, 3, 1))  # R570 EOL February 2026
    assert not any(r.kind == "end_of_life_branch" for r in before.risks)
    assert any(r.kind == "end_of_life_branch" for r in after.risks)


def test_legacy_arch_on_newer_driver_flagged():
    d = _decide(image_cuda_version="12.9.1", driver_version="595.45.04", gpu_name="Tesla V100")
    assert any(r.kind == "legacy_arch_driver" for r in d.risks)  # R580 last branch for Volta


def test_kimi_profile_demands():
    d = _decide(
        image_cuda_version="13.0.1",
        driver_version="575.57.08",
        gpu_name="NVIDIA H200",
        gpu_count=4,
        model_profile="kimi_k3",
    )
    by = {x.demand: x for x in d.profile_demands}
    assert by["CUDA 13 image"].status == "met"
    assert by["driver R580+"].status == "unmet"
    assert by[">= 8 GPUs"].status == "unmet"
    assert by["verified GPU class"].status == "met"
    assert "cu129" in by["older-CUDA image"].text
    h100 = _decide(
        image_cuda_version="13.0.1",
        driver_version="580.95.05",
        gpu_name="NVIDIA H100",
        gpu_count=8,
        model_profile="kimi_k3",
    )
    d100 = {x.demand: x for x in h100.profile_demands}
    assert d100[">= 32 GPUs"].status == "unmet"
    assert d100["verified GPU class"].status == "unmet"


LOG_CASES = [
    # (inputs, finding, expected relation)
    (
        dict(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200"),
        {
            "label": "driver_too_old",
            "line": 12,
            "text": "The NVIDIA driver on your system is too old (found version 12090)",
        },
        "confirms",
    ),
    (
        dict(image_cuda_version="13.0", driver_version="580.95.05", gpu_name="NVIDIA H200"),
        {"label": "driver_too_old", "line": 3, "text": "CUDA driver version is insufficient for CUDA runtime version"},
        "contradicts",
    ),
    (
        dict(image_cuda_version="13.0", driver_version="580.95.05", gpu_name="NVIDIA H200"),
        {"label": "driver_too_old", "line": 4, "text": "too old (found version 12090)"},
        "contradicts",
    ),
    (
        dict(image_cuda_version="13.0", driver_version="580.95.05", gpu_name="NVIDIA H200"),
        {"label": "nccl_error", "line": 9, "text": "NCCL error: unhandled system error"},
        "neutral",
    ),
    (
        dict(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200"),
        {"label": "healthy", "line": 99, "text": "Application startup complete."},
        "contradicts",
    ),
    (
        dict(image_cuda_version="13.0", driver_version="570.195.03", gpu_name="NVIDIA H200", compat_libs=True),
        {
            "label": "forward_compat_unsupported",
            "line": 1,
            "text": "forward compatibility was attempted on non supported HW",
        },
        "contradicts",
    ),
    (
        dict(
            image_cuda_version="13.0",
            driver_version="575.57.08",
            gpu_name="NVIDIA H200",
            nvidia_require_cuda="cuda>=13.0",
        ),
        {"label": "container_toolkit_requirement", "line": 1, "text": "unsatisfied condition: cuda>=13.0"},
        "confirms",
    ),
]


@pytest.mark.parametrize("kw, finding, relation", LOG_CASES)
def test_log_findings_vs_verdict(kw, finding, relation):
    d = decide(CompatInputs(**kw), [finding], today=TODAY)
    assert d.log_checks[0].relation == relation, d.log_checks[0]
    assert d.log_checks[0].line == finding["line"]
    assert (len(d.contradictions) == 1) == (relation == "contradicts")


def test_found_version_decoded():
    d = _decide(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200")
    d = decide(d.inputs, [{"label": "driver_too_old", "line": 1, "text": "(found version 12090)"}], today=TODAY)
    assert "CUDA 12.9" in d.log_checks[0].why


def test_finished_start_up_contradicts_driver_too_old_in_its_own_words():
    # A start-up that allocated its KV cache ran CUDA on this GPU, as a served request would; the
    # reason says which it was.
    inputs = CompatInputs(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="NVIDIA H200")
    finding = {"label": "healthy", "line": 40, "text": "# GPU blocks: 1381", "proves": "started"}
    check = decide(inputs, [finding], today=TODAY).log_checks[0]
    assert check.relation == "contradicts" and "finished start-up on the GPU" in check.why


def test_routes_when_compatible():
    d = decide(
        CompatInputs(image_cuda_version="13.0.2", driver_version="580.95.05", gpu_name="NVIDIA H200", gpu_count=8),
        [
            {"label": "nccl_error", "line": 5, "text": "NCCL WARN"},
            {"label": "tool_call_parse_error", "line": 7, "text": "Error parsing tool call"},
        ],
        today=TODAY,
    )
    assert d.verdict == "compatible"
    assert "driver is not the problem" in d.routes[0]
    assert any(r.startswith("communication backend") for r in d.routes)
    assert any(r.startswith("tool-call configuration") for r in d.routes)
    assert d.driver_is_problem is False
    assert _decide(image_cuda_version="13.0", driver_version="575.57.08", gpu_name="H200").routes == []


def test_round_trip_and_display():
    d = decide(
        CompatInputs(
            image_cuda_version="13.0.1",
            driver_version="575.57.08",
            gpu_name="NVIDIA H200",
            nvidia_require_cuda="cuda>=13.0 brand=tesla,driver>=570,driver<571",
        ),
        [{"label": "driver_too_old", "line": 1, "text": "x"}],
        today=TODAY,
    )
    again = type(d).from_dict(d.to_dict())
    assert again.to_dict() == d.to_dict()
    html = d._repr_html_()
    assert "driver_too_old" in html and "https://docs.nvidia.com" in html
    assert d.verdict == "driver_too_old" and d.key_figures()["contradictions"] == len(d.contradictions)


def test_data_matches_reference_yaml():
    """The library copy must not drift from the shared reference: every minimum equals the source."""
    import pathlib

    import yaml

    ref_path = pathlib.Path(__file__).resolve().parents[2] / "shared" / "reference" / "cuda_compat.yaml"
    need_path(ref_path, "the shared reference (../shared/reference/cuda_compat.yaml)")
    ref = yaml.safe_load(ref_path.read_text())
    ours = load_facts().data
    a = {e["cuda"]: e["linux_x86_64"] for e in ref["toolkit_driver_minimums"]["entries"]}
    b = {e["cuda"]: e["linux_x86_64"] for e in ours["toolkit_driver_minimums"]["entries"]}
    assert a == b
    assert ours["forward_compatibility"]["support_matrix"] == ref["forward_compatibility"]["support_matrix"]
    assert ours["driver_branches"]["branches"] == ref["driver_branches"]["branches"]


def test_every_data_entry_has_source_and_status():
    data = load_facts().data
    for e in data["toolkit_driver_minimums"]["entries"]:
        assert e["source"].startswith("https://") and e["status"]
    for b in data["driver_branches"]["branches"]:
        assert b["source"].startswith("https://") and b["status"]
    for g in data["architecture_support"]["gpu_compute_capability"]["entries"]:
        assert g["source"].startswith("https://") and g["status"]
        assert parse_version(g["cc"])
