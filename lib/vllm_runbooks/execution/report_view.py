"""The approver's view of an executed runbook: results without code cells or parameter boilerplate.

Why a second HTML: platform owners read headings, verdicts, tables and figures, not Python. The
full HTML stays the complete evidence; this one (``NN_name.report.html`` beside it) drops code
inputs, the parameters cells, the parameter table of the first cell, stderr streams and the
scraps, and is still one self-contained offline file (plotly.js is inlined by the figures).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..redact import redact_text
from .offline_html import OfflineRenderer
from .scraps import SCRAP_MIME

REPORT_SUFFIX = ".report.html"
#: Cells papermill tags or the templates mark as parameters: boilerplate for a reader.
SKIP_TAGS = {"parameters", "injected-parameters"}
_PARAM_TABLE = re.compile(r"\n\*\*Parameters\*\*.*", re.S)


def report_path(notebook: Path) -> Path:
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
        cells = []
        for cell in nb.cells:
            if SKIP_TAGS & set(cell.get("metadata", {}).get("tags", [])):
                continue
            if cell.cell_type == "markdown":
                cell.source = _PARAM_TABLE.sub("", cell.source)
            elif cell.cell_type == "code":
                cell.outputs = [o for o in cell.get("outputs", []) if _keep(o)]
                if not cell.outputs:
                    continue
            cells.append(cell)
        nb.cells = cells
        body = (renderer or OfflineRenderer()).render(nb, report=True)
    except Exception as exc:  # the full HTML is still there; say why this view is not
        body = f"<html><body><h1>Report view failed</h1><pre>{redact_text(repr(exc))}</pre></body></html>"
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(body)
    except FileExistsError:
        return None
    return target


def _keep(output: dict) -> bool:
    """Results a reader wants: rich displays and results, not stderr, scraps or bare reprs."""
    kind = output.get("output_type")
    if kind == "error":
        return True  # a failed step is evidence
    if kind == "stream":
        return output.get("name") == "stdout" and bool(str(output.get("text", "")).strip())
    data = output.get("data") or {}
    if set(data) <= {SCRAP_MIME}:
        return False
    if kind == "execute_result" and set(data) == {"text/plain"}:
        return False  # a variable echoed by the cell (a path, a repr): code-level detail
    return True
