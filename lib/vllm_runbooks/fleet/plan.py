"""Staged rollout plan: one isolated canary node, a few nodes, then waves — each with its gate.

The procedure's order (design: canary validation, then the expansion plan): a change reaches the
fleet only after it held on one node, then on a few, then wave by wave, and each stage lists the
checks that must pass before the next one starts. The canary is an idle node with the fleet's
most common configuration, so what it proves holds for the most nodes and nobody's traffic is
moved to test it. Nodes that cannot take the image (no GPU, unsupported architecture, facts
missing, no answer) are left out with the reason, never silently.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..records import Record
from .model import ACTION_READY, ACTION_UPGRADE, FleetTarget, NodeRow

STAGE_CANARY, STAGE_FEW, STAGE_WAVE = "canary", "few_nodes", "wave"


@dataclass
class PlannedNode(Record):
    """A node in a stage and what it needs: the image only, or a driver upgrade first."""

    SCHEMA: ClassVar[str] = "fleet_planned_node"

    node: str
    action: str
    configuration: str
    idle: bool | None = None


@dataclass
class RolloutStage(Record):
    """One stage of the rollout: its nodes and the checks that gate the next stage."""

    SCHEMA: ClassVar[str] = "fleet_rollout_stage"

    name: str
    kind: str  # canary | few_nodes | wave
    nodes: list[PlannedNode]
    checks: list[str]
    why: str = ""


@dataclass
class RolloutPlan(Record):
    """Stages in order, the canary candidate, and the nodes left out with why."""

    SCHEMA: ClassVar[str] = "fleet_rollout_plan"

    canary: str | None
    common_configuration: str | None
    stages: list[RolloutStage] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    wave_size: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutPlan:
        """Rebuild the stages and their nodes typed (a saved plan is read back by later stages)."""
        plan = super().from_dict(data)
        plan.stages = [
            RolloutStage(
                **{
                    **{k: v for k, v in s.items() if k not in ("schema", "schema_version")},
                    "nodes": [
                        PlannedNode(**{k: v for k, v in n.items() if k not in ("schema", "schema_version")})
                        for n in s.get("nodes") or []
                    ],
                }
            )
            for s in data.get("stages") or []
        ]
        return plan

    def rows(self) -> list[dict[str, Any]]:
        """One row per stage: what it covers and its gate (for the table in the notebook)."""
        out = []
        for s in self.stages:
            upgrades = sum(1 for n in s.nodes if n.action == ACTION_UPGRADE)
            shown = ", ".join(n.node for n in s.nodes[:8]) + (f" … (+{len(s.nodes) - 8})" if len(s.nodes) > 8 else "")
            out.append(
                {
                    "stage": s.name,
                    "nodes": len(s.nodes),
                    "driver upgrades": upgrades,
                    "which": shown,
                    "why": s.why,
                    "checks before the next stage": s.checks,
                }
            )
        return out

    def _repr_html_(self) -> str:
        from ..display import banner, esc, html_table

        head = banner(
            f"Canary: {self.canary or 'none available'}",
            f"most common configuration: {self.common_configuration or '—'}; "
            + (f"waves of {self.wave_size} nodes" if self.wave_size else "no waves needed"),
            "good" if self.canary else "warn",
        )
        excluded = ""
        if self.excluded:
            excluded = f"<h4>Left out of the rollout ({len(self.excluded)})</h4>" + html_table(
                self.excluded[:200], ["node", "action", "reason"]
            )
            if len(self.excluded) > 200:
                excluded += f"<p>… and {esc(len(self.excluded) - 200)} more (see fleet/result.json)</p>"
        return head + html_table(self.rows()) + excluded


def config_label(row: NodeRow) -> str:
    """A configuration as people say it: '8× NVIDIA H200, r575, toolkit 1.17.8'."""
    gpu, count, branch, toolkit = row.configuration
    return f"{count}× {gpu}, {branch}, toolkit {toolkit}" if row.gpu_count else f"{gpu}, {branch}"


def _idle_rank(row: NodeRow) -> int:
    return 0 if row.idle is True else 1 if row.idle is None else 2


def _idle_text(row: NodeRow) -> str:
    return {True: "an idle", None: "a (not known to be busy)", False: "a busy (no idle one left)"}[row.idle]


def _planned(row: NodeRow) -> PlannedNode:
    return PlannedNode(node=row.node, action=row.action, configuration=config_label(row), idle=row.idle)


def _canary_checks(target: FleetTarget, upgrade: bool) -> list[str]:
    checks = [
        "Drained and isolated: no production traffic; runbook 01 evidence saved as the baseline before any change"
    ]
    if upgrade:
        checks.append(
            "Driver upgraded to the branch runbook 02 names for this image; runbook 01 shows it, and the driver's "
            f"maximum CUDA is at least {target.image_cuda}"
        )
    checks += [
        f"Runbook 02 on the node's new evidence: a compatible verdict for the CUDA {target.image_cuda} image",
        "Runbook 03 canary validation passes in order: GPU and container CUDA recognised, model load only, "
        "short text request, image input, tool calling with schema validation, multi-GPU communication",
        "Load check in stages within the agreed error-rate and latency limits; OOM and communication errors absent",
        "Rollback tested on this node: the previous driver and image restored and serving again",
    ]
    return checks


def _few_checks(target: FleetTarget) -> list[str]:
    return [
        "Runbook 03 passes on every node of this stage (each configuration proven on its own node)",
        "Multi-node communication (NCCL) between these nodes and the canary passes",
        "Serving error rate and latency unchanged for the agreed soak time; no rollback condition hit",
        f"Runbook 07 re-run: these nodes report ready for CUDA {target.image_cuda}",
    ]


def _wave_checks(target: FleetTarget, last: bool) -> list[str]:
    checks = [
        f"Runbook 07 re-run on the wave: every node reports ready for CUDA {target.image_cuda} (none unanswered)",
        "Runbook 03 on one node per configuration of the wave passes",
        "Fleet error rate and latency within limits; spare capacity kept (only this wave drained at a time)",
    ]
    if not last:
        checks.append("No rollback in this wave before the next wave starts")
    else:
        checks.append("Change record (runbook 06): verified scope, unverified scope, rollback conditions")
    return checks


def make_plan(rows: list[NodeRow], target: FleetTarget, few: int = 3, wave_size: int = 0) -> RolloutPlan:
    """The staged plan for the nodes that can take the image (ready now, or after a driver upgrade).

    ``few``: nodes in the second stage (one per other configuration first). ``wave_size``: nodes per
    wave after that (0: a quarter of the remaining nodes, at least one).
    """
    eligible = [r for r in rows if r.action in (ACTION_READY, ACTION_UPGRADE)]
    excluded = [{"node": r.node, "action": r.action, "reason": r.reason} for r in rows if r not in eligible]
    if not eligible:
        return RolloutPlan(canary=None, common_configuration=None, excluded=excluded)
    counts = Counter(r.configuration for r in eligible)
    # Most nodes first; ties broken by the configuration's text so the plan is reproducible.
    order = sorted(counts, key=lambda c: (-counts[c], c))
    common = order[0]
    rank = {c: i for i, c in enumerate(order)}

    def key(r: NodeRow) -> tuple:
        """Plan order: larger configurations first, idle nodes first, then by name (reproducible)."""
        return (rank[r.configuration], _idle_rank(r), r.node)

    pool = sorted(eligible, key=key)
    # The canary: of the configurations with the most nodes, an idle node first.
    top = {c for c in order if counts[c] == counts[order[0]]}
    canary = min((r for r in pool if r.configuration in top), key=lambda r: (_idle_rank(r), *key(r)))
    common = canary.configuration
    rest = [r for r in pool if r is not canary]
    chosen: list[NodeRow] = []
    for conf in order[1:]:  # one node per other configuration, most common first
        if len(chosen) >= few:
            break
        cand = [r for r in rest if r.configuration == conf]
        if cand:
            chosen.append(cand[0])
    for r in rest:  # then fill from the remaining nodes in plan order
        if len(chosen) >= few:
            break
        if r not in chosen:
            chosen.append(r)
    picked = {id(r) for r in chosen}
    remaining = [r for r in rest if id(r) not in picked]
    # Waves: nodes that need only the image first (lower risk), then the driver upgrades.
    remaining.sort(key=lambda r: (r.action != ACTION_READY, *key(r)))
    size = wave_size if wave_size > 0 else max(1, math.ceil(len(remaining) / 4))
    stages = [
        RolloutStage(
            name="1. canary",
            kind=STAGE_CANARY,
            nodes=[_planned(canary)],
            checks=_canary_checks(target, canary.action == ACTION_UPGRADE),
            why=f"{_idle_text(canary)} node of the most common configuration "
            f"({counts[common]} node{'s' if counts[common] != 1 else ''}: {config_label(canary)})",
        )
    ]
    if chosen:
        stages.append(
            RolloutStage(
                name="2. a few nodes",
                kind=STAGE_FEW,
                nodes=[_planned(r) for r in chosen],
                checks=_few_checks(target),
                why="one node of each other configuration first, so every configuration is proven before it goes wide",
            )
        )
    chunks = [remaining[i : i + size] for i in range(0, len(remaining), size)]
    for i, chunk in enumerate(chunks, start=1):
        stages.append(
            RolloutStage(
                name=f"{len(stages) + 1}. wave {i}",
                kind=STAGE_WAVE,
                nodes=[_planned(r) for r in chunk],
                checks=_wave_checks(target, i == len(chunks)),
                why="image-only nodes before driver upgrades; configurations in order of size",
            )
        )
    return RolloutPlan(
        canary=canary.node,
        common_configuration=config_label(canary),
        stages=stages,
        excluded=excluded,
        wave_size=size if chunks else 0,
    )
