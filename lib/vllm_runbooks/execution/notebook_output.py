"""What an executed notebook leaves behind: the notebook scrubbed of secrets, and its offline HTML.

Kept apart from the runner because it is about notebook content (every output mime type, the
inlined plotly.js of notebooks executed before figures were stored as JSON only, scraps hidden
from readers), not about running: the runner calls :func:`scrub_notebook` then
:func:`render_html` once papermill is done, and the console reads :data:`PLOTLY_MIME` outputs back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..artefacts import write_atomic
from ..display import PLOTLY_MIME
from ..redact import redact_markup, redact_markup_obj, redact_obj, redact_text
from .offline_html import OfflineRenderer, plotlyjs
from .scraps import SCRAP_MIME

__all__ = ["PLOTLY_MIME", "render_html", "scrub_html", "scrub_notebook", "scrub_notebook_json"]


def scrub_notebook(path: Path) -> None:
    """Defence in depth: redact the executed notebook's sources and EVERY output once more.

    Text, tracebacks, every mime type of display data (HTML tables, plotly figure JSON with its
    hover text and titles, scraps, JSON) and output metadata. Only the inlined plotly.js library
    is left as it is (its code looks like ``key=value`` pairs), recognised byte for byte; base64
    images are binary. The notebook is rewritten atomically.
    """
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return
    if not isinstance(nb, dict):
        return
    clean = scrub_notebook_json(nb)
    if clean != nb:
        write_atomic(path, json.dumps(clean, indent=1, ensure_ascii=False) + "\n")


_BINARY_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf")
_SCRIPT = re.compile(r"(<script\b[^>]*>)(.*?)(</script\s*>)", re.S | re.I)
_TAG_SPLIT = re.compile(r"(<[^>]*>)")
_JSON_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def scrub_notebook_json(nb: dict[str, Any]) -> dict[str, Any]:
    """The notebook (as JSON) with every cell source and output redacted."""
    nb = dict(nb)
    if "metadata" in nb:  # papermill keeps the parameters and any exception there
        nb["metadata"] = redact_markup_obj(nb["metadata"])
    cells = []
    for cell in nb.get("cells") or []:
        if not isinstance(cell, dict):
            cells.append(redact_obj(cell))
            continue
        cell = dict(cell)
        if "source" in cell:
            cell["source"] = redact_obj(cell["source"])
        if "metadata" in cell:
            cell["metadata"] = redact_markup_obj(cell["metadata"])
        if isinstance(cell.get("outputs"), list):
            cell["outputs"] = [_scrub_output(o) for o in cell["outputs"]]
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _scrub_output(output: Any) -> Any:
    if not isinstance(output, dict):
        return redact_obj(output)
    out: dict[str, Any] = {}
    for key, value in output.items():
        if key == "data" and isinstance(value, dict):
            out[key] = {mime: _scrub_mime(mime, v) for mime, v in value.items()}
        else:
            out[key] = redact_markup_obj(value)
    return out


def _scrub_mime(mime: str, value: Any) -> Any:
    if mime in _BINARY_MIMES:
        return value
    if mime == "text/html":
        text = "".join(value) if isinstance(value, list) else value
        return scrub_html(text) if isinstance(text, str) else redact_markup_obj(value)
    return redact_markup_obj(value)


def scrub_html(html_text: str) -> str:
    """Redact an HTML output: text between tags, tags, and the JSON strings of figure scripts.

    The inlined plotly.js library (notebooks executed before figures were stored as JSON only)
    is recognised exactly and kept as it is.
    """
    library = plotlyjs()[0]
    parts = html_text.split(library) if library and library in html_text else [html_text]
    return library.join(_scrub_html_part(p) for p in parts) if len(parts) > 1 else _scrub_html_part(html_text)


def _scrub_html_part(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _SCRIPT.finditer(text):
        out.append(_scrub_markup_text(text[pos : m.start()]))
        body = _JSON_STRING.sub(_scrub_json_string, m.group(2))
        out.append(m.group(1) + body + m.group(3))
        pos = m.end()
    out.append(_scrub_markup_text(text[pos:]))
    return "".join(out)


def _scrub_markup_text(text: str) -> str:
    pieces = _TAG_SPLIT.split(text)
    return "".join(redact_text(p) if p.startswith("<") else redact_markup(p) for p in pieces)


def _scrub_json_string(m: re.Match[str]) -> str:
    try:
        value = json.loads(m.group(0))
    except ValueError:
        return redact_text(m.group(0))
    clean = redact_markup(value)
    if clean == value:
        return m.group(0)
    return json.dumps(clean, ensure_ascii=False).replace("</", "<\\/")


def render_html(notebook: Path, renderer: OfflineRenderer | None = None) -> Path | None:
    """The offline HTML copy next to the notebook: every cell and output, no CDN script.

    Figures are drawn by the plotly.js shared in the notebook's folder (see ``offline_html``).
    ``renderer``: the run's warmed :class:`~.offline_html.OfflineRenderer` (a fresh one when None).
    """
    try:
        import nbformat

        nb = nbformat.read(str(notebook), as_version=4)
        for cell in nb.cells:  # scraps are data for machines, not something to show a reader
            if cell.get("outputs"):
                cell.outputs = [o for o in cell.outputs if set(o.get("data", {})) != {SCRAP_MIME}]
        body = (renderer or OfflineRenderer()).render(nb, folder=notebook.parent)
    except Exception as exc:  # an unreadable notebook still gets an HTML page saying why
        body = f"<html><body><h1>HTML rendering failed</h1><pre>{redact_text(repr(exc))}</pre></body></html>"
    html_path = notebook.with_suffix(".html")
    if html_path.exists():
        return None
    # The HTML is rendered from the scrubbed notebook, so it holds nothing the notebook does not.
    write_atomic(html_path, body)
    return html_path
