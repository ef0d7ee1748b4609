"""The approver's view of an executed runbook: the verdict first, results without code.

Why a second HTML: platform owners read verdicts, tables and figures, not Python. The full HTML
stays the complete evidence; this one (``NN_name.report.html`` beside it) is laid out for the
reader who has to decide:

1. the runbook's title, then its **verdict and key figures** (the typed headline the runner
   copies into run.json), or why there is none (a failed cell, no verdict cell reached);
2. what the runbook does, its parameter documentation and the values this run used, folded
   away in one ``<details>``;
3. the results in the runbook's order, without code inputs, the parameters cells, stderr
   streams, bare reprs or scraps — and **no table twice**: the headline display is already the
   lead, and a table that a later section shows again is left out of the earlier output (a
   runbook's summary repeats its checklist or stage table above the section made for it).

Figures are drawn by the run directory's shared plotly.js, as in the full copy.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from ..display import banner, esc, html_table
from ..redact import redact_text
from ..stage import Headline
from .offline_html import WIDGET_MIME, OfflineRenderer
from .scraps import SCRAP_MIME, read_scraps

REPORT_SUFFIX = ".report.html"
#: Cells papermill tags or the templates mark as parameters: boilerplate for a reader.
SKIP_TAGS = {"parameters", "injected-parameters"}
_TABLE_TAG = re.compile(r"<(/?)table\b[^>]*>", re.I)
#: A parameter value longer than this is cut in the folded table (the notebook keeps it whole).
MAX_VALUE_CHARS = 300


def report_path(notebook: Path) -> Path:
    """Where the report view of ``notebook`` lies: ``NN_name.report.html`` beside it."""
    return notebook.with_name(notebook.stem + REPORT_SUFFIX)


def render_report_view(notebook: str | Path, renderer: OfflineRenderer | None = None) -> Path | None:
    """Write ``<stem>.report.html`` beside an executed notebook; never over an existing file.

    ``renderer``: the run's warmed :class:`~.offline_html.OfflineRenderer` (a fresh one when None).
    """
    notebook = Path(notebook)
    target = report_path(notebook)
    if target.exists():
        return None
    try:
        import nbformat

        nb = nbformat.read(str(notebook), as_version=4)
        nb.cells = report_cells(nb, notebook)
        body = (renderer or OfflineRenderer()).render(nb, report=True, folder=notebook.parent)
    except Exception as exc:  # the full HTML is still there; say why this view is not
        body = f"<html><body><h1>Report view failed</h1><pre>{esc(redact_text(repr(exc)))}</pre></body></html>"
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(body)
    except FileExistsError:
        return None
    return target


def report_cells(nb: Any, notebook: Path) -> list[Any]:
    """The report view's cells: title, lead (verdict and key figures), folded docs, then results."""
    import nbformat

    headline = Headline.coerce(read_scraps(nb).get("headline"))
    cells = list(nb.cells)
    first = cells[0] if cells and cells[0].cell_type == "markdown" else None
    title, about = _split_title(first.source if first is not None else "")
    # The headline's display: the notebook's own (its last cell shows it) moves to the top.
    display = headline._repr_html_() if headline else None
    body: list[Any] = []
    for cell in cells[1:] if first is not None else cells:
        if SKIP_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            continue
        if cell.cell_type == "code":
            kept = []
            for output in cell.get("outputs", []):
                if display is not None and _html(output) and _same(_html(output) or "", display):
                    display = _html(output)
                elif _keep(output):
                    kept.append(output)
            cell.outputs = kept
            if not cell.outputs:
                continue
        body.append(cell)
    out: list[Any] = []
    if title:
        out.append(nbformat.v4.new_markdown_cell(title))
    out.append(_html_cell(lead_html(display, _errors(cells), notebook)))
    docs = about_html(about, _used_parameters(nb))
    if docs:
        out.append(_html_cell(docs))
    _drop_repeated_tables(body, {table_key(t) for t in top_level_tables(display or "")} - {None})
    out += [c for c in body if c.cell_type != "code" or c.outputs]
    return out


_ROW = re.compile(r"<tr\b.*?</tr>", re.S | re.I)


def _same(shown: str, display: str) -> bool:
    """Whether an output is the headline's display: the same banner, then one table. Not compared
    byte for byte: the notebook on disk holds the headline's figures with sorted keys (nested
    ones too), while the cell showed them in the result's order."""
    head, tables = shown.split("<table", 1)[0], top_level_tables(shown)
    return head == display.split("<table", 1)[0] and len(tables) == 1 and shown.endswith(tables[0])


def _split_title(source: str) -> tuple[str, str]:
    """(the first heading line, the rest) of the first markdown cell."""
    text = source.strip()
    head, _, rest = text.partition("\n")
    return (head, rest.strip()) if head.startswith("#") else ("", text)


def _html_cell(html_text: str) -> Any:
    """A code cell (its input is never shown in the report view) that displays ``html_text``."""
    import nbformat

    output = nbformat.v4.new_output("display_data", data={"text/html": html_text})
    return nbformat.v4.new_code_cell("", outputs=[output])


def _errors(cells: list[Any]) -> list[str]:
    """``ename: evalue`` of every error output (a failed step is the first thing to say)."""
    return [
        f"{o.get('ename', 'error')}: {o.get('evalue', '')}"
        for c in cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def lead_html(display: str | None, errors: list[str], notebook: Path) -> str:
    """The verdict and key figures (the headline's own display), or why there is no verdict."""
    parts = []
    if errors:
        parts.append(banner("This runbook failed", redact_text(errors[0])[:500], "bad"))
    if display is not None:
        parts.append(display)
    else:
        parts.append(
            banner("No verdict", "the runbook stopped before its verdict cell: see the outputs below", "unknown")
        )
    full = notebook.with_suffix(".html").name
    parts.append(
        f"<p>The complete notebook, code included: <a href='{esc(_href(full))}'>{esc(full)}</a>; "
        f"the whole run: <a href='index.html'>index.html</a>.</p>"
    )
    return "".join(parts)


def _href(name: str) -> str:
    """A file name as a relative link (percent-encoded, so no name becomes a scheme or a path)."""
    from urllib.parse import quote

    return quote(name, safe="")


def about_html(about_markdown: str, used: dict[str, Any]) -> str:
    """What the runbook does, its parameter table and the values used, folded in one ``<details>``.

    The documentation is the template's own Markdown (rendered like every markdown cell); the
    values come from the run and are escaped by the table helper.
    """
    if not about_markdown and not used:
        return ""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    parts = ["<details><summary><b>About this runbook, its parameters and the values this run used</b></summary>"]
    if about_markdown:
        parts.append(markdown2html_mistune(about_markdown))
    if used:
        rows = [{"parameter": k, "value": _value_text(v)} for k, v in used.items()]
        parts.append("<p><b>Values this run used</b> (secrets redacted):</p>" + html_table(rows))
    parts.append("</details>")
    return "".join(parts)


def _value_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _used_parameters(nb: Any) -> dict[str, Any]:
    """The parameters papermill injected (already redacted in the notebook's metadata)."""
    meta = nb.get("metadata", {}).get("papermill", {})
    params = meta.get("parameters") if isinstance(meta, dict) else None
    return dict(params) if isinstance(params, dict) else {}


def _html(output: Any) -> str | None:
    data = output.get("data") or {}
    value = data.get("text/html")
    return "".join(value) if isinstance(value, list) else value


def top_level_tables(html_text: str) -> list[str]:
    """The outermost ``<table>…</table>`` elements of ``html_text``, nesting counted."""
    found, depth, start = [], 0, 0
    for m in _TABLE_TAG.finditer(html_text):
        if not m.group(1):
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                found.append(html_text[start : m.end()])
    return found


_CELL = re.compile(r"<t([dh])\b[^>]*>(.*?)</t[dh]>", re.S | re.I)
_TAG = re.compile(r"<[^>]*>")
#: Cell texts that all say "nothing" (the helpers render an empty value in different ways).
_NOTHING = {"", "none", "—", "-", "[]", "{}", "(none)"}


def table_key(table: str) -> frozenset[tuple[str, ...]] | None:
    """What a table says, whatever its styling: the set of its rows' cell texts (header rows
    aside, an empty value as ""). None for a table that cannot be compared (nested, no rows)."""
    if len(_TABLE_TAG.findall(table)) > 2:
        return None
    rows = set()
    for row in _ROW.findall(table):
        cells = _CELL.findall(row)
        if not any(kind.lower() == "d" for kind, _ in cells):
            continue  # a header row
        texts = (" ".join(html.unescape(_TAG.sub(" ", text)).split()) for _, text in cells)
        rows.add(tuple("" if t.lower() in _NOTHING else t for t in texts))
    return frozenset(rows) or None


def _drop_repeated_tables(cells: list[Any], lead_tables: set[frozenset[tuple[str, ...]] | None]) -> None:
    """Show each table once: one saying what the lead says is left out everywhere else; one a
    later output shows again is left out of the earlier output. An output left empty is dropped."""
    outputs = [o for c in cells if c.cell_type == "code" for o in c.outputs if _html(o)]
    later: dict[frozenset[tuple[str, ...]], int] = {}
    for index, output in enumerate(outputs):
        if "<script" in (_html(output) or ""):
            continue  # plotly's own HTML (an older notebook): figures are never cut
        for table in top_level_tables(_html(output) or ""):
            key = table_key(table)
            if key is not None:
                later[key] = index
    for index, output in enumerate(outputs):
        text = _html(output) or ""
        if "<script" in text:
            continue
        for table in dict.fromkeys(top_level_tables(text)):
            key = table_key(table)
            if key is not None and (key in lead_tables or later.get(key, index) > index):
                text = text.replace(table, "")
        if text != _html(output):
            output["data"] = {**output["data"], "text/html": text}
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if _html(o) is None or _html(o).strip()]


def _keep(output: dict) -> bool:
    """Results a reader wants: rich displays and results, not stderr, scraps or bare reprs."""
    kind = output.get("output_type")
    if kind == "error":
        return True  # a failed step is evidence
    if kind == "stream":
        return output.get("name") == "stdout" and bool(str(output.get("text", "")).strip())
    data = output.get("data") or {}
    if set(data) <= {SCRAP_MIME} or WIDGET_MIME in data:
        return False  # scraps are for machines; controls are for the person running the notebook
    if kind == "execute_result" and set(data) == {"text/plain"}:
        return False  # a variable echoed by the cell (a path, a repr): code-level detail
    return True
