"""Building the change record from a run directory (and optionally a baseline run directory).

Why every item is derived, never typed: the checklist is the part of a change that people tick
from memory. Here an item is ticked only when a runbook result proves it, with a citation of the
file (and its sha256) that proves it; everything else is unticked with the reason. Runbooks
that did not run are named as missing, never silently assumed.

Why this module only assembles: each section is its own concern (runbooks, adopted path, scope,
checklist, baseline, rollback); here they are read in order from one verified run (and baseline)
and put into one ``ChangeRecord``.
"""

from __future__ import annotations

import datetime as _dt
import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..records import utc_now
from .adopted import adopted_path, recommends_change, remediation_of
from .approvals import check_approvals, default_requester
from .baseline import baseline_items, baseline_mismatch
from .board import change_board
from .checklist import checklist_items
from .cite import Cite
from .compare import canary_steps, compare_views
from .integrity import machine_signature, verify_run
from .model import ChangeRecord
from .options import RecordOptions
from .readings import canary_file
from .rollback import rollback_conditions, rollback_item
from .runbooks import PROCEDURE, runbook_lines
from .scope import scope_items
from .sources import RecordRefused, RunView

VOCABULARY = Path(__file__).resolve().parents[1] / "data" / "change_record.yaml"

__all__ = ["PROCEDURE", "VOCABULARY", "RecordOptions", "build_record", "vocabulary"]


@cache
def vocabulary() -> dict[str, Any]:
    """The record's texts (checklist, scope, paths, triggers) from data/change_record.yaml."""
    return yaml.safe_load(VOCABULARY.read_text(encoding="utf-8"))


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
    hashed = run.hashed  # each file hashed once for the run, its results, its approvals and the baseline
    if base is not None:
        base.hashed = hashed
    verify_run(run, hashed)
    if base is not None:
        verify_run(base, hashed)
    given = base
    set_aside = baseline_mismatch(base, run) if base is not None else []
    if set_aside:
        base = None  # said in the record (baseline_not_used), never compared
    signature = machine_signature(run)
    cited: dict[str, str] = {}
    out_dir = Path(record_dir).resolve() if record_dir else run.path
    cite = Cite(run, out_dir, cited)
    cite_base = Cite(base, out_dir, cited) if base is not None else None
    words = vocabulary()

    steps = canary_steps(run)
    canary_rel = canary_file(run)
    runbooks, missing = runbook_lines(run)
    path = adopted_path(run, base, cite, cite_base, opts, words)
    verified, unverified = scope_items(run, steps, canary_rel, cite, words)
    checklist = checklist_items(run, base, steps, verified, cite, cite_base, words)
    baseline = baseline_items(base, cite_base, opts, words)
    rollback = rollback_conditions(run, base, path.get("path"), steps, opts)
    checklist.append(rollback_item(rollback, baseline, base, words))
    today = _dt.date.fromisoformat(opts.today) if opts.today else _dt.datetime.now(_dt.UTC).date()
    comparison = compare_views(base, run, opts.thresholds) if base is not None else []
    remediation = remediation_of(base) if recommends_change(base) else remediation_of(run)
    return ChangeRecord(
        run_id=run.run_id,
        run_dir=str(run.path),
        created_at=utc_now(),
        adopted_path=path,
        reasons=[str(r) for r in remediation.reasons][:12] if remediation else [],
        constraints=(
            {k: v for k, v in remediation.constraints.to_dict().items() if k not in ("schema", "schema_version")}
            if remediation
            else {}
        ),
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
        baseline_run=given.run_id if given is not None else None,
        baseline_dir=os.path.relpath(given.path, out_dir) if given is not None else None,
        baseline_not_used=set_aside,
        rollback_store=opts.rollback_store,
        artefacts=dict(sorted(cited.items())),
        machine_signature=signature,
        requester=opts.requester or default_requester(),
        approval_policy={"approvals_required": opts.approvals_required, "roles": list(opts.approver_roles)},
        prior_approvals=[c.to_dict() for c in check_approvals(out_dir, hashed=hashed if out_dir == run.path else None)],
        board=change_board(run, path.get("path"), unverified, rollback, opts, words),
    )
