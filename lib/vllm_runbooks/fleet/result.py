"""Runbook 07's result: the fleet table, counts per verdict, driver branch, hardware verdict and VBIOS,
the nodes held back for their hardware or start-up fit, and the plan.

Displays itself (table, plot, lists, plan), has the typed headline the runner copies into run.json
(nodes surveyed, answered, per-verdict and per-hardware-verdict counts, nodes held back, canary
candidate), and saves to ``<run_dir>/fleet/result.json``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..display import PALETTE, Figures
from ..records import Record
from ..stage import Headline, ResultMixin, register_result
from .model import (
    ACTION_NO_GPU,
    ACTION_READY,
    ACTION_UNANSWERED,
    ACTION_UPGRADE,
    ACTIONS,
    TABLE_COLUMNS,
    NodeRow,
    TargetImage,
)
from .plan import HELD_BACK_COLUMNS, RolloutPlan, hold_back

VERDICTS = ("ready", "upgrade_needed", "incomplete", "empty")
#: Rows shown in the notebook's table; the whole table is in fleet/result.json and fleet/nodes.csv.
SHOWN_ROWS = 500
ACTION_COLOURS = {
    ACTION_READY: PALETTE["good"],
    ACTION_UPGRADE: PALETTE["warn"],
    "not_eligible": PALETTE["bad"],
    ACTION_NO_GPU: PALETTE["muted"],
    "unknown": PALETTE["unknown"],
    ACTION_UNANSWERED: PALETTE["other"],
}
HARDWARE_COLOURS = {
    "healthy": PALETTE["good"],
    "degraded": PALETTE["warn"],
    "faulty": PALETTE["bad"],
    "unknown": PALETTE["muted"],
    ACTION_UNANSWERED: PALETTE["other"],
}
#: VBIOS versions named in the counts (the most common first); the rest are summed under 'other'.
MAX_VBIOS_COUNTED = 20


def hardware_counts(nodes: list[NodeRow]) -> dict[str, int]:
    """Nodes per hardware verdict in the fixed order (healthy, degraded, faulty, unknown, unanswered).

    A value outside runbook 01's vocabulary (an edited file) counts as unknown, never as healthy.
    """
    from ..evidence.hardware import VERDICTS as HARDWARE_VERDICTS

    c = Counter(
        (n.hardware if n.hardware in HARDWARE_VERDICTS else "unknown") if n.answered else ACTION_UNANSWERED
        for n in nodes
    )
    return {v: c[v] for v in (*HARDWARE_VERDICTS, ACTION_UNANSWERED) if c[v]}


def vbios_counts(nodes: list[NodeRow]) -> dict[str, int]:
    """Answered nodes per VBIOS version (a node with two versions counts under each; 'no GPU' and
    'unknown' for nodes without a version), most common first, at most ``MAX_VBIOS_COUNTED`` named."""
    c: Counter = Counter()
    for n in nodes:
        if not n.answered:
            continue
        versions = [str(v) for v in n.vbios or []]
        if not versions:
            c["no GPU" if not n.gpu_count else "unknown"] += 1
        for v in dict.fromkeys(versions):
            c[v] += 1
    ranked = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
    out = dict(ranked[:MAX_VBIOS_COUNTED])
    rest = ranked[MAX_VBIOS_COUNTED:]
    if rest:
        out[f"other ({len(rest)} versions)"] = sum(v for _, v in rest)
    return out


def fit_counts(nodes: list[NodeRow]) -> dict[str, int]:
    """Answered nodes per start-up fit status (pass, fail, unknown; 'not checked' without a fit item)."""
    c = Counter((n.fit or "not checked") for n in nodes if n.answered)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


@register_result
@dataclass
class FleetResult(Figures, ResultMixin, Record):
    """The survey of every node for one target image, and the staged rollout plan."""

    FIGURES: ClassVar[dict[str, str]] = {
        "counts": "vllm_runbooks.fleet.figures:counts_figure",
    }

    SCHEMA: ClassVar[str] = "fleet_survey"
    SCHEMA_VERSION: ClassVar[int] = 1
    RUNBOOK: ClassVar[str] = "fleet_survey"
    VERDICTS: ClassVar[tuple[str, ...]] = VERDICTS
    ARTEFACT: ClassVar[str] = "fleet/result.json"

    mode: str = "bundles"  # ray | bundles
    target: TargetImage = field(default_factory=TargetImage)
    nodes: list[NodeRow] = field(default_factory=list)
    plan: RolloutPlan | None = None
    surveyed_at: str = ""
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    # -- what the fleet says --------------------------------------------------------------------
    def by_action(self, action: str) -> list[NodeRow]:
        """The nodes the fleet does one thing with (ready, upgrade_driver, unanswered, …)."""
        return [n for n in self.nodes if n.action == action]

    @property
    def answered(self) -> list[NodeRow]:
        """Nodes that gave a bundle."""
        return [n for n in self.nodes if n.answered]

    @property
    def unanswered(self) -> list[NodeRow]:
        """Nodes that gave none, each with why: survey them again before their wave."""
        return self.by_action(ACTION_UNANSWERED)

    def verdict_counts(self) -> dict[str, int]:
        """Nodes per compatibility verdict (unanswered nodes under ``unanswered``), largest first."""
        return dict(Counter(n.verdict for n in self.nodes).most_common())

    def action_counts(self) -> dict[str, int]:
        """Nodes per action, in the fixed order of ``ACTIONS`` (empty actions left out)."""
        c = Counter(n.action for n in self.nodes)
        return {a: c[a] for a in ACTIONS if c[a]}

    def hardware_counts(self) -> dict[str, int]:
        """Nodes per hardware verdict (runbook 01's healthy / degraded / faulty / unknown; unanswered apart)."""
        return hardware_counts(self.nodes)

    def vbios_counts(self) -> dict[str, int]:
        """Answered nodes per VBIOS version, most common first (bounded)."""
        return vbios_counts(self.nodes)

    def fit_counts(self) -> dict[str, int]:
        """Answered nodes per start-up fit status."""
        return fit_counts(self.nodes)

    @property
    def held_back(self) -> list[dict[str, Any]]:
        """Nodes kept out of the rollout for a faulty GPU or a failed fit, each with why and what to do
        (the plan's list; computed by the plan's own rule when there is no plan)."""
        if self.plan is not None:
            return list(self.plan.held_back)
        return [h for h in (hold_back(n) for n in self.nodes) if h is not None]

    def branch_counts(self) -> dict[str, dict[str, int]]:
        """Driver branch → action → nodes (answered nodes; ``none`` for nodes without a driver)."""
        out: dict[str, Counter] = {}
        for n in self.answered:
            out.setdefault(n.driver_branch or "none", Counter())[n.action] += 1
        return {b: dict(out[b]) for b in sorted(out)}

    def verdict(self) -> str:
        """empty: no node; upgrade_needed: a node needs a newer driver; ready: every node answered,
        none is unknown and none is held back; incomplete: nodes did not answer, lack facts, or are
        held back for their hardware or start-up fit."""
        if not self.nodes:
            return "empty"
        if self.by_action(ACTION_UPGRADE):
            return "upgrade_needed"
        if self.unanswered or self.by_action("unknown") or not self.by_action(ACTION_READY) or self.held_back:
            return "incomplete"
        return "ready"

    def headline(self) -> Headline:
        """Nodes surveyed and answered, per-verdict, per-hardware-verdict and per-VBIOS counts, nodes held
        back, the canary candidate (for run.json)."""
        return self.make_headline(
            self.verdict(),
            {
                "target_image_cuda": self.target.image_cuda,
                "profile": self.target.profile,
                "nodes_surveyed": len(self.nodes),
                "answered": len(self.answered),
                "unanswered": len(self.unanswered),
                "verdicts": self.verdict_counts(),
                "ready": len(self.by_action(ACTION_READY)),
                "need_driver_upgrade": len(self.by_action(ACTION_UPGRADE)),
                "hardware": self.hardware_counts(),
                "vbios": self.vbios_counts(),
                "held_back": len(self.held_back),
                "canary": self.plan.canary if self.plan else None,
                "mode": self.mode,
            },
        )

    def scraps(self) -> dict[str, Any]:
        """Counts, the plan and the table (bounded: the first rows; the file holds them all)."""
        from ..redact import redact_obj

        return redact_obj(
            {
                "fleet_counts": {
                    "verdicts": self.verdict_counts(),
                    "actions": self.action_counts(),
                    "driver_branches": self.branch_counts(),
                    "hardware": self.hardware_counts(),
                    "vbios": self.vbios_counts(),
                    "fit": self.fit_counts(),
                },
                "fleet_table": self.table_rows()[:SHOWN_ROWS],
                "fleet_held_back": self.held_back[:SHOWN_ROWS],
                "fleet_unanswered": [{"node": n.node, "why": n.why, "reason": n.reason} for n in self.unanswered],
                "rollout_plan": self.plan.to_dict() if self.plan else None,
                "headline": self.headline().to_dict(),
            }
        )

    def save(self, run_dir: Any) -> Any:
        """``fleet/result.json`` (the record) and ``fleet/nodes.csv`` (the table), never over a file."""
        if not run_dir:
            return None
        import csv
        import io

        from ..artefacts import write_artefact

        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=[*TABLE_COLUMNS, "why"])
        writer.writeheader()
        for n in self.nodes:
            writer.writerow({k: spreadsheet_safe(v) for k, v in {**n.row(), "why": n.why}.items()})
        write_artefact(run_dir, "fleet/nodes.csv", buf.getvalue())
        return write_artefact(run_dir, self.ARTEFACT, self)

    # -- display --------------------------------------------------------------------------------
    def table_rows(self) -> list[dict[str, Any]]:
        """The fleet table as plain rows (the same columns in both collection modes)."""
        return [n.row() for n in self.nodes]

    def table(self) -> Any:
        """The fleet table as a pandas DataFrame (one row per node, the columns of the issue)."""
        import pandas as pd

        return pd.DataFrame(self.table_rows(), columns=list(TABLE_COLUMNS))

    def nodes_view(self, action: str) -> NodeList:
        """A displayable list of the nodes with one action (ready, upgrade_driver, unanswered, …)."""
        return NodeList(action, self.by_action(action))

    def hardware_view(self) -> HardwareCounts:
        """Counts per hardware verdict, VBIOS and fit, and the nodes whose hardware is not healthy."""
        return HardwareCounts(self.nodes)

    def held_back_view(self) -> HeldBackList:
        """The nodes held back for a faulty GPU or a failed start-up fit, with why and what to do."""
        return HeldBackList(self.held_back)

    def _repr_html_(self) -> str:
        from ..display import banner, html_table

        h = self.headline()
        tone = {"ready": "good", "upgrade_needed": "warn", "incomplete": "warn"}.get(h.verdict, "bad")
        f = h.figures
        detail = (
            f"{f['nodes_surveyed']} nodes surveyed ({self.mode}), {f['answered']} answered, "
            f"{f['unanswered']} unanswered; {f['ready']} ready for CUDA {self.target.image_cuda}, "
            f"{f['need_driver_upgrade']} need a driver upgrade; hardware: "
            + (", ".join(f"{k} {v}" for k, v in f["hardware"].items()) or "—")
            + f"; {f['held_back']} held back for hardware or fit; canary: {f['canary'] or '—'}"
        )
        counts = html_table([{"action": a, "nodes": n} for a, n in self.action_counts().items()])
        rows = self.table_rows()[:SHOWN_ROWS]
        more = (
            f"<p>… {len(self.nodes) - SHOWN_ROWS} more rows in fleet/nodes.csv</p>"
            if len(self.nodes) > SHOWN_ROWS
            else ""
        )
        return banner(f"Fleet: {h.verdict}", detail, tone) + counts + html_table(rows, list(TABLE_COLUMNS)) + more


class NodeList:
    """Nodes with one action, as a small table (node, configuration facts, reason)."""

    def __init__(self, action: str, nodes: list[NodeRow]) -> None:
        self.action = action
        self.nodes = nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def _repr_html_(self) -> str:
        from ..display import esc, html_table

        cols = (
            ["node", "why", "reason"]
            if self.action == ACTION_UNANSWERED
            else [
                "node",
                "gpu_name",
                "gpu_count",
                "driver_version",
                "driver_branch",
                "idle",
                "hardware",
                "fit",
                "reason",
            ]
        )
        rows = [{c: getattr(n, c) for c in cols} for n in self.nodes[:SHOWN_ROWS]]
        return f"<h4>{esc(self.action)}: {len(self.nodes)} node(s)</h4>" + html_table(rows, cols)


class HardwareCounts:
    """Nodes per hardware verdict, per VBIOS version and per fit status, then every node whose hardware
    is not healthy (or whose VBIOS is mixed) with its findings: where to look before blaming the image."""

    def __init__(self, nodes: list[NodeRow]) -> None:
        self.nodes = nodes

    def _repr_html_(self) -> str:
        from ..display import html_table

        hw = html_table([{"hardware": k, "nodes": v} for k, v in hardware_counts(self.nodes).items()])
        vb = html_table([{"VBIOS": k, "nodes": v} for k, v in vbios_counts(self.nodes).items()])
        fit = html_table([{"start-up fit": k, "nodes": v} for k, v in fit_counts(self.nodes).items()])
        cols = ["node", "hardware", "hardware_summary", "vbios", "fit"]
        odd = [
            {**{c: getattr(n, c) for c in cols}, "vbios": n.vbios_text}
            for n in self.nodes
            if n.answered and (n.hardware != "healthy" or n.vbios_uniform is False or n.fit == "fail")
        ]
        rows = (
            f"<h4>Nodes not healthy, with mixed VBIOS or a failed fit ({len(odd)})</h4>"
            + html_table(odd[:SHOWN_ROWS], cols)
            if odd
            else "<p>Every answered node's hardware is healthy, its VBIOS uniform and its fit not failed.</p>"
        )
        return (
            "<h4>Nodes per hardware verdict</h4>"
            + hw
            + "<h4>Nodes per VBIOS version</h4>"
            + vb
            + "<h4>Nodes per start-up fit</h4>"
            + fit
            + rows
        )


class HeldBackList:
    """The nodes held back from the rollout (faulty GPU or failed fit), with the findings and what to do."""

    def __init__(self, held_back: list[dict[str, Any]]) -> None:
        self.held_back = held_back

    def __len__(self) -> int:
        return len(self.held_back)

    def _repr_html_(self) -> str:
        from ..display import esc, html_table

        if not self.held_back:
            return "<p>No node held back: no faulty GPU and no failed start-up fit among the answered nodes.</p>"
        more = (
            f"<p>… and {esc(len(self.held_back) - SHOWN_ROWS)} more (see fleet/result.json)</p>"
            if len(self.held_back) > SHOWN_ROWS
            else ""
        )
        return (
            f"<h4>Held back: {len(self.held_back)} node(s)</h4>"
            + html_table(self.held_back[:SHOWN_ROWS], list(HELD_BACK_COLUMNS))
            + more
        )


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: hostnames and reasons come from the nodes' bundles, and
    a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return would be run as a
    formula (``=HYPERLINK(...)``) when an approver opens nodes.csv. Numbers stay numbers."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
