"""Which runbooks ran in the record's run, and which are missing and why.

Why its own concern: a runbook that did not run must be named as missing with its reason (the
suite's plan, or "not run"), never silently assumed; the rest of the record relies on this list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import RunbookLine
from .readings import LOAD_CHECK
from .sources import RunView

if TYPE_CHECKING:
    from ..execution.suite import SuiteEntry

#: The procedure's runbooks before the record, in order (07, the fleet survey, is optional).
PROCEDURE = ("evidence_capture", "compatibility_decision", "canary_validation", "prefix_cache_check", "load_check")


def suite_plan(run: RunView) -> dict[str, SuiteEntry]:
    """The suite's plan by runbook name, so a skipped runbook is missing with the suite's reason."""
    suite = run.suite()
    return {e.name: e for e in suite.runbooks} if suite is not None else {}


def runbook_lines(run: RunView) -> tuple[list[RunbookLine], list[str]]:
    """One line per runbook of the procedure and the run, and the missing ones with their reason."""
    plan = suite_plan(run)
    others = list(plan) + list(run.entries) + list(run.unproven)
    names = list(PROCEDURE) + [n for n in others if n not in PROCEDURE and n != "change_record"]
    lines, missing = [], []
    for name in dict.fromkeys(names):
        entry = run.entry(name)
        if entry is not None:
            reason = entry.error if entry.status != "ok" else None
            lines.append(
                RunbookLine(
                    name, entry.status, run.verdict(name), reason, entry.notebook, entry.html, entry.report_html
                )
            )
            if entry.status != "ok":
                missing.append(f"{name}: failed — {entry.error or 'no error recorded'}")
            continue
        planned = plan.get(name)
        if name in run.unproven:
            reason = run.unproven[name]
        elif name == LOAD_CHECK and planned is None and name not in run.entries:
            reason = "runbook 05 (load check) is not part of this run"
        else:
            reason = (planned.reason if planned is not None else "") or "not run in this run directory"
        lines.append(RunbookLine(name, (planned.status if planned is not None else "") or "not run", None, reason))
        missing.append(f"{name}: {reason}")
    return lines, missing
