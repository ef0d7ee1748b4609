"""The adopted remediation path and the runbook 02 decision it comes from.

Why its own concern: the path is read from runbook 02's remediation (the baseline's, when it
recommended a change) or chosen by hand, and the record must say which, with a citation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .cite import Cite
from .options import RecordOptions
from .sources import RunView

if TYPE_CHECKING:
    from ..compat.remediate import Remediation

#: Remediation paths that change nothing in the environment.
NO_CHANGE_PATHS = {"no_driver_change", None, ""}


def remediation_of(view: RunView | None) -> Remediation | None:
    """Runbook 02's typed remediation (None when 02 left no result): the path and reasons come from here."""
    result = view.result("compatibility_decision") if view is not None else None
    return result.report.remediation if result is not None else None


def compat_file(view: RunView) -> str | None:
    """The file runbook 02's decision was read from (its newest listed decision.json)."""
    return view.result_file("compatibility_decision")


def recommends_change(view: RunView | None) -> bool:
    """Whether a run's runbook 02 asked for a change; then the path is read from that run."""
    remediation = remediation_of(view)
    return remediation is not None and remediation.path not in NO_CHANGE_PATHS


def adopted_path(
    run: RunView, base: RunView | None, cite: Cite, cite_base: Cite | None, opts: RecordOptions, words: dict
) -> dict[str, Any]:
    """The path from runbook 02 (the baseline's decision when it recommended a change), or by hand."""
    source, c = (base, cite_base) if recommends_change(base) else (run, cite)
    remediation = remediation_of(source)
    recommended = remediation.path if remediation is not None else None
    evidence = []
    rel = compat_file(source) if source is not None else None
    if recommended and rel and c is not None:
        evidence.append(c("compatibility_decision", rel, "remediation.path", recommended))
    chosen = opts.adopted_path or recommended
    out = {
        "path": chosen,
        "title": words["paths"].get(
            chosen, (remediation.title if remediation else None) or chosen or "no path recorded"
        ),
        "chosen_by_hand": bool(opts.adopted_path),
        "recommended": recommended,
        "recommended_title": remediation.title if remediation is not None else None,
        "evidence": [e.to_dict() for e in evidence],
        "from_run": ("baseline run " if source is base and base is not None else "this run ")
        + (source.run_id if source is not None else ""),
    }
    if not recommended:
        out["note"] = "runbook 02 recorded no remediation in this run" + (" or the baseline" if base else "")
    return out
