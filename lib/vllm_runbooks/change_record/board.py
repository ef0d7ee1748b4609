"""The fields a change board asks for: type, risk and impact, what is affected, windows, plan, backout.

Why derived and not typed in: a change request filled by hand says what the requester believes;
here each field says what it was read from (the fleet survey's plan, the runs' own times, the
rollback conditions, the verified scope), and a person may override risk or impact only with a
reason, which the record shows beside the derived value. The levels for each path and the node
counts that move impact are organisation defaults in ``data/change_record.yaml`` (``board``), not
facts about NVIDIA or vLLM.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from ..bounded import load_json
from ..execution.runjson import latest_artefact
from ..redact import redact_text
from .model import ChangeBoard, RollbackCondition, ScopeItem
from .options import RecordOptions
from .sources import MAX_JSON_BYTES, RunView

if TYPE_CHECKING:
    from ..fleet.plan import RolloutStage
    from ..fleet.result import FleetResult

CHANGE_TYPES = ("standard", "normal", "emergency")
LEVELS = ("low", "medium", "high")
#: At most this many sibling run directories are looked at for an earlier approval of the same path.
MAX_PRIOR_RUNS = 200
MAX_LISTED = 50


def _when(text: Any) -> _dt.datetime | None:
    """An ISO-8601 time with its zone (``Z`` or an offset); None for anything else."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        got = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return got if got.tzinfo is not None else None


def planned_window(opts: RecordOptions) -> dict[str, Any]:
    """The planned window from the parameters, or why it is not on record (never a guessed time)."""
    if not opts.planned_start and not opts.planned_end:
        return {"start": None, "end": None, "why": "not given (parameters planned_start, planned_end)"}
    start, end = _when(opts.planned_start), _when(opts.planned_end)
    bad = [
        f"{name} {value!r} is not an ISO-8601 time with a zone (e.g. 2026-12-03T22:00:00Z)"
        for name, value, got in (("planned_start", opts.planned_start, start), ("planned_end", opts.planned_end, end))
        if got is None
    ]
    if bad:
        return {"start": None, "end": None, "why": redact_text("; ".join(bad))[:300]}
    if end <= start:  # type: ignore[operator]
        return {"start": None, "end": None, "why": f"planned_end {opts.planned_end} is not after planned_start"}
    return {"start": start.isoformat(), "end": end.isoformat(), "why": "parameters planned_start, planned_end"}  # type: ignore[union-attr]


def actual_window(run: RunView) -> dict[str, Any]:
    """From the first runbook's start to the last one's end, as run.json recorded them."""
    starts, ends = [], []
    for raw in run.data.get("runbooks") or []:
        if not isinstance(raw, dict):
            continue
        s, e = _when(raw.get("started_at")), _when(raw.get("ended_at"))
        starts += [s] if s else []
        ends += [e] if e else []
    if not starts:
        return {"start": None, "end": None, "from": "run.json has no runbook with a start time"}
    return {
        "start": min(starts).isoformat(),
        "end": max(ends).isoformat() if ends else None,
        "from": f"run.json: {len(starts)} runbook(s) started, {len(ends)} finished",
    }


def _plan_stages(fleet: FleetResult | None) -> list[RolloutStage]:
    return list(fleet.plan.stages) if fleet is not None and fleet.plan is not None else []


def affected_nodes(run: RunView, fleet: FleetResult | None) -> tuple[list[str], str]:
    """The fleet plan's nodes (every stage), else runbook 01's host; with where they came from."""
    stages = _plan_stages(fleet)
    nodes = [n.node for s in stages for n in s.nodes if n.node]
    if nodes and fleet is not None and fleet.plan is not None:
        held = [str(h.get("node")) for h in fleet.plan.held_back if isinstance(h, dict)]
        out = f"; held back for hardware or fit, out of this change: {', '.join(held[:12])}" if held else ""
        return list(dict.fromkeys(nodes)), f"runbook 07's rollout plan ({len(stages)} stage(s)){out}"
    evidence, why = run.evidence()
    host = evidence.get("host", "hostname") if evidence is not None else None
    if host:
        return [str(host)], "runbook 01's host (no fleet survey in this run)"
    return [], f"not on record: no fleet survey and no host in runbook 01's evidence ({why or 'no hostname'})"


def affected_endpoints(run: RunView) -> list[str]:
    """Every endpoint a runbook of this run was pointed at (its ``endpoint`` parameter), redacted."""
    out: list[str] = []
    for raw in run.data.get("runbooks") or []:
        params = raw.get("parameters") if isinstance(raw, dict) else None
        value = params.get("endpoint") if isinstance(params, dict) else None
        if isinstance(value, str) and value and value not in out:
            out.append(redact_text(value)[:200])
    return out[:MAX_LISTED]


def implementation_plan(run: RunView, fleet: FleetResult | None) -> tuple[list[dict], str]:
    """Runbook 07's waves when present, else the canary's expansion order (isolated → few → shared)."""
    stages = _plan_stages(fleet)
    if stages:
        rows = [
            {
                "step": s.name or s.kind or "?",
                "nodes": [n.node for n in s.nodes][:MAX_LISTED],
                "checks": [str(c) for c in s.checks][:12],
            }
            for s in stages
        ]
        return rows, "runbook 07's rollout plan (canary, a few nodes, waves)"
    report = run.result("canary_validation")
    rows = [
        {"step": s.stage or "?", "nodes": [], "checks": [str(c) for c in s.conditions][:12]}
        for s in (report.plan if report is not None else [])
    ]
    if rows:
        return rows, "runbook 03's expansion plan (no fleet survey in this run)"
    from ..canary.plan import expansion_plan

    default = [{"step": s.stage, "nodes": [], "checks": list(s.conditions)} for s in expansion_plan([], "incomplete")]
    return default, "the procedure's expansion order (runbook 03 did not run: nothing shown to pass yet)"


def _level(index: int) -> str:
    return LEVELS[max(0, min(len(LEVELS) - 1, index))]


def derived_risk(path: str | None, unverified: list[ScopeItem], words: dict) -> tuple[str, str]:
    """The adopted path's level, one higher when much of the scope is still unverified."""
    rules = words["board"]
    base = rules["path_risk"].get(path or "", rules["path_risk"]["default"])
    open_items = [s for s in unverified if s.name not in words["unverified_always"]]
    raise_at = int(rules["unverified_raises_at"])
    level = LEVELS.index(base) + (1 if len(open_items) >= raise_at else 0)
    why = f"path {path or 'none'}: {base}"
    if len(open_items) >= raise_at:
        why += (
            f"; {len(open_items)} scope item(s) unverified beyond the always-unverified ones (≥ {raise_at}): one higher"
        )
    return _level(level), why


def derived_impact(nodes: list[str], fleet: FleetResult | None, words: dict) -> tuple[str, str]:
    """How many nodes the change reaches (the fleet plan, else one host)."""
    limits = words["board"]["impact_nodes"]
    n = len(nodes)
    if not n:
        return "unknown", "no affected node on record (no fleet survey, no host in runbook 01's evidence)"
    level = "low" if n <= int(limits["low"]) else "medium" if n <= int(limits["medium"]) else "high"
    surveyed = len(fleet.nodes) if fleet is not None else 0
    of = f" of {surveyed} surveyed" if surveyed else ""
    return level, f"{n} node(s){of} affected (≤ {limits['low']} low, ≤ {limits['medium']} medium, more high)"


def _override(value: str | None, reason: str | None, derived: tuple[str, str], name: str) -> tuple[str, str, str]:
    """(level, why, derived-when-overridden): a parameter wins only with a reason."""
    level, why = derived
    if not value:
        return level, why, ""
    if value not in LEVELS:
        return level, f"{why} (parameter {name}={value!r} ignored: one of {', '.join(LEVELS)})", ""
    if not (reason or "").strip():
        return level, f"{why} (parameter {name}={value} ignored: {name}_reason is required to override)", ""
    return value, f"set by hand: {redact_text(reason or '')[:300]}", f"{level} ({why})"


def _record_profile(data: dict[str, Any]) -> str:
    board = data.get("board") if isinstance(data.get("board"), dict) else {}
    return str(board.get("profile") or "")


def standard_offer(run: RunView, path: str | None, profile: str) -> str:
    """An earlier record of the same path and profile beside this run that its policy counts as approved."""
    if not path or not profile:
        return ""
    from .approvals import check_approvals, policy_status

    try:
        siblings = sorted(
            (p for p in run.path.parent.iterdir() if p.is_dir() and p != run.path and not p.is_symlink()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )[:MAX_PRIOR_RUNS]
    except OSError:
        return ""
    for other in siblings:
        try:
            found = latest_artefact(other, "change_record.json")
            data = load_json(found, MAX_JSON_BYTES)[0] if found else None
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("schema") != "change_record":
            continue
        if (data.get("adopted_path") or {}).get("path") != path or _record_profile(data) != profile:
            continue
        status, why = policy_status(data, check_approvals(other))
        if status.startswith("approved"):
            return (
                f"path {path} for profile {profile} was approved before in run {other.name} ({why}): "
                "this change may be filed as a standard change"
            )
    return ""


def record_profile(run: RunView) -> str:
    """The model profile runbook 02 decided for ("" when it recorded none)."""
    result = run.result("compatibility_decision")
    return str(result.report.decision.profile or "") if result is not None else ""


def backout(rollback: list[RollbackCondition], run: RunView, opts: RecordOptions) -> tuple[list[str], str]:
    """The rollback conditions as the backout plan, and whether any run here shows a rollback done."""
    plan = [f"put back {r.put_back} when {r.when}" for r in rollback][:MAX_LISTED]
    if not plan:
        plan = ["no rollback condition could be derived: see the rollback section"]
    where = f"; the old state is kept at {opts.rollback_store}" if opts.rollback_store else ""
    exercised = (
        "not exercised: no runbook in this run restores the previous driver or image and checks it again"
        f"{where}; record the rollback test in the close note"
    )
    return plan, exercised


def change_board(
    run: RunView,
    path: str | None,
    unverified: list[ScopeItem],
    rollback: list[RollbackCondition],
    opts: RecordOptions,
    words: dict,
) -> ChangeBoard:
    """Every change-board field, derived from the run (or a parameter with its reason)."""
    fleet = run.result("fleet_survey")
    nodes, nodes_from = affected_nodes(run, fleet)
    risk, risk_why, risk_derived = _override(opts.risk, opts.risk_reason, derived_risk(path, unverified, words), "risk")
    impact, impact_why, impact_derived = _override(
        opts.impact, opts.impact_reason, derived_impact(nodes, fleet, words), "impact"
    )
    profile = record_profile(run)
    offer = standard_offer(run, path, profile)
    kind = opts.change_type or ""
    if kind and kind not in CHANGE_TYPES:
        kind_why = f"parameter change_type={kind!r} ignored (one of {', '.join(CHANGE_TYPES)}); normal by default"
        kind = "normal"
    elif kind:
        kind_why = "parameter change_type"
    else:
        kind = "normal"
        kind_why = "normal by default (parameter change_type)" + ("; see the standard-change offer" if offer else "")
    steps, plan_from = implementation_plan(run, fleet)
    plan, exercised = backout(rollback, run, opts)
    return ChangeBoard(
        change_type=kind,
        change_type_why=kind_why,
        standard_offer=offer,
        risk=risk,
        risk_why=risk_why,
        risk_derived=risk_derived,
        impact=impact,
        impact_why=impact_why,
        impact_derived=impact_derived,
        profile=profile,
        affected_nodes=nodes[:MAX_LISTED]
        + ([f"… and {len(nodes) - MAX_LISTED} more"] if len(nodes) > MAX_LISTED else []),
        affected_nodes_from=nodes_from,
        affected_services=[redact_text(str(s))[:200] for s in opts.affected_services][:MAX_LISTED],
        affected_endpoints=affected_endpoints(run),
        planned_window=planned_window(opts),
        actual_window=actual_window(run),
        implementation_plan=steps,
        plan_from=plan_from,
        backout_plan=plan,
        backout_exercised=exercised,
        watch_hours=opts.watch_hours,
    )
