"""The record as Markdown (to paste into a ticket or pull request), JSON, and offline HTML.

Why Markdown first: approvers sign in a ticket or pull request; the HTML is the same Markdown
rendered (mistune, already installed with nbconvert) into one self-contained page, so a newcomer
can open it from the run directory without a network. Every value written is escaped for
Markdown tables; every file goes through ``write_artefact`` (redacted, never over another file).
"""

from __future__ import annotations

import html
import re
import urllib.parse
from pathlib import Path
from typing import Any

from ..artefacts import write_artefact
from ..display import PAGE_CSS
from .model import ChangeRecord, Citation

MD_FILE = "change_record.md"
JSON_FILE = "change_record.json"
HTML_FILE = "change_record.html"


#: The longest a value from a run (server text, a reason, a path) may be in one cell or line.
CELL_MAX_CHARS = 400

#: Line breaks and controls Markdown or a ticket system may act on: C0, DEL, C1, NEL, U+2028/2029.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
#: ASCII punctuation that Markdown (CommonMark, GFM, ticket renderers) can read as syntax anywhere.
_INLINE_SYNTAX = re.compile(r"([\\`*_{}\[\]<>#!|~&])")
#: What is syntax only at the start of a line: a list marker, a setext underline, an ordered item.
_LINE_START = re.compile(r"^([-+=])|^(\d+)([.)])")
#: Bare URLs that GFM turns into links on its own: ``scheme://`` and ``www.``.
_AUTOLINK = re.compile(r"(?i)(://)|\b(www)\.")


class Md(str):
    """Markdown this module built itself (a link from a citation, a code span): the only text not escaped.

    Everything else written into the record is a value from a run, and a value from a run is
    data: a server's ``/version`` answer must never become a heading, a ticked line or a link.
    """


def md_text(value: Any, limit: int = CELL_MAX_CHARS) -> str:
    """One value as one bounded line of Markdown text that renders as exactly those characters.

    Controls and line separators become spaces (a ``\\r`` in server text cannot start a new line),
    the text is cut at ``limit`` characters, and every ASCII punctuation mark Markdown could read
    as syntax is backslash-escaped, which CommonMark and GFM render as the bare character.
    """
    if isinstance(value, Md):
        return value
    text = "—" if value is None or value == "" else str(value)
    text = _CONTROLS.sub(" ", text).strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = _INLINE_SYNTAX.sub(r"\\\1", text)
    text = _LINE_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", text)
    return _AUTOLINK.sub(lambda m: "\\://" if m[1] else f"{m[2]}\\.", text)


def md_code(value: Any, limit: int = CELL_MAX_CHARS) -> Md:
    """A value as an inline code span, fenced with more backticks than it holds (it cannot close early)."""
    text = _CONTROLS.sub(" ", "" if value is None else str(value)).strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return Md(f"{fence}{pad}{text}{pad}{fence}")


def md_link(label: Any, artefact: str) -> Md:
    """A link to a file of the run, relative to the record; the target is percent-encoded, never a scheme."""
    return Md(f"[{md_text(label)}]({_href(artefact)})")


def _links(evidence: list[Citation]) -> Md:
    return Md(" · ".join(md_link(c.text(), c.artefact) for c in evidence))


def _href(rel: str) -> str:
    """A relative link target: every character that could end the link or name a scheme is encoded."""
    text = _CONTROLS.sub("", str(rel))
    quoted = urllib.parse.quote(text.lstrip("/"), safe="/-_.~")
    return quoted if quoted and not quoted.startswith(".") else "./" + quoted


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    if not rows:
        return ["_(none)_", ""]
    out = ["| " + " | ".join(md_text(h) if h else " " for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_table_cell(cell) for cell in row) + " |" for row in rows]
    return out + [""]


def _table_cell(value: Any) -> str:
    """A cell: text escaped; built Markdown (a code span) with its pipes escaped, as GFM tables need."""
    return re.sub(r"(?<!\\)\|", r"\\|", value) if isinstance(value, Md) else md_text(value)


APPROVE_COMMAND = "vllm-runbooks approve RUN_DIR --as NAME --decision approve|reject|conditions --key ~/.ssh/id_ed25519"


def _approval_lines(record: ChangeRecord) -> list[str]:
    """Who asked, what the policy needs, how to approve; approvals of earlier versions, checked."""
    policy = record.approval_policy or {}
    roles = ", ".join(str(r) for r in policy.get("roles") or []) or "none named"
    lines = [
        "## Approval",
        "",
        f"**Requested by:** {md_text(record.requester or 'unknown')} (the requester cannot approve) · "
        f"**policy:** {md_text(policy.get('approvals_required', 1))} approval(s), roles: {md_text(roles)}; "
        "a reject wins.",
        "",
        "Approve this version with "
        + md_code(APPROVE_COMMAND)
        + ": each approval is a new file under "
        + md_code("approvals/")
        + ", bound to the sha256 of this record, of the run's manifest and of every artefact cited below, "
        "and signed with the approver's SSH key; "
        + md_code("vllm-runbooks approvals RUN_DIR")
        + " shows them and whether the record counts as approved.",
        "",
    ]
    if record.prior_approvals:
        lines += ["Approvals found beside an earlier version of this record (they do not carry over):", ""]
        lines += _table(
            ["approver", "decision", "role", "at", "status now", "why"],
            [
                [a.get("approver"), a.get("decision"), a.get("role"), a.get("at"), a.get("status"), a.get("why")]
                for a in record.prior_approvals
            ],  # fmt: skip
        )
    return lines


def _signature_lines(record: ChangeRecord) -> list[str]:
    """What the run's machine signature proves and does not, right under the verdict."""
    sig = record.machine_signature or {"status": "unknown", "why": "not checked (a record from an older version)"}
    lines = [f"**Machine signature of run.json:** {md_text(sig.get('status'))} — {md_text(sig.get('why'))}", ""]
    if sig.get("status") != "verified":
        lines += ["_The verdict cannot be ready while this machine cannot verify the run's keyed signature._", ""]
    lines += [f"It does not prove: {md_text(sig.get('does_not_prove'))}.", ""] if sig.get("does_not_prove") else []
    return lines


def _board_lines(record: ChangeRecord) -> list[str]:
    """The change request's fields, each with what it was read from (or the reason it is not on record)."""
    b = record.board
    if b is None:
        return ["## Change request", "", "_Written before the change-board fields existed: re-run runbook 06._", ""]

    def window(w: dict[str, Any]) -> str:
        if not w.get("start"):
            return f"not on record: {md_text(w.get('why') or w.get('from'))}"
        return f"{md_text(w['start'])} → {md_text(w.get('end'))} ({md_text(w.get('why') or w.get('from'))})"

    def level(value: str, why: str, derived: str) -> str:
        return f"**{md_text(value)}** — {md_text(why)}" + (f" (derived: {md_text(derived)})" if derived else "")

    rows = [
        ["change type", Md(f"**{md_text(b.change_type)}** — {md_text(b.change_type_why)}")],
        ["risk", Md(level(b.risk, b.risk_why, b.risk_derived))],
        ["impact", Md(level(b.impact, b.impact_why, b.impact_derived))],
        ["model profile", b.profile or "not on record (runbook 02 recorded none)"],
        ["affected nodes", f"{', '.join(b.affected_nodes) or 'none on record'} ({b.affected_nodes_from})"],
        ["affected services", ", ".join(b.affected_services) or "not given (parameter affected_services)"],
        ["affected endpoints", ", ".join(b.affected_endpoints) or "no runbook was pointed at an endpoint"],
        ["planned window", Md(window(b.planned_window))],
        ["actual window", Md(window(b.actual_window))],
        ["backout exercised", b.backout_exercised],
    ]
    lines = ["## Change request", ""] + _table(["field", "value"], rows)
    if b.standard_offer:
        lines += [f"**Standard change offered:** {md_text(b.standard_offer)}", ""]
    lines += [f"**Implementation plan** ({md_text(b.plan_from)}):", ""]
    for n, step in enumerate(b.implementation_plan, 1):
        nodes = step.get("nodes") or []
        shown = f" — nodes: {md_text(', '.join(nodes[:12]))}" + (f" (+{len(nodes) - 12})" if len(nodes) > 12 else "")
        lines.append(f"{n}. **{md_text(step.get('step'))}**{shown if nodes else ''}")
        lines += [f"   - {md_text(c)}" for c in step.get("checks") or []]
    lines += ["", "**Backout plan** (the rollback conditions below):", ""]
    lines += [f"- {md_text(p)}" for p in b.backout_plan] + [""]
    return lines


def to_markdown(record: ChangeRecord) -> str:
    """The whole record as one Markdown document: headings, tables, relative links to the evidence."""
    path = record.adopted_path
    lines = [
        f"# Change record — {md_text(record.run_id)}",
        "",
        f"**Verdict:** {md_text(record.verdict)} · **checklist:** {sum(c.ticked for c in record.checklist)}/"
        f"{len(record.checklist)} ticked from evidence · **written:** {md_text(record.created_at)}",
        "",
        f"Run directory: {md_code(record.run_dir)}"
        + (f" · baseline: {md_code(record.baseline_dir)}" if record.baseline_dir else ""),
        "",
        *(
            [f"**Baseline not used** (not this change's before): {md_text('; '.join(record.baseline_not_used))}", ""]
            if record.baseline_not_used
            else []
        ),
        *_signature_lines(record),
        *_board_lines(record),
        "## Adopted path",
        "",
        f"**{md_text(path.get('title'))}** ({md_code(path.get('path'))})",
        "",
    ]
    if path.get("chosen_by_hand"):
        lines += [
            f"Chosen by hand (parameter `adopted_path`). Runbook 02 recommended: "
            f"{md_code(path.get('recommended'))} — {md_text(path.get('recommended_title'))} "
            f"({md_text(path.get('from_run'))}).",
            "",
        ]
    else:
        lines += [f"From runbook 02's remediation ({md_text(path.get('from_run'))}).", ""]
    for ev in path.get("evidence") or []:
        c = Citation.from_dict(ev)
        lines += [f"Evidence: {md_link(c.text(), c.artefact)}", ""]
    if path.get("note"):
        lines += [f"_{md_text(path['note'])}_", ""]

    lines += ["## Reason", "", f"Runbook 02's reasons and inputs ({md_text(path.get('from_run'))}):", ""]
    lines += [f"- {md_text(r)}" for r in record.reasons] or ["- _(runbook 02 recorded no reasons)_"]
    if record.constraints:
        lines += ["", "Constraints (runbook 02's inputs):", ""]
        lines += _table(["constraint", "value"], [[k, v] for k, v in record.constraints.items()])
    else:
        lines.append("")

    lines += ["## Runbooks in this run", ""]
    lines += _table(
        ["runbook", "status", "verdict", "reason", "report", "notebook"],
        [
            [
                r.name,
                r.status,
                r.verdict,
                r.reason,
                md_link("report", r.report_html) if r.report_html else (md_link("html", r.html) if r.html else None),
                md_link("ipynb", r.notebook) if r.notebook else None,
            ]
            for r in record.runbooks
        ],
    )
    if record.missing:
        lines += ["**Missing or failed:**", ""] + [f"- {md_text(m)}" for m in record.missing] + [""]

    lines += ["## Verified scope", ""]
    lines += _table(["scope", "evidence"], [[s.title, _links(s.evidence)] for s in record.verified])
    lines += ["## Unverified scope", ""]
    lines += _table(["scope", "why not verified"], [[s.title, s.reason] for s in record.unverified])

    lines += ["## Change checklist (ticked from evidence only)", ""]
    for item in record.checklist:
        mark = "x" if item.ticked else " "
        detail = _links(item.evidence) if item.ticked else f"_not ticked:_ {md_text(item.reason)}"
        lines.append(f"- [{mark}] **{md_text(item.text)}** — {detail}")
    lines.append("")

    lines += ["## Rollback conditions", ""]
    lines += _table(["put back", "when", "derived from"], [[r.put_back, r.when, r.source] for r in record.rollback])

    lines += [
        "## Re-evaluation",
        "",
        f"**Date:** {md_text(record.reevaluate_on)}",
        "",
        "Triggers (re-evaluate earlier when):",
        "",
    ]
    lines += [f"- {md_text(t)}" for t in record.triggers] + [""]

    lines += ["## Baseline saved before the change", ""]
    if not record.baseline_run:
        lines += ["_No baseline run directory was given._", ""]
    elif record.baseline_not_used:
        lines += [
            f"_Baseline {md_text(record.baseline_run)} set aside: {md_text('; '.join(record.baseline_not_used))}._",
            "",
        ]
    lines += _table(
        ["item", "saved", "evidence / reason"],
        [[b.what, "present" if b.present else "missing", _links(b.evidence) or b.reason] for b in record.baseline],
    )

    lines += ["## Before / after", ""]
    if not record.baseline_run or record.baseline_not_used:
        lines += ["_No usable baseline: nothing compared._", ""]
    else:
        lines += _table(
            ["", "kind", "runbook", "item", "before", "after", "note"],
            [
                ["⚠ regression" if c.regression else "", c.kind, c.runbook, c.item, c.before, c.after, c.note]
                for c in record.comparison
            ],
        )

    lines += _approval_lines(record)
    lines += ["## Artefacts cited (sha256)", ""]
    lines += _table(["artefact", "sha256"], [[md_link(k, k), md_code(v)] for k, v in record.artefacts.items()])
    return "\n".join(lines).rstrip() + "\n"


def to_html(markdown_text: str, title: str) -> str:
    """One self-contained page (inline CSS, no scripts, no network) from the Markdown.

    The writer puts no raw HTML into the Markdown, so any that reaches here came from a value and
    is escaped (``escape=True``); mistune's own URL check refuses ``javascript:`` targets as well.
    """
    import mistune

    body = mistune.create_markdown(escape=True, plugins=["table"])(markdown_text)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<style>{PAGE_CSS}</style></head><body>{body}</body></html>\n"
    )


def save_record(record: ChangeRecord, run_dir: str | Path) -> dict[str, Path]:
    """Write the record as Markdown, JSON and HTML into ``run_dir`` (redacted, new files only)."""
    text = to_markdown(record)
    return {
        "markdown": write_artefact(run_dir, MD_FILE, text),
        "json": write_artefact(run_dir, JSON_FILE, record),
        "html": write_artefact(run_dir, HTML_FILE, to_html(text, f"Change record {record.run_id}")),
    }
