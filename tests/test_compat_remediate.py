"""One remediation path per verdict and constraints."""

from __future__ import annotations

import datetime as dt

import pytest

from vllm_runbooks.compat import CompatInputs, OrgConstraints, decide, driver_targets, recommend

TODAY = dt.date(2026, 11, 29)
SEED = dict(
    image_cuda_version="13.0.1",
    driver_version="575.57.08",
    gpu_name="NVIDIA H200",
    gpu_count=8,
    model_profile="kimi_k3",
)
R570 = dict(
    image_cuda_version="13.0.1", driver_version="570.195.03", gpu_name="NVIDIA H200", gpu_count=8, compat_libs=False
)
GENERIC_GEFORCE = dict(
    image_cuda_version="13.0.1",
    driver_version="570.195.03",
    gpu_name="NVIDIA GeForce RTX 5090",
    gpu_count=1,
    compat_libs=False,
)

WINDOW = dict(maintenance_window_available=True, shared_nodes_can_stop=True)
CASES = [
    ("seed_window", SEED, WINDOW, "upgrade_driver", False),
    ("seed_isolated", SEED, dict(isolated_environment_available=True), "isolated_environment_first", False),
    ("seed_custom_build", SEED, dict(can_maintain_custom_build=True), "self_built_older_cuda_image", False),
    ("seed_nothing", SEED, {}, "upgrade_driver", True),  # blocked: escalate
    # Kimi K3 has no cu129 tag and R575 no forward compat: with a tight deadline, isolated env still wins.
    (
        "seed_tight_isolated",
        SEED,
        dict(isolated_environment_available=True, recovery_deadline_hours=2, **WINDOW),
        "isolated_environment_first",
        False,
    ),
    ("r570_window", R570, WINDOW, "upgrade_driver", False),
    ("r570_tight", R570, dict(recovery_deadline_hours=2, **WINDOW), "forward_compatibility", False),
    ("r570_no_window", R570, {}, "forward_compatibility", False),
    ("geforce_no_window", GENERIC_GEFORCE, {}, "older_cuda_image", False),  # vLLM -cu129, no FC on GeForce
]


@pytest.mark.parametrize("case_id, kw, cons, path, blocked", CASES, ids=[c[0] for c in CASES])
def test_path_per_constraints(case_id, kw, cons, path, blocked):
    d = decide(CompatInputs(**kw), today=TODAY)
    r = recommend(d, OrgConstraints(**cons), today=TODAY)
    assert r.path == path, (r.reasons, r.alternatives)
    assert r.blocked is blocked
    assert r.reasons and r.first_steps and len(r.baseline) >= 8
    assert path not in {a["path"] for a in r.alternatives}


def test_kimi_older_image_not_offered():
    d = decide(CompatInputs(**SEED), today=TODAY)
    r = recommend(d, OrgConstraints(), today=TODAY)
    older = next(a for a in r.alternatives if a["path"] == "older_cuda_image")
    assert "cu129" in older["why_not"]
    fc = next(a for a in r.alternatives if a["path"] == "forward_compatibility")
    assert "New Feature Branch" in fc["why_not"]


def test_targets_named_from_data():
    targets, avoid = driver_targets("13.0.1", today=TODAY)
    names = [t.branch for t in targets]
    assert names[0] == "R580" and set(names) == {"R580", "R595", "R620"}  # PB/LTSB, not EOL, >= R580
    assert "580.82.07" in targets[0].minimum
    assert any(a.startswith("R590") for a in avoid) and any(a.startswith("R610") for a in avoid)
    # Volta: R580 is the last branch; nothing newer may be proposed.
    v_targets, _ = driver_targets("12.9.1", compute_capability="7.0", today=TODAY)
    assert [t.branch for t in v_targets] == ["R580"]
    # After R595's EOL (March 2027) it is no longer a target.
    later, avoid_later = driver_targets("13.0.1", today=dt.date(2027, 6, 1))
    assert "R595" not in [t.branch for t in later] and any(a.startswith("R595") for a in avoid_later)


def test_compatible_routes_elsewhere():
    d = decide(
        CompatInputs(image_cuda_version="13.0.2", driver_version="580.95.05", gpu_name="NVIDIA H200"),
        [{"label": "oom_weights", "line": 3, "text": "CUDA out of memory"}],
        today=TODAY,
    )
    r = recommend(d, OrgConstraints(**WINDOW), today=TODAY)
    assert r.path == "no_driver_change"
    assert "not the problem" in r.title
    assert any("model loading" in x for x in r.reasons)


def test_forward_compat_verdict_plans_upgrade():
    d = decide(CompatInputs(**{**R570, "compat_libs": True}), today=TODAY)
    r = recommend(d, OrgConstraints(), today=TODAY)
    assert r.path == "no_driver_change" and any("R580" in f for f in r.follow_up)


def test_unknown_collects_evidence():
    d = decide(CompatInputs(image_cuda_version="13.0", gpu_name="NVIDIA H200"), today=TODAY)
    r = recommend(d, OrgConstraints(**WINDOW), today=TODAY)
    assert r.path == "collect_evidence" and "driver_version" in r.prerequisites[0]


def test_arch_unsupported_paths():
    kimi_v100 = decide(
        CompatInputs(
            image_cuda_version="13.0", driver_version="580.95.05", gpu_name="Tesla V100", model_profile="kimi_k3"
        ),
        today=TODAY,
    )
    assert recommend(kimi_v100, today=TODAY).path == "move_to_supported_gpus"
    generic_v100 = decide(
        CompatInputs(image_cuda_version="13.0", driver_version="580.95.05", gpu_name="Tesla V100"), today=TODAY
    )
    assert recommend(generic_v100, today=TODAY).path == "older_cuda_image"  # cu129 arch list has 7.0


def test_remediation_round_trip_and_html():
    d = decide(CompatInputs(**SEED), today=TODAY)
    r = recommend(d, OrgConstraints(**WINDOW), today=TODAY)
    again = type(r).from_dict(r.to_dict())
    assert again.to_dict() == r.to_dict()
    assert "Baseline to save" in r._repr_html_()
