"""Closing a change after its watch window: a close code, who closed it, and a drafted post-implementation review.

Why its own concern: the record is written before the change and approved before it is made; the
close comes after, once the change has been watched in production. It is bound like an approval
(the record's and the manifest's sha256, signed with the closer's SSH key when one is given) and
written once: a run is closed at most one time, and never before its record counts as approved.

The review is a draft for people to finish: it lays out what the run holds (what ran when, with
which verdict, who approved, what stayed unverified, runbook 08's history when it ran) and leaves
the questions a review answers as questions. It never claims the change worked: the close code is
the closer's word, recorded as theirs.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artefacts import write_artefact
from ..execution.runjson import CLOSE_DIR
from ..records import Record, utc_now
from ..redact import redact_obj
from .approvals import (
    KEY_ENV,
    ApprovalRefused,
    SignedEntry,
    _bindings,
    _one_line,
    _sign,
    _verify_signature,
    check_approvals,
    policy_status,
)
from .render import md_text
from .sources import RecordRefused, RunView

CLOSURE_FILE = f"{CLOSE_DIR}/closure.json"
PIR_FILE = f"{CLOSE_DIR}/post_implementation_review.md"
CODES = ("successful", "successful_with_issues", "unsuccessful")


class ClosureRefused(Exception):
    """A close that must not be recorded (not approved, already closed, watch window running); names why."""


@dataclass
class Closure(SignedEntry, Record):
    """The close of one change: code, who, when, and the record version it closes."""

    SCHEMA = "change_record_closure"
    closed_by: str
    code: str
    at: str
    record_file: str
    record_sha256: str
    manifest_sha256: str
    approval_status: str
    approval_why: str
    watch: str
    note: str = ""
    review_file: str = PIR_FILE
    signature: dict[str, str] = field(default_factory=dict)

    @property
    def approver(self) -> str:
        """The name the signature is checked under (the approvals' allowed-signers file)."""
        return self.closed_by


def _when(text: Any) -> _dt.datetime | None:
    try:
        got = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return got if got.tzinfo else None


def watch_state(record: dict[str, Any], now: _dt.datetime) -> tuple[bool, str]:
    """(may close, why): the watch window is ``watch_hours`` after the planned end, when one is on record."""
    board = record.get("board") if isinstance(record.get("board"), dict) else {}
    end = _when((board.get("planned_window") or {}).get("end"))
    hours = board.get("watch_hours")
    hours = hours if isinstance(hours, int | float) and not isinstance(hours, bool) else 24
    if end is None:
        return True, "watch window not checked: no planned window on record (runbook 06 planned_start/planned_end)"
    until = end + _dt.timedelta(hours=float(hours))
    if now < until:
        return (
            False,
            f"the watch window runs until {until.isoformat()} ({hours:g} h after the planned end {end.isoformat()})",
        )
    return True, f"watch window ended {until.isoformat()} ({hours:g} h after the planned end)"


def close(
    run_dir: str | Path,
    code: str,
    closed_by: str,
    note: str = "",
    key_file: str | None = None,
    now: _dt.datetime | None = None,
) -> tuple[Path, Path]:
    """Record the close and write the review draft; returns (closure file, review file).

    Refuses (``ClosureRefused``) when the code is not one of ``CODES``, the run or anything the
    record cites changed, the record is not approved by its policy, the run is already closed, or
    the watch window after the planned end has not passed yet.
    """
    path = Path(run_dir).resolve()
    who = _one_line(closed_by, 200)
    if code not in CODES:
        raise ClosureRefused(f"--code {code!r}: one of {', '.join(CODES)}")
    if not who:
        raise ClosureRefused("--as: the name of who closes the change is empty")
    if (path / CLOSURE_FILE).exists():
        raise ClosureRefused(f"{path / CLOSURE_FILE}: this change was closed already (a close is written once)")
    hashed: dict[str, str] = {}  # one hash per file for the bindings and the approvals' check
    try:
        record, rel, record_sha, manifest_sha, _cited = _bindings(path, hashed)
    except (ApprovalRefused, RecordRefused) as exc:
        raise ClosureRefused(str(exc)) from exc
    checks = check_approvals(path, hashed=hashed)
    status, why = policy_status(record, checks)
    if not status.startswith("approved"):
        raise ClosureRefused(f"the record is {status} ({why}): only an approved change is closed")
    may, watch = watch_state(record, now or _dt.datetime.now(_dt.UTC))
    if not may:
        raise ClosureRefused(watch)
    entry = Closure(
        closed_by=who,
        code=code,
        at=utc_now(),
        record_file=rel,
        record_sha256=record_sha,
        manifest_sha256=manifest_sha,
        approval_status=status,
        approval_why=why,
        watch=watch,
        note=_one_line(note),
    )
    entry = Closure.from_dict(redact_obj(entry.to_dict()))  # redacted before signing: the bytes written
    key = key_file or os.environ.get(KEY_ENV)
    entry.signature = (
        _sign(entry, Path(key).expanduser())  # type: ignore[arg-type]
        if key
        else {"method": "none", "why": "unsigned: no SSH key was given; anyone who can write the run could have"}
    )
    review = write_artefact(path, PIR_FILE, review_draft(path, record, entry, checks))
    return write_artefact(path, CLOSURE_FILE, entry), review


def closure_status(run_dir: str | Path, signers: str | Path | None = None) -> tuple[str, str]:
    """(open | closed | forged | unreadable, why) of a run's close, its signature checked now."""
    path = Path(run_dir).resolve() / CLOSURE_FILE
    if not path.is_file():
        return "open", "not closed"
    from ..bounded import load_json

    try:
        entry = Closure.from_dict(load_json(path, 1024 * 1024)[0])
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return "unreadable", f"{CLOSURE_FILE}: {exc}"
    signers_path = Path(signers).expanduser() if signers else None
    sig, sig_why = _verify_signature(entry, signers_path)  # type: ignore[arg-type]
    if sig == "forged":
        return "forged", sig_why
    return "closed", f"{entry.code} by {entry.closed_by} at {entry.at} ({sig}: {sig_why})"


def review_draft(run_dir: Path, record: dict[str, Any], closure: Closure, checks: list[Any]) -> str:
    """The post-implementation review as Markdown: the run's timeline, approvals, history and open items."""
    view = RunView.load(run_dir)
    lines = [
        f"# Post-implementation review (draft) — {md_text(record.get('run_id'))}",
        "",
        f"**Close code:** {md_text(closure.code)} (the closer's word) · **closed by:** {md_text(closure.closed_by)} "
        f"· **at:** {md_text(closure.at)}",
        "",
        f"**Note:** {md_text(closure.note or '—')}",
        "",
        f"**Record:** {md_text(closure.record_file)} (sha256 {md_text(closure.record_sha256[:16])}…), verdict "
        f"{md_text(_verdict(record))}; approvals: {md_text(closure.approval_status)} — {md_text(closure.approval_why)}",
        "",
        f"**Watch window:** {md_text(closure.watch)}",
        "",
        "## What ran when",
        "",
        "| runbook | started | ended | status | verdict |",
        "|---|---|---|---|---|",
    ]
    for raw in view.data.get("runbooks") or []:
        if isinstance(raw, dict):
            name = raw.get("name")
            verdict = view.verdict(name) if isinstance(name, str) and raw.get("status") == "ok" else None
            cells = [raw.get("name"), raw.get("started_at"), raw.get("ended_at"), raw.get("status"), verdict]
            lines.append("| " + " | ".join(md_text(c) for c in cells) + " |")
    lines += ["", "## Who approved", "", "| approver | decision | role | at | status now |", "|---|---|---|---|---|"]
    lines += [
        "| " + " | ".join(md_text(x) for x in (c.approver, c.decision, c.role, c.at, c.status)) + " |" for c in checks
    ] or ["| — | | | | |"]
    lines += ["", "## Validation history (runbook 08)", ""]
    history = view.entry("validation_history")
    if history is None:
        lines += ["_Runbook 08 did not run in this run: run it over the watch window to see the trend._", ""]
    else:
        figures = ", ".join(f"{k}: {v}" for k, v in list(view.key_figures("validation_history").items())[:12])
        verdict = view.verdict("validation_history") or view.unread("validation_history")
        lines += [f"Verdict {md_text(verdict)}; {md_text(figures or 'no figures')}", ""]
    open_items = [c for c in record.get("checklist") or [] if isinstance(c, dict) and not c.get("ticked")]
    lines += ["## Still open when the record was written", ""]
    lines += [f"- {md_text(c.get('text'))}: {md_text(c.get('reason'))}" for c in open_items] or ["- nothing"]
    unverified = [s for s in record.get("unverified") or [] if isinstance(s, dict)]
    lines += [f"- unverified: {md_text(s.get('title'))}: {md_text(s.get('reason'))}" for s in unverified]
    lines += [
        "",
        "## For the review to answer",
        "",
        "- What happened during the change window, against the implementation plan?",
        "- Did any rollback condition fire? Was the backout used or tested?",
        "- Which of the open items above were verified in production since, and how?",
        "- Follow-ups (owner, date):",
        "",
    ]
    return "\n".join(lines)


def _verdict(record: dict[str, Any]) -> str:
    checklist = [c for c in record.get("checklist") or [] if isinstance(c, dict)]
    ticked = sum(1 for c in checklist if c.get("ticked"))
    return f"checklist {ticked}/{len(checklist)} ticked"
