"""The adopted remediation path and the runbook 02 decision it comes from.

Why its own concern: the path is read from runbook 02's remediation (the baseline's, when it
recommended a change) or chosen by hand, and the record must say which, with a citation.
"""

from __future__ import annotations

from typing import Any

from .cite import Cite
from .options import RecordOptions
from .sources import RunView

#: Remediation paths that change nothing in the environment.
NO_CHANGE_PATHS = {"no_driver_change", None, ""}


def remediation_of(view: RunView | None) -> dict[str, Any]:
    """Runbook 02's remediation (decision file, else its scraps): the path and reasons come from here."""
    if view is None:
        return {}
    found = view.read_json("compat/decision.json")
    report = found.get("report") if isinstance(found, dict) else None
    if isinstance(report, dict) and isinstance(report.get("remediation"), dict):
        return report["remediation"]
    scrap = view.scraps("compatibility_decision").get("remediation")
    return scrap if isinstance(scrap, dict) else {}


def compat_file(view: RunView) -> str | None:
    """The file that cites runbook 02's decision: the newest listed decision.json, else its notebook."""
    found = view.artefact("compat/decision.json")  # the newest attempt the manifest lists
    if found:
        return found
    entry = view.entry("compatibility_decision")
    return entry.notebook if entry and entry.notebook and entry.notebook in view.manifest else None


def recommends_change(view: RunView | None) -> bool:
    """Whether a run's runbook 02 asked for a change; then the path is read from that run."""
    return view is not None and remediation_of(view).get("path") not in NO_CHANGE_PATHS


def adopted_path(
    run: RunView, base: RunView | None, cite: Cite, cite_base: Cite | None, opts: RecordOptions, words: dict
) -> dict[str, Any]:
    """The path from runbook 02 (the baseline's decision when it recommended a change), or by hand."""
    source, c = (base, cite_base) if recommends_change(base) else (run, cite)
    remediation = remediation_of(source)
    recommended = remediation.get("path")
    evidence = []
    rel = compat_file(source) if source is not None else None
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
