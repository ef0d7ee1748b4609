"""Building the change record from a run directory (and optionally a baseline run directory).

Why every item is derived, never typed: the checklist is the part of a change that people tick
from memory. Here an item is ticked only when a runbook result proves it, with a citation of the
file (and its sha256) that proves it; everything else is unticked with the reason. Runbooks
that did not run are named as missing, never silently assumed.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..records import utc_now
from .compare import Thresholds, canary_steps, compare_views, environment, error_classes, log_failures
from .integrity import digest_of, verify_run
from .model import (
    BaselineItem,
    ChangeRecord,
    ChecklistItem,
    Citation,
    RollbackCondition,
    RunbookLine,
    ScopeItem,
)
from .sources import RecordRefused, RunView

VOCABULARY = Path(__file__).resolve().parents[1] / "data" / "change_record.yaml"
#: The procedure's runbooks before the record, in order (07, the fleet survey, is optional).
PROCEDURE = ("evidence_capture", "compatibility_decision", "canary_validation", "prefix_cache_check", "load_check")
LOAD_CHECK = "load_check"
SUITE_FILE = "suite/suite.json"
#: Prefix-cache verdicts that explain the hit conditions (only "inconclusive" does not).
EXPLAINED = {"working", "disabled", "prefix_too_short", "prefix_mismatch", "evicted"}
#: Remediation paths that change nothing in the environment.
NO_CHANGE_PATHS = {"no_driver_change", None, ""}
#: Runbook 02 verdicts that are the startup failure itself ("unknown" proves nothing).
FAILURE_VERDICTS = {"driver_too_old", "arch_unsupported"}
LOGS_DIR = "evidence/raw/logs/"


@cache
def vocabulary() -> dict[str, Any]:
    """The record's texts (checklist, scope, paths, triggers) from data/change_record.yaml."""
    return yaml.safe_load(VOCABULARY.read_text(encoding="utf-8"))


@dataclass
class RecordOptions:
    """What the record cannot read from results: a hand-chosen path, dates, where rollbacks live."""

    adopted_path: str | None = None
    reevaluate_days: int = 30
    today: str | None = None  # ISO date; None = today (UTC)
    rollback_store: str | None = None
    watch_hours: int = 24
    thresholds: Thresholds = field(default_factory=Thresholds)


class _Cite:
    """Makes citations of one run's artefacts as links relative to the record's run directory."""

    def __init__(self, view: RunView, record_dir: Path, cited: dict[str, str]) -> None:
        self.view, self.record_dir, self.cited = view, record_dir, cited

    def __call__(self, runbook: str, rel: str, what: str = "", value: Any = None) -> Citation:
        digest = digest_of(self.view, rel)
        link = os.path.relpath(self.view.path / rel, self.record_dir)
        self.cited[link] = digest
        return Citation(self.view.run_id, runbook, link, what, _short(value), digest)


def _short(value: Any, limit: int = 160) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


def build_record(
    run_dir: str | Path,
    baseline_dir: str | Path | None = None,
    options: RecordOptions | None = None,
    *,
    record_dir: str | Path | None = None,
) -> ChangeRecord:
    """Read, verify (sha256) and judge a run; refuses with ``RecordRefused`` naming the altered file.

    ``record_dir`` is where the record will be written (links are relative to it); default ``run_dir``.
    """
    opts = options or RecordOptions()
    run = RunView.load(run_dir, allow_empty=True)
    base = RunView.load(baseline_dir) if baseline_dir else None
    if base is not None and base.path == run.path:
        raise RecordRefused(f"{base.path}: the baseline must be another run directory than the run itself")
    verify_run(run)
    if base is not None:
        verify_run(base)
    cited: dict[str, str] = {}
    out_dir = Path(record_dir).resolve() if record_dir else run.path
    cite = _Cite(run, out_dir, cited)
    cite_base = _Cite(base, out_dir, cited) if base is not None else None
    words = vocabulary()

    steps = canary_steps(run)
    canary_file = _canary_file(run)
    runbooks, missing = _runbooks(run)
    path = _adopted_path(run, base, cite, cite_base, opts, words)
    verified, unverified = _scope(run, steps, canary_file, cite, words)
    checklist = _checklist(run, base, steps, verified, cite, cite_base, words)
    baseline = _baseline(base, cite_base, opts, words)
    rollback = _rollback(run, base, path.get("path"), steps, opts)
    checklist.append(_rollback_item(rollback, baseline, base, words))
    today = _dt.date.fromisoformat(opts.today) if opts.today else _dt.datetime.now(_dt.UTC).date()
    comparison = compare_views(base, run, opts.thresholds) if base is not None else []
    remediation = _remediation(base) if _recommends_change(base) else _remediation(run)
    return ChangeRecord(
        run_id=run.run_id,
        run_dir=str(run.path),
        created_at=utc_now(),
        adopted_path=path,
        reasons=[str(r) for r in (remediation.get("reasons") or [])][:12],
        constraints={
            k: v for k, v in (remediation.get("constraints") or {}).items() if k not in ("schema", "schema_version")
        },
        runbooks=runbooks,
        missing=missing,
        verified=verified,
        unverified=unverified,
        rollback=rollback,
        reevaluate_on=(today + _dt.timedelta(days=max(1, int(opts.reevaluate_days)))).isoformat(),
        triggers=list(words["triggers"]),
        checklist=checklist,
        baseline=baseline,
        comparison=comparison,
        baseline_run=base.run_id if base is not None else None,
        baseline_dir=os.path.relpath(base.path, out_dir) if base is not None else None,
        rollback_store=opts.rollback_store,
        artefacts=dict(sorted(cited.items())),
    )


# -- runbooks ------------------------------------------------------------------------------------
def _suite_plan(run: RunView) -> dict[str, dict[str, Any]]:
    data = run.read_json(SUITE_FILE)
    entries = data.get("runbooks") if isinstance(data, dict) else None
    return {e["name"]: e for e in entries or [] if isinstance(e, dict) and isinstance(e.get("name"), str)}


def _runbooks(run: RunView) -> tuple[list[RunbookLine], list[str]]:
    plan = _suite_plan(run)
    names = list(PROCEDURE) + [n for n in list(plan) + list(run.entries) if n not in PROCEDURE and n != "change_record"]
    lines, missing = [], []
    for name in dict.fromkeys(names):
        entry = run.entry(name)
        if entry is not None:
            reason = entry.error if entry.status != "ok" else None
            lines.append(
                RunbookLine(name, entry.status, entry.verdict, reason, entry.notebook, entry.html, entry.report_html)
            )
            if entry.status != "ok":
                missing.append(f"{name}: failed — {entry.error or 'no error recorded'}")
            continue
        planned = plan.get(name) or {}
        if name == LOAD_CHECK and not planned and name not in run.entries:
            reason = "runbook 05 (load check) is not part of this run"
        else:
            reason = planned.get("reason") or "not run in this run directory"
        lines.append(RunbookLine(name, str(planned.get("status") or "not run"), None, reason))
        missing.append(f"{name}: {reason}")
    return lines, missing


def _remediation(view: RunView | None) -> dict[str, Any]:
    if view is None:
        return {}
    found = view.read_json("compat/decision.json")
    report = found.get("report") if isinstance(found, dict) else None
    if isinstance(report, dict) and isinstance(report.get("remediation"), dict):
        return report["remediation"]
    scrap = view.scraps("compatibility_decision").get("remediation")
    return scrap if isinstance(scrap, dict) else {}


def _compat_file(view: RunView) -> str | None:
    found = view.artefact("compat/decision.json")  # the newest attempt the manifest lists
    if found:
        return found
    entry = view.entry("compatibility_decision")
    return entry.notebook if entry and entry.notebook and entry.notebook in view.manifest else None


def _recommends_change(view: RunView | None) -> bool:
    return view is not None and _remediation(view).get("path") not in NO_CHANGE_PATHS


def _adopted_path(
    run: RunView, base: RunView | None, cite: _Cite, cite_base: _Cite | None, opts: RecordOptions, words: dict
) -> dict[str, Any]:
    """The path from runbook 02 (the baseline's decision when it recommended a change), or by hand."""
    source, c = (base, cite_base) if _recommends_change(base) else (run, cite)
    remediation = _remediation(source)
    recommended = remediation.get("path")
    evidence = []
    rel = _compat_file(source) if source is not None else None
    if recommended and rel and c is not None:
        evidence.append(c("compatibility_decision", rel, "remediation.path", recommended))
    chosen = opts.adopted_path or recommended
    out = {
        "path": chosen,
        "title": words["paths"].get(chosen, remediation.get("title") or chosen or "no path recorded"),
        "chosen_by_hand": bool(opts.adopted_path),
        "recommended": recommended,
        "recommended_title": remediation.get("title"),
        "evidence": [e.to_dict() for e in evidence],
        "from_run": ("baseline run " if source is base and base is not None else "this run ")
        + (source.run_id if source is not None else ""),
    }
    if not recommended:
        out["note"] = "runbook 02 recorded no remediation in this run" + (" or the baseline" if base else "")
    return out


# -- scope ---------------------------------------------------------------------------------------
def _canary_file(run: RunView) -> str | None:
    return run.artefact("canary/canary_report.json")  # the newest attempt, as load_result reads it


def _step_file(run: RunView, step: str) -> str | None:
    return run.artefact(f"canary/steps/{step}.json") or _canary_file(run)


def _step_scope(run: RunView, steps: dict, name: str, cite: _Cite) -> tuple[bool, str, list[Citation]]:
    """(verified, reason, citations) of one canary step."""
    entry = run.entry("canary_validation")
    if entry is None:
        return False, "runbook 03 (canary) did not run", []
    if not steps:
        return (
            False,
            f"runbook 03 left no canary report (status {entry.status}: {entry.error or 'no error recorded'})",
            [],
        )
    step = steps.get(name)
    if step is None:
        return False, f"canary step {name!r} did not run (not in the canary report)", []
    status, reason = step.get("status"), str(step.get("reason") or "")
    rel = _step_file(run, name)
    if status == "pass" and rel:
        return True, reason, [cite("canary_validation", rel, f"step {name}: pass", _short(reason, 100))]
    if status == "skip":
        return False, f"canary step {name} skipped: {reason}", []
    return False, f"canary step {name} {status}: {reason}", []


LOAD_FILE = "load/load_check.json"


def _load_stages(run: RunView) -> dict[str, dict[str, Any]]:
    """Runbook 05's stages by name (load/load_check.json; else the headline's status map)."""
    data = run.read_json(LOAD_FILE)  # newest listed attempt
    stages = data.get("stages") if isinstance(data, dict) else None
    if isinstance(stages, list):
        return {s["stage"]: s for s in stages if isinstance(s, dict) and isinstance(s.get("stage"), str)}
    entry = run.entry(LOAD_CHECK)
    status = entry.figures.get("stages") if entry else None
    return (
        {k: {"stage": k, "status": v, "reason": ""} for k, v in (status or {}).items()}
        if isinstance(status, dict)
        else {}
    )


def _load_stage(run: RunView, stage: str) -> tuple[bool | None, str]:
    """(passed, reason) of one runbook 05 stage; None when 05 did not run or did not record it."""
    entry = run.entry(LOAD_CHECK)
    if entry is None:
        return None, "runbook 05 (load check) did not run"
    if entry.status != "ok":
        return None, f"runbook 05 (load check) failed: {entry.error or 'no error recorded'}"
    found = _load_stages(run).get(stage)
    if found is None:
        return None, f"runbook 05 recorded no {stage!r} stage"
    status, reason = found.get("status"), str(found.get("reason") or "")
    return status == "pass", f"runbook 05 stage {stage}: {status}" + (f" ({reason})" if reason else "")


def _load_restarts(run: RunView) -> tuple[bool | None, str]:
    """Restart stability: runbook 05's health stage restarted the server N times, each healthy again."""
    ok, reason = _load_stage(run, "health")
    if ok is None:
        return None, reason
    details = _load_stages(run).get("health", {}).get("details")
    restarts = details.get("restarts") if isinstance(details, dict) else None
    if not restarts or not isinstance(restarts, list):
        return None, "runbook 05 ran without restarts (give restart_count with restart_command or restart_target)"
    bad = [r for r in restarts if not (isinstance(r, dict) and r.get("ok"))]
    if bad:
        return False, f"runbook 05: {len(bad)} of {len(restarts)} restarts did not come back healthy"
    # A result saved before restarts had to be observed (health dropped or identity changed) may
    # count the old server answering as a restart: such a result proves nothing.
    unseen = [r for r in restarts if not r.get("observed")]
    if unseen:
        return None, f"runbook 05: {len(unseen)} of {len(restarts)} restarts were not observed to happen"
    times = [r.get("seconds_to_healthy") for r in restarts]
    return True, f"runbook 05: {len(restarts)} restarts, healthy again after {times} s"


def _cite_load(run: RunView, cite: _Cite, what: str, value: Any) -> list[Citation]:
    rel = run.artefact(LOAD_FILE)
    if rel:
        return [cite(LOAD_CHECK, rel, what, value)]
    entry = run.entry(LOAD_CHECK)
    if entry and entry.notebook and entry.notebook in run.manifest:
        return [cite(LOAD_CHECK, entry.notebook, what, value)]
    return []


def _scope(
    run: RunView, steps: dict, canary_file: str | None, cite: _Cite, words: dict
) -> tuple[list[ScopeItem], list[ScopeItem]]:
    titles = words["scope"]
    items: list[ScopeItem] = []
    for key, step in (("model_load", "model_load"), ("short_text", "short_text")):
        ok, reason, ev = _step_scope(run, steps, step, cite)
        items.append(ScopeItem(key, titles[key], ok, reason, ev))
    ok, reason = _load_stage(run, "single_long")
    ev = _cite_load(run, cite, "stage single_long", "pass") if ok else []
    items.append(ScopeItem("long_text", titles["long_text"], bool(ok and ev), reason, ev))
    ok, reason, ev = _step_scope(run, steps, "image_input", cite)
    items.append(ScopeItem("image", titles["image"], ok, reason, ev))
    parts = [_step_scope(run, steps, s, cite) for s in ("tool_calling", "structured_agent", "agent_retry")]
    ok = all(p[0] for p in parts)
    reason = (
        "; ".join(dict.fromkeys(p[1] for p in parts if not p[0])) or "tool calls, structured output and retry verified"
    )
    items.append(
        ScopeItem("agent_tools", titles["agent_tools"], ok, reason, [c for p in parts for c in p[2]] if ok else [])
    )
    ok, reason, ev = _step_scope(run, steps, "multi_gpu", cite)
    items.append(ScopeItem("communication", titles["communication"], ok, reason, ev))

    always = words["unverified_always"]
    # Only runbook 05's own field says so: a passed ramp may have stopped below the target
    # (SLO, saturation) or been cut by the global caps.
    conc, reason = _load_stage(run, "ramp")
    load = run.entry(LOAD_CHECK)
    figures = load.figures if load is not None and isinstance(load.figures, dict) else {}
    if conc is not None:
        conc = figures.get("target_concurrency_verified") is True
        why = str(figures.get("target_concurrency_reason") or "")
        if not conc:
            reason = "runbook 05 did not verify the target concurrency: " + (
                why or "its result records no target_concurrency_verified (rerun runbook 05)"
            )
        else:
            reason = f"runbook 05 verified the target concurrency: {why}"
    ev = _cite_load(run, cite, "target_concurrency_verified", True) if conc else []
    items.append(
        ScopeItem(
            "production_concurrency",
            always["production_concurrency"],
            bool(conc and ev),
            reason,
            ev,
        )
    )
    items.append(
        ScopeItem(
            "long_running_stability",
            always["long_running_stability"],
            False,
            "no soak window is part of this procedure: watch the first hours (rollback conditions)",
        )
    )
    rest, reason = _load_restarts(run)
    ev = _cite_load(run, cite, "restart stability", reason) if rest else []
    items.append(
        ScopeItem(
            "failure_recovery",
            always["failure_recovery"],
            bool(rest and ev),
            "restart stability verified by runbook 05" if rest and ev else f"restart stability unverified: {reason}",
            ev,
        )
    )
    verified = [i for i in items if i.verified]
    unverified = [i for i in items if not i.verified]
    for item in verified:  # a verified item without a citation would be a claim by hand
        if not item.evidence:
            raise AssertionError(f"scope item {item.name} verified without evidence")
    return verified, unverified


# -- checklist -----------------------------------------------------------------------------------
def _verdict_citation(view: RunView, name: str, c: _Cite) -> list[Citation]:
    entry = view.entry(name)
    if entry is None:
        return []
    rel = _compat_file(view) if name == "compatibility_decision" else entry.notebook
    if not rel or rel not in view.manifest:
        return []
    return [c(name, rel, "verdict", entry.verdict)]


def _checklist(
    run: RunView,
    base: RunView | None,
    steps: dict,
    verified: list[ScopeItem],
    cite: _Cite,
    cite_base: _Cite | None,
    words: dict,
) -> list[ChecklistItem]:
    texts = words["checklist"]
    by = {s.name: s for s in verified}
    out: list[ChecklistItem] = []

    # 1. the startup failure no longer reproduces: before (baseline) failing, after starting
    after = run.entry("compatibility_decision")
    after_ok = after is not None and after.status == "ok" and str(after.verdict or "").startswith("compatible")
    loads = "model_load" in by
    if base is None:
        out.append(
            ChecklistItem(
                "startup_failure_gone",
                texts["startup_failure_gone"],
                False,
                "no baseline run given: the failure before the change is not on record",
            )
        )
    else:
        before = base.entry("compatibility_decision")
        ran = before is not None and before.status == "ok"
        labels = sorted(log_failures(base)) if ran else []
        before_bad = ran and (before.verdict in FAILURE_VERDICTS or bool(labels))  # type: ignore[union-attr]
        if before_bad and after_ok and loads:
            ev = _verdict_citation(base, "compatibility_decision", cite_base) + _verdict_citation(
                run, "compatibility_decision", cite
            )
            ev += by["model_load"].evidence
            shown = f"{before.verdict}" + (f", failing log labels {', '.join(labels)}" if labels else "")  # type: ignore[union-attr]
            out.append(
                ChecklistItem(
                    "startup_failure_gone",
                    texts["startup_failure_gone"],
                    True,
                    f"before: {shown}; after: compatible and the model loads",
                    ev,
                )
            )
        else:
            why = []
            if not before_bad:
                why.append(
                    "the baseline's runbook 02 does not show the failure "
                    f"(verdict {before.verdict if before else 'not run'}, no failing log label; "
                    f"it must be one of {', '.join(sorted(FAILURE_VERDICTS))} or name a failing log label)"
                )
            if not after_ok:
                why.append(f"runbook 02 after the change: {after.verdict if after else 'not run'}")
            if not loads:
                why.append("model load not verified after the change")
            out.append(ChecklistItem("startup_failure_gone", texts["startup_failure_gone"], False, "; ".join(why)))

    # 2. model load and restart
    rest, reason = _load_restarts(run)
    if loads and rest:
        ev = by["model_load"].evidence + _cite_load(run, cite, "restart stability", reason)
        out.append(
            ChecklistItem(
                "load_and_restart", texts["load_and_restart"], True, "model load (03) and restarts (05) pass", ev
            )
        )
    else:
        why = [] if loads else ["model load not verified (runbook 03)"]
        if not rest:
            why.append(f"restart stability unverified: {reason}")
        out.append(ChecklistItem("load_and_restart", texts["load_and_restart"], False, "; ".join(why)))

    # 3. prefix cache explained (runbook 04's verdict)
    entry = run.entry("prefix_cache_check")
    rel = run.first_existing("prefix_cache/check.json")
    if entry is not None and entry.status == "ok" and entry.verdict in EXPLAINED and rel in run.manifest:
        ev = [cite("prefix_cache_check", rel, "verdict", entry.verdict)]
        out.append(
            ChecklistItem(
                "prefix_cache_explained",
                texts["prefix_cache_explained"],
                True,
                f"runbook 04 verdict: {entry.verdict}",
                ev,
            )
        )
    else:
        why = (
            "runbook 04 did not run"
            if entry is None
            else (
                f"runbook 04 failed: {entry.error}"
                if entry.status != "ok"
                else f"runbook 04 verdict {entry.verdict!r} does not explain the hit conditions"
            )
        )
        out.append(ChecklistItem("prefix_cache_explained", texts["prefix_cache_explained"], False, why))

    # 4. agent tool calls, retries and structured output
    agent = by.get("agent_tools")
    if agent:
        out.append(ChecklistItem("agent_tools", texts["agent_tools"], True, agent.reason, agent.evidence))
    else:
        parts = [_step_scope(run, steps, s, cite) for s in ("tool_calling", "structured_agent", "agent_retry")]
        out.append(
            ChecklistItem(
                "agent_tools", texts["agent_tools"], False, "; ".join(dict.fromkeys(p[1] for p in parts if not p[0]))
            )
        )

    # 5. multi-node communication: canary multi_gpu pass and no communication error class in the logs
    comm = by.get("communication")
    comm_errors = sorted(
        c for c in error_classes(run) if "nccl" in c.lower() or "communication" in c.lower() or c == "canary:multi_gpu"
    )
    load_failed = _load_stages(run).get("multi_node", {}).get("status") == "fail"
    load_reason = _load_stage(run, "multi_node")[1]
    if comm and not comm_errors and not load_failed:
        out.append(ChecklistItem("communication", texts["communication"], True, comm.reason, comm.evidence))
    else:
        why = []
        if not comm:
            why.append(_step_scope(run, steps, "multi_gpu", cite)[1])
        if comm_errors:
            why.append(f"communication error classes in the logs: {', '.join(comm_errors)}")
        if load_failed:
            why.append(load_reason)
        out.append(ChecklistItem("communication", texts["communication"], False, "; ".join(why)))

    # 6-8. monitoring, log storage, access control
    ok, reason, ev = _step_scope(run, steps, "monitoring", cite)
    out.append(ChecklistItem("monitoring", texts["monitoring"], ok, reason, ev))
    out.append(_log_storage(run, base, cite, texts))
    ok, reason, ev = _step_scope(run, steps, "access_control", cite)
    step = steps.get("access_control") or {}
    warning = (step.get("details") or {}).get("warning") if isinstance(step.get("details"), dict) else None
    out.append(ChecklistItem("access_control", texts["access_control"], ok, str(warning or reason), ev))
    return out


def _log_storage(run: RunView, base: RunView | None, cite: _Cite, texts: dict) -> ChecklistItem:
    """Ticked only for logs this run's runbook 01 stored that are not the baseline's logs again.

    The reason says what is shown: logs captured into this run's evidence, not that the
    production log store keeps them (no runbook reads that store).
    """
    logs = sorted(rel for rel in run.manifest if rel.startswith(LOGS_DIR))
    old = {d for rel, d in base.manifest.items() if rel.startswith(LOGS_DIR)} if base is not None else set()
    fresh = [rel for rel in logs if run.manifest[rel] not in old]
    if fresh:
        ev = [cite("evidence_capture", rel, "server log stored (redacted)") for rel in fresh[:5]]
        against = (
            "none of them byte-identical to the baseline's logs"
            if base is not None
            else "no baseline given, so they are not shown to differ from the logs before the change"
        )
        why = (
            f"runbook 01 of this run captured {len(fresh)} server log file(s) into its evidence ({against}); "
            "where production keeps its logs is not checked by any runbook"
        )
        return ChecklistItem("log_storage", texts["log_storage"], True, why, ev)
    entry = run.entry("evidence_capture")
    if logs:
        why = (
            f"the {len(logs)} log file(s) runbook 01 stored are byte-identical to the baseline's: "
            "no log from after the change"
        )
    elif entry is None:
        why = "runbook 01 did not run"
    else:
        why = "runbook 01 stored no server log (no container, log path or bundle logs given)"
    return ChecklistItem("log_storage", texts["log_storage"], False, why)


# -- baseline ------------------------------------------------------------------------------------
def _evidence_item(view: RunView, name: str) -> tuple[Any, str]:
    """Runbook 01's typed Evidence when its ``name`` section holds a value, else (None, why)."""
    evidence, why = view.evidence()
    if evidence is None:
        return None, f"{why} in the baseline run"
    if name not in evidence.items:
        return None, f"evidence has no {name!r} section"
    if evidence.status(name) not in ("ok", "partial"):
        return None, f"evidence {name}: {evidence.status(name)} ({evidence.item(name).reason or 'no reason recorded'})"
    return evidence, ""


def _interconnect(ev: Any) -> str | None:
    value = ev.get("interconnect")
    return ", ".join(k for k, x in value.items() if x) or None if isinstance(value, dict) else None


def _runtime(ev: Any) -> str | None:
    return ev.get("container_runtime", "nvidia_ctk_version") or ev.get("container_runtime", "docker_version")


def _gpus(ev: Any) -> str | None:
    gpus = ev.get("nvidia", "gpus")
    return f"{len(gpus)} GPU(s)" if isinstance(gpus, list) and gpus else None


def _baseline(base: RunView | None, cite: _Cite | None, opts: RecordOptions, words: dict) -> list[BaselineItem]:
    texts = words["baseline"]
    out: list[BaselineItem] = []
    if base is None or cite is None:
        for key, text in texts.items():
            if key == "rollback" and opts.rollback_store:
                out.append(BaselineItem(key, text, True, f"kept at: {opts.rollback_store} (parameter rollback_store)"))
            else:
                out.append(BaselineItem(key, text, False, "no baseline run given (--baseline / baseline_dir)"))
        return out
    rel = "evidence/evidence.json"
    checks = {  # section → what to read from the typed Evidence (Evidence.get)
        "driver": ("nvidia", lambda ev: ev.get("nvidia", "driver_version")),
        "kernel": ("host", lambda ev: ev.get("host", "kernel")),
        "gpu_state": ("nvidia", _gpus),
        "runtime": ("container_runtime", _runtime),
        "interconnect": ("interconnect", _interconnect),
        "image": ("image", lambda ev: ev.get("image", "digest") or ev.get("image", "ref")),
    }
    steps = canary_steps(base)
    for key, text in texts.items():
        if key in checks:
            section, pick = checks[key]
            value, why = _evidence_item(base, section)
            got = pick(value) if value else None
            if got and rel in base.manifest:
                out.append(BaselineItem(key, text, True, "", [cite("evidence_capture", rel, f"items.{section}", got)]))
            else:
                out.append(BaselineItem(key, text, False, why or f"evidence {section} has no value for it"))
        elif key in ("inference_check", "communication_check"):
            name = "short_text" if key == "inference_check" else "multi_gpu"
            step = steps.get(name)
            if step and step.get("status") in ("pass", "fail"):
                ev = [
                    cite(
                        "canary_validation",
                        _step_file(base, name) or "canary/canary_report.json",
                        f"step {name}",
                        step["status"],
                    )
                ]
                out.append(BaselineItem(key, text, True, "", ev))
            elif step:
                out.append(
                    BaselineItem(key, text, False, f"canary step {name} skipped in the baseline: {step.get('reason')}")
                )
            else:
                out.append(BaselineItem(key, text, False, "runbook 03 (canary) did not run in the baseline"))
        elif key == "rollback":
            if opts.rollback_store:
                out.append(BaselineItem(key, text, True, f"kept at: {opts.rollback_store} (parameter rollback_store)"))
            else:
                out.append(
                    BaselineItem(
                        key,
                        text,
                        False,
                        "parameter rollback_store not given: where the old driver, image and config are kept "
                        "is not on record",
                    )
                )
    return out


# -- rollback ------------------------------------------------------------------------------------
def _rollback(
    run: RunView, base: RunView | None, path: str | None, steps: dict, opts: RecordOptions
) -> list[RollbackCondition]:
    before = environment(base) if base is not None else {}
    after = environment(run)
    old_driver = before.get("driver") or "the driver recorded before the change"
    old_image = before.get("image_digest") or "the image digest recorded before the change"
    out: list[RollbackCondition] = []
    hours = opts.watch_hours
    if path == "upgrade_driver":
        out.append(
            RollbackCondition(
                "driver",
                f"the model fails to load or the startup failure returns on the upgraded node: reinstall {old_driver}",
                "adopted path upgrade_driver; runbook 02",
            )
        )
    elif path in ("self_built_older_cuda_image", "older_cuda_image", "forward_compatibility"):
        out.append(
            RollbackCondition(
                "image",
                f"the transitional image fails any canary step that passed: redeploy {old_image}",
                f"adopted path {path}",
            )
        )
    elif path and path.startswith("isolated_environment"):
        out.append(
            RollbackCondition(
                "node assignment",
                "the isolated environment fails the canary: return the workload to its previous nodes and labels",
                f"adopted path {path}",
            )
        )
    if after.get("image_digest") != before.get("image_digest"):
        new_image = after.get("image_digest") or "digest not recorded"
        out.append(
            RollbackCondition(
                "image",
                f"the new image ({new_image}) fails to start or its canary fails: redeploy {old_image}",
                "runbook 01 image digests",
            )
        )
    config = (run.read_json("canary/canary_report.json") or {}).get("config") or {}
    threshold = config.get("tool_accuracy_threshold")
    if threshold is not None:
        out.append(
            RollbackCondition(
                "image",
                f"tool-call schema accuracy below {threshold} in the scheduled canary",
                "runbook 03 tool_accuracy_threshold",
            )
        )
    load = run.entry(LOAD_CHECK)
    if load is not None:
        saved = run.read_json(LOAD_FILE)
        config = saved.get("config") if isinstance(saved, dict) else None
        p = {**(config if isinstance(config, dict) else {}), **load.parameters}  # the limits 05 used
        conc = load.figures.get("knee_concurrency") or p.get("max_concurrency")
        at = f" at concurrency {conc}" if conc else ""
        limits = {
            "slo_ttft_ms": f"p95 TTFT above {p.get('slo_ttft_ms')} ms{at}",
            "slo_tpot_ms": f"p95 time per output token above {p.get('slo_tpot_ms')} ms{at}",
            "max_error_rate": f"error rate above {p.get('max_error_rate')}{at}",
        }
        for key, text in limits.items():
            if p.get(key) is not None:
                out.append(
                    RollbackCondition(
                        "node assignment", f"{text}: take the node out of the pool", f"runbook 05 parameter {key}"
                    )
                )
    if not load:
        out.append(
            RollbackCondition(
                "node assignment",
                "no latency limit was checked (runbook 05 did not run): agree a p95 TTFT limit before widening",
                "missing runbook 05",
            )
        )
    comm = steps.get("multi_gpu") or {}
    out.append(
        RollbackCondition(
            "driver",
            f"any NCCL / communication error class in the first {hours} hours "
            f"(canary multi-GPU step: {comm.get('status', 'not run')})",
            "runbook 02 log classes; parameter watch_hours",
        )
    )
    prefix = run.entry("prefix_cache_check")
    if prefix and prefix.verdict == "working":
        out.append(
            RollbackCondition(
                "image",
                "prefix-cache hits fall to zero for the shared prefix (runbook 04 no longer 'working')",
                "runbook 04 verdict",
            )
        )
    return out


def _rollback_item(
    rollback: list[RollbackCondition], baseline: list[BaselineItem], base: RunView | None, words: dict
) -> ChecklistItem:
    text = words["checklist"]["rollback_clear"]
    have = {b.item: b for b in baseline if b.present}
    needed = [k for k in ("driver", "image", "rollback") if k not in have]
    if base is not None and not needed and rollback:
        ev = [c for k in ("driver", "image") for c in have[k].evidence]
        return ChecklistItem(
            "rollback_clear", text, True, f"{len(rollback)} conditions; previous driver and image on record", ev
        )
    why = "no baseline run given" if base is None else f"missing from the baseline: {', '.join(needed)}"
    return ChecklistItem("rollback_clear", text, False, why)
