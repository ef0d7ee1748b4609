"""The staged rollout plan: canary from the most common configuration (idle first), a few nodes
covering the other configurations, then waves (image-only nodes before driver upgrades)."""

from __future__ import annotations

from vllm_runbooks.fleet import NodeRow, TargetImage, make_plan
from vllm_runbooks.fleet.model import unanswered


def _node(name: str, gpu: str, branch: str, action: str, idle: bool | None = None) -> NodeRow:
    return NodeRow(
        node=name,
        gpu_name=gpu,
        gpu_count=8,
        driver_branch=branch,
        toolkit="1.17.8",
        action=action,
        verdict="compatible" if action == "ready" else "driver_too_old",
        idle=idle,
        reason="r",
    )


def test_canary_waves_and_exclusions() -> None:
    rows = [_node(f"h200-{i:02d}", "NVIDIA H200", "r575", "upgrade_driver", idle=(i == 7)) for i in range(10)]
    rows += [_node(f"b200-{i}", "NVIDIA B200", "r580", "ready", idle=False) for i in range(4)]
    rows += [_node("h100-0", "NVIDIA H100 80GB HBM3", "r575", "upgrade_driver")]
    rows += [unanswered("gone-1", "died", "NodeDiedError"), NodeRow(node="cpu-1", action="no_gpu", reason="no GPU")]
    plan = make_plan(rows, TargetImage(), few=2, wave_size=4)
    # The most common configuration is 10× H200 r575; of those, the idle node is the canary.
    assert plan.canary == "h200-07"
    kinds = [s.kind for s in plan.stages]
    assert kinds[:2] == ["canary", "few_nodes"] and set(kinds[2:]) == {"wave"}
    few = [n.node for n in plan.stages[1].nodes]
    assert few == ["b200-0", "h100-0"]  # one node of each other configuration, larger configuration first
    waves = [n for s in plan.stages[2:] for n in s.nodes]
    assert all(len(s.nodes) <= 4 for s in plan.stages[2:]) and plan.wave_size == 4
    actions = [n.action for n in waves]
    assert actions == sorted(actions, key=lambda a: a != "ready")  # image-only nodes first
    planned = {n.node for s in plan.stages for n in s.nodes}
    assert planned == {r.node for r in rows if r.action in ("ready", "upgrade_driver")}
    assert {e["node"] for e in plan.excluded} == {"gone-1", "cpu-1"}
    assert all(s.checks for s in plan.stages) and "Change record" in plan.stages[-1].checks[-1]
    assert plan.rows()[0]["driver upgrades"] == 1


def test_no_eligible_node_means_no_canary() -> None:
    plan = make_plan([NodeRow(node="cpu-1", action="no_gpu", reason="no GPU")], TargetImage())
    assert plan.canary is None and not plan.stages and plan.excluded[0]["node"] == "cpu-1"
    assert "none available" in plan._repr_html_()
