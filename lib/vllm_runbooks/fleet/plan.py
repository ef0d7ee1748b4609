"""Staged rollout plan: one isolated canary node, a few nodes, then waves — each with its gate.

The procedure's order (design: canary validation, then the expansion plan): a change reaches the
fleet only after it held on one node, then on a few, then wave by wave, and each stage lists the
checks that must pass before the next one starts. The canary is an idle node with the fleet's
most common configuration, so what it proves holds for the most nodes and nobody's traffic is
moved to test it. Nodes that cannot take the image (no GPU, unsupported architecture, facts
missing, no answer) are left out with the reason, never silently.

Hardware before blame (runbook 01's ``hardware`` and ``fit`` items on every node): a node with a
``faulty`` GPU or a failed start-up fit is **held back** — never the canary, never in the few,
never in a wave — and listed with the findings and what to do about them. A ``degraded`` node is
never the canary (its findings would blur what the canary proves) but may go in a wave. ``unknown``
hardware (no GPU health facts) is not faulty: such a node is planned, healthy nodes come first.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..records import Record
from .model import ACTION_READY, ACTION_UPGRADE, NodeRow, TargetImage

STAGE_CANARY, STAGE_FEW, STAGE_WAVE = "canary", "few_nodes", "wave"


@dataclass
class PlannedNode(Record):
    """A node in a stage and what it needs: the image only, or a driver upgrade first."""

    SCHEMA: ClassVar[str] = "fleet_planned_node"

    node: str
    action: str
    configuration: str
    idle: bool | None = None
    hardware: str = "unknown"  # runbook 01's hardware verdict (healthy | degraded | unknown; faulty is held back)


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
    """Stages in order, the canary candidate, the nodes left out and the nodes held back, each with why."""

    SCHEMA: ClassVar[str] = "fleet_rollout_plan"

    canary: str | None
    common_configuration: str | None
    stages: list[RolloutStage] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    wave_size: int = 0
    #: nodes kept out for their hardware or start-up fit (node, hardware, fit, action, reason, what_to_do)
    held_back: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how hardware shaped the plan (degraded, unknown)

    def rows(self) -> list[dict[str, Any]]:
        """One row per stage: what it covers and its gate (for the table in the notebook)."""
        out = []
        for s in self.stages:
            upgrades = sum(1 for n in s.nodes if n.action == ACTION_UPGRADE)
            hardware = Counter(n.hardware for n in s.nodes)
            shown = ", ".join(n.node for n in s.nodes[:8]) + (f" … (+{len(s.nodes) - 8})" if len(s.nodes) > 8 else "")
            out.append(
                {
                    "stage": s.name,
                    "nodes": len(s.nodes),
                    "driver upgrades": upgrades,
                    "hardware": ", ".join(f"{k} {v}" for k, v in sorted(hardware.items())),
                    "which": shown,
                    "why": s.why,
                    "checks before the next stage": s.checks,
                }
            )
        return out

    def _repr_html_(self) -> str:
        from ..display import banner, bullets, esc, html_table

        head = banner(
            f"Canary: {self.canary or 'none available'}",
            f"most common configuration: {self.common_configuration or '—'}; "
            + (f"waves of {self.wave_size} nodes" if self.wave_size else "no waves needed"),
            "good" if self.canary else "warn",
        )
        notes = bullets(self.notes) if self.notes else ""
        held = ""
        if self.held_back:
            held = f"<h4>Held back for hardware or start-up fit ({len(self.held_back)})</h4>" + html_table(
                self.held_back[:200], list(HELD_BACK_COLUMNS)
            )
            if len(self.held_back) > 200:
                held += f"<p>… and {esc(len(self.held_back) - 200)} more (see fleet/result.json)</p>"
        excluded = ""
        if self.excluded:
            excluded = f"<h4>Left out of the rollout ({len(self.excluded)})</h4>" + html_table(
                self.excluded[:200], ["node", "action", "reason"]
            )
            if len(self.excluded) > 200:
                excluded += f"<p>… and {esc(len(self.excluded) - 200)} more (see fleet/result.json)</p>"
        return head + notes + html_table(self.rows()) + held + excluded


#: The columns of a held-back entry, in display order.
HELD_BACK_COLUMNS = ("node", "hardware", "fit", "action", "reason", "what_to_do")
#: How the canary and the few prefer hardware: healthy, then unknown (not faulty, not seen), then degraded.
_HARDWARE_RANK = {"healthy": 0, "unknown": 1, "degraded": 2}
_FIT_READY_TIMEOUT = "ready timeout:"  # the fit item's prefix for a failed ready-timeout check (evidence.fit)


def hold_back(row: NodeRow) -> dict[str, Any] | None:
    """Why this node stays out of the rollout (faulty hardware or a failed fit), or None when it need not.

    ``reason``: the hardware item's faulty findings and the fit's failed checks, in their own words;
    ``what_to_do``: the findings' recommended actions, runbook 02's hardware-line path for the node,
    and the re-check before the node may join a wave.
    """
    if not row.held_back:
        return None
    from ..compat.hardware_route import HARDWARE_PATHS, TITLES

    reasons: list[str] = []
    todo: list[str] = []
    if row.hardware == "faulty":
        faulty = [f for f in row.hardware_findings if f.get("severity") == "faulty"]
        texts = [str(f.get("text")) for f in faulty[:3]] or [row.hardware_summary or "a faulty finding"]
        reasons.append("hardware faulty: " + "; ".join(texts))
        for f in faulty:
            action = str(f.get("action") or "")
            if action and action not in todo:
                todo.append(action)
    if row.fit == "fail":
        reasons.append("start-up fit failed: " + ("; ".join(row.fit_failed[:3]) or "see the fit item"))
        if any(str(x).startswith(_FIT_READY_TIMEOUT) for x in row.fit_failed):
            todo.append("raise VLLM_ENGINE_READY_TIMEOUT_S to at least the model's expected start-up time")
    if row.remediation in HARDWARE_PATHS:
        todo.append(f"runbook 02's path for this node: {TITLES[row.remediation]}")
    todo.append("then re-run runbook 01 on the node and this survey: it joins a wave only when not held back")
    return {
        "node": row.node,
        "hardware": row.hardware,
        "fit": row.fit,
        "action": row.action,
        "reason": " | ".join(reasons),
        "what_to_do": "; ".join(todo),
    }


def _hardware_rank(row: NodeRow) -> int:
    return _HARDWARE_RANK.get(row.hardware, 1)


def config_label(row: NodeRow) -> str:
    """A configuration as people say it: '8× NVIDIA H200, r575, toolkit 1.17.8'."""
    gpu, count, branch, toolkit = row.configuration
    return f"{count}× {gpu}, {branch}, toolkit {toolkit}" if row.gpu_count else f"{gpu}, {branch}"


def _idle_rank(row: NodeRow) -> int:
    return 0 if row.idle is True else 1 if row.idle is None else 2


def _idle_text(row: NodeRow) -> str:
    return {True: "an idle", None: "a (not known to be busy)", False: "a busy (no idle one left)"}[row.idle]


def _planned(row: NodeRow) -> PlannedNode:
    return PlannedNode(
        node=row.node, action=row.action, configuration=config_label(row), idle=row.idle, hardware=row.hardware
    )


def _hardware_text(row: NodeRow) -> str:
    if row.hardware == "healthy":
        return "hardware healthy"
    if row.hardware == "unknown":
        return (
            "hardware unknown (no GPU health facts: not faulty, but not shown healthy; "
            "no healthy node of this configuration)"
        )
    return f"hardware {row.hardware}"


def _canary_checks(target: TargetImage, upgrade: bool) -> list[str]:
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


def _few_checks(target: TargetImage) -> list[str]:
    return [
        "Runbook 03 passes on every node of this stage (each configuration proven on its own node)",
        "Multi-node communication (NCCL) between these nodes and the canary passes",
        "Serving error rate and latency unchanged for the agreed soak time; no rollback condition hit",
        f"Runbook 07 re-run: these nodes report ready for CUDA {target.image_cuda}",
    ]


def _wave_checks(target: TargetImage, last: bool) -> list[str]:
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


def make_plan(rows: list[NodeRow], target: TargetImage, few: int = 3, wave_size: int = 0) -> RolloutPlan:
    """The staged plan for the nodes that can take the image (ready now, or after a driver upgrade).

    ``few``: nodes in the second stage (one per other configuration first). ``wave_size``: nodes per
    wave after that (0: a quarter of the remaining nodes, at least one).
    """
    held = [h for h in (hold_back(r) for r in rows) if h is not None]
    eligible = [r for r in rows if r.action in (ACTION_READY, ACTION_UPGRADE) and not r.held_back]
    excluded = [
        {"node": r.node, "action": r.action, "reason": r.reason} for r in rows if r not in eligible and not r.held_back
    ]
    notes = _hardware_notes(eligible, held)
    if not eligible:
        return RolloutPlan(canary=None, common_configuration=None, excluded=excluded, held_back=held, notes=notes)
    counts = Counter(r.configuration for r in eligible)
    # Most nodes first; ties broken by the configuration's text so the plan is reproducible.
    order = sorted(counts, key=lambda c: (-counts[c], c))
    common = order[0]
    rank = {c: i for i, c in enumerate(order)}

    def key(r: NodeRow) -> tuple:
        """Plan order: larger configurations first, healthy then unknown then degraded hardware, idle
        nodes first, then by name (reproducible)."""
        return (rank[r.configuration], _hardware_rank(r), _idle_rank(r), r.node)

    pool = sorted(eligible, key=key)
    # The canary: never a degraded node; of the configurations with the most nodes, healthy hardware
    # first, then an idle node.
    top = {c for c in order if counts[c] == counts[order[0]]}
    candidates = [r for r in pool if r.hardware != "degraded"]
    if not candidates:
        notes.append(
            f"No canary: every node that can take the image has degraded hardware ({len(pool)}); fix one node's "
            "findings (the table's hardware_summary) and re-run the survey before the rollout starts."
        )
        return RolloutPlan(
            canary=None, common_configuration=None, excluded=excluded, held_back=held, notes=notes, stages=[]
        )
    # (a tie for the most nodes is one group; past it, when every node there is degraded, the next largest)
    canary = min(
        candidates,
        key=lambda r: (
            0 if r.configuration in top else rank[r.configuration],
            _hardware_rank(r),
            _idle_rank(r),
            *key(r),
        ),
    )
    common = canary.configuration
    rest = [r for r in pool if r is not canary]
    chosen: list[NodeRow] = []
    for conf in order[1:]:  # one node per other configuration, most common first
        if len(chosen) >= few:
            break
        cand = [r for r in rest if r.configuration == conf]
        if cand:
            chosen.append(cand[0])
    for r in rest:  # then fill from the remaining nodes in plan order; a degraded node waits for a wave
        if len(chosen) >= few:
            break
        if r not in chosen and r.hardware != "degraded":
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
            why=f"{_idle_text(canary)} node of the "
            + (
                "most common configuration"
                if canary.configuration in top
                else "largest configuration with a node that is not degraded"
            )
            + f" ({counts[common]} node{'s' if counts[common] != 1 else ''}: {config_label(canary)}); "
            f"{_hardware_text(canary)}; degraded nodes are never the canary",
        )
    ]
    if chosen:
        stages.append(
            RolloutStage(
                name="2. a few nodes",
                kind=STAGE_FEW,
                nodes=[_planned(r) for r in chosen],
                checks=_few_checks(target),
                why="one node of each other configuration first, so every configuration is proven before it goes "
                "wide; healthy hardware first, a degraded node only for a configuration that has no other",
            )
        )
    chunks = [remaining[i : i + size] for i in range(0, len(remaining), size)]
    for i, chunk in enumerate(chunks, start=1):
        degraded = [r.node for r in chunk if r.hardware == "degraded"]
        stages.append(
            RolloutStage(
                name=f"{len(stages) + 1}. wave {i}",
                kind=STAGE_WAVE,
                nodes=[_planned(r) for r in chunk],
                checks=_wave_checks(target, i == len(chunks)),
                why="image-only nodes before driver upgrades; configurations in order of size"
                + (
                    f"; degraded hardware allowed in a wave ({len(degraded)}: see their findings in the table)"
                    if degraded
                    else ""
                ),
            )
        )
    return RolloutPlan(
        canary=canary.node,
        common_configuration=config_label(canary),
        stages=stages,
        excluded=excluded,
        wave_size=size if chunks else 0,
        held_back=held,
        notes=notes,
    )


def _hardware_notes(eligible: list[NodeRow], held: list[dict[str, Any]]) -> list[str]:
    """What the hardware verdicts did to the plan, in words (shown above the stages)."""
    notes = []
    if held:
        notes.append(
            f"{len(held)} node(s) held back for a faulty GPU or a failed start-up fit: never the canary, never in "
            "the few, never in a wave (listed below with the findings and what to do)."
        )
    degraded = sum(1 for r in eligible if r.hardware == "degraded")
    if degraded:
        notes.append(
            f"{degraded} node(s) with degraded hardware: never the canary, allowed in the waves (their findings are in "
            "the table's hardware_summary)."
        )
    unknown = sum(1 for r in eligible if r.hardware not in ("healthy", "degraded"))
    if unknown:
        notes.append(
            f"{unknown} node(s) with hardware unknown (no GPU health facts): unknown is not faulty, so they are "
            "planned; healthy nodes come first for the canary and the few. Re-run runbook 01 on them before their wave."
        )
    return notes
