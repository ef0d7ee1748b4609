"""The record as Markdown (to paste into a ticket or pull request), JSON, and offline HTML.

Why Markdown first: approvers sign in a ticket or pull request; the HTML is the same Markdown
rendered (mistune, already installed with nbconvert) into one self-contained page, so a newcomer
can open it from the run directory without a network. Every value written is escaped for
Markdown tables; every file goes through ``write_artefact`` (redacted, never over another file).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ..artefacts import write_artefact
from .model import ChangeRecord, Citation

MD_FILE = "change_record.md"
JSON_FILE = "change_record.json"
HTML_FILE = "change_record.html"


def _cell(value: Any) -> str:
    text = "—" if value is None or value == "" else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _links(evidence: list[Citation]) -> str:
    return "<br>".join(f"[{_cell(c.text())}]({_href(c.artefact)})" for c in evidence)


def _href(rel: str) -> str:
    return rel.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    if not rows:
        return ["_(none)_", ""]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += [
        "| " + " | ".join(r if isinstance(r, str) and r.startswith("[") else _cell(r) for r in row) + " |"
        for row in rows
    ]
    return out + [""]


def to_markdown(record: ChangeRecord) -> str:
    """The whole record as one Markdown document: headings, tables, relative links to the evidence."""
    path = record.adopted_path
    lines = [
        f"# Change record — {record.run_id}",
        "",
        f"**Verdict:** {record.verdict} · **checklist:** {sum(c.ticked for c in record.checklist)}/"
        f"{len(record.checklist)} ticked from evidence · **written:** {record.created_at}",
        "",
        f"Run directory: `{record.run_dir}`" + (f" · baseline: `{record.baseline_dir}`" if record.baseline_dir else ""),
        "",
        "## Adopted path",
        "",
        f"**{_cell(path.get('title'))}** (`{_cell(path.get('path'))}`)",
        "",
    ]
    if path.get("chosen_by_hand"):
        lines += [
            f"Chosen by hand (parameter `adopted_path`). Runbook 02 recommended: "
            f"`{_cell(path.get('recommended'))}` — {_cell(path.get('recommended_title'))} "
            f"({_cell(path.get('from_run'))}).",
            "",
        ]
    else:
        lines += [f"From runbook 02's remediation ({_cell(path.get('from_run'))}).", ""]
    for ev in path.get("evidence") or []:
        c = Citation.from_dict(ev)
        lines += [f"Evidence: [{_cell(c.text())}]({_href(c.artefact)})", ""]
    if path.get("note"):
        lines += [f"_{_cell(path['note'])}_", ""]

    lines += ["## Reason", "", f"Runbook 02's reasons and inputs ({_cell(path.get('from_run'))}):", ""]
    lines += [f"- {_cell(r)}" for r in record.reasons] or ["- _(runbook 02 recorded no reasons)_"]
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
                f"[report]({_href(r.report_html)})"
                if r.report_html
                else (f"[html]({_href(r.html)})" if r.html else "—"),
                f"[ipynb]({_href(r.notebook)})" if r.notebook else "—",
            ]
            for r in record.runbooks
        ],
    )
    if record.missing:
        lines += ["**Missing or failed:**", ""] + [f"- {_cell(m)}" for m in record.missing] + [""]

    lines += ["## Verified scope", ""]
    lines += _table(["scope", "evidence"], [[s.title, _links(s.evidence)] for s in record.verified])
    lines += ["## Unverified scope", ""]
    lines += _table(["scope", "why not verified"], [[s.title, s.reason] for s in record.unverified])

    lines += ["## Change checklist (ticked from evidence only)", ""]
    for item in record.checklist:
        mark = "x" if item.ticked else " "
        detail = _links(item.evidence) if item.ticked else f"_not ticked:_ {_cell(item.reason)}"
        lines.append(f"- [{mark}] **{_cell(item.text)}** — {detail}")
    lines.append("")

    lines += ["## Rollback conditions", ""]
    lines += _table(["put back", "when", "derived from"], [[r.put_back, r.when, r.source] for r in record.rollback])

    lines += [
        "## Re-evaluation",
        "",
        f"**Date:** {record.reevaluate_on}",
        "",
        "Triggers (re-evaluate earlier when):",
        "",
    ]
    lines += [f"- {_cell(t)}" for t in record.triggers] + [""]

    lines += ["## Baseline saved before the change", ""]
    if not record.baseline_run:
        lines += ["_No baseline run directory was given._", ""]
    lines += _table(
        ["item", "saved", "evidence / reason"],
        [[b.what, "present" if b.present else "missing", _links(b.evidence) or b.reason] for b in record.baseline],
    )

    lines += ["## Before / after", ""]
    if not record.baseline_run:
        lines += ["_No baseline: nothing to compare._", ""]
    else:
        lines += _table(
            ["", "kind", "runbook", "item", "before", "after", "note"],
            [
                ["⚠ regression" if c.regression else "", c.kind, c.runbook, c.item, c.before, c.after, c.note]
                for c in record.comparison
            ],
        )

    lines += ["## Approval", ""]
    lines += [
        "| name | date | decision (approve / reject / approve with conditions) |",
        "|---|---|---|",
        "| &nbsp; | &nbsp; | &nbsp; |",
        "",
    ]
    lines += ["## Artefacts cited (sha256)", ""]
    lines += _table(
        ["artefact", "sha256"], [[f"[{_cell(k)}]({_href(k)})", f"`{v}`"] for k, v in record.artefacts.items()]
    )
    return "\n".join(lines).rstrip() + "\n"


def to_html(markdown_text: str, title: str) -> str:
    """One self-contained page (inline CSS, no scripts, no network) from the Markdown."""
    import mistune

    # Raw HTML in the Markdown is escaped (values are data, never markup), except the line breaks
    # the writer itself puts between citations.
    escaped = markdown_text.replace("&lt;", "<").replace("<", "&lt;").replace("&lt;br>", "<br>")
    body = mistune.html(escaped)
    css = (
        "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
        "table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #ccc;padding:.3rem .5rem;"
        "vertical-align:top;text-align:left}th{background:#f3f3f3}code{font-size:.9em}li{margin:.25rem 0}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{css}</style></head><body>{body}</body></html>\n"
    )


def save_record(record: ChangeRecord, run_dir: str | Path) -> dict[str, Path]:
    """Write the record as Markdown, JSON and HTML into ``run_dir`` (redacted, new files only)."""
    text = to_markdown(record)
    return {
        "markdown": write_artefact(run_dir, MD_FILE, text),
        "json": write_artefact(run_dir, JSON_FILE, record),
        "html": write_artefact(run_dir, HTML_FILE, to_html(text, f"Change record {record.run_id}")),
    }
