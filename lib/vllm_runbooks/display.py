"""The one set of display helpers: HTML tables, banners, badges, and plotly figures that work offline.

Every result renders itself with these (no package keeps its own HTML helpers), so a verdict
looks the same in every runbook. Figures follow one idiom: a result method returns a
:class:`FigureView` (or :func:`figure_view` of a figure that may be missing), and a cell that
ends with it shows the figure. It is shown as a mime bundle: JupyterLab renders the plotly JSON
natively, and the HTML copy made by nbconvert gets a ``text/html`` rendering with plotly.js
inlined once per kernel, so an executed notebook opens on an air-gapped node.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_PLOTLYJS_EMITTED = False

VERDICT_COLOURS = {
    "good": "#1b7f3b",
    "warn": "#b26a00",
    "bad": "#b00020",
    "unknown": "#555555",
}


#: Badge colours by the word shown (verdicts, severities, statuses of every runbook).
BADGE_COLOURS = {
    "compatible": "#1a7f37",
    "compatible_minor_version": "#4c9a2a",
    "compatible_forward_compat": "#9a6700",
    "driver_too_old": "#cf222e",
    "arch_unsupported": "#8250df",
    "unknown": "#6e7781",
    "error": "#cf222e",
    "warning": "#9a6700",
    "info": "#0969da",
    "ok": "#1a7f37",
    "partial": "#9a6700",
    "unavailable": "#cf222e",
    "complete": "#1a7f37",
    "empty": "#cf222e",
    "confirms": "#1a7f37",
    "contradicts": "#cf222e",
    "neutral": "#6e7781",
    "met": "#1a7f37",
    "unmet": "#cf222e",
}


def esc(value: Any) -> str:
    """HTML-escape anything (None shows as empty): every value shown passes through here."""
    return html.escape("" if value is None else str(value))


def badge(text: str) -> str:
    """A small coloured label for a verdict, severity or status word."""
    color = BADGE_COLOURS.get(text, "#57606a")
    return (
        f'<span style="background:{color};color:#fff;border-radius:4px;padding:1px 6px;'
        f'font-family:monospace">{esc(text)}</span>'
    )


def link(url: str | None, label: str | None = None) -> str:
    """A source link opening in a new tab (facts cite their sources); empty when there is none.

    Only an ``http(s)`` URL becomes clickable: a source can come from a user's overrides file, and
    a ``javascript:`` or ``data:`` link in a shared HTML copy would run in the reader's browser.
    Anything else is shown as text.
    """
    if not url:
        return ""
    if not safe_href(url):
        return esc(label or url) if label is None else f"{esc(label)} ({esc(url)})"
    return f'<a href="{esc(url)}" target="_blank" rel="noopener noreferrer">{esc(label or url)}</a>'


def safe_href(url: str) -> bool:
    """Whether ``url`` may be a link target in a shared page: absolute http(s) only, no controls or spaces."""
    text = str(url)
    if any(ord(c) < 0x21 or c == "\x7f" for c in text):
        return False
    scheme, sep, rest = text.partition(":")
    return bool(sep) and scheme.lower() in ("http", "https") and rest.startswith("//") and len(rest) > 2


def cells_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table of pre-rendered HTML cells (callers escape with esc/badge/link), for mixed content."""
    head = "".join(f"<th style='text-align:left'>{esc(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left;vertical-align:top'>{c}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def bullets(items: Iterable[str]) -> str:
    """An escaped bullet list; empty when there is nothing to list."""
    items = list(items)
    return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>" if items else ""


def html_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A plain HTML table; missing cells render empty, None renders as an em dash."""
    if not rows:
        return "<p><em>(none)</em></p>"
    cols = list(columns or _columns(rows))
    head = "".join(f"<th style='text-align:left'>{esc(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{_cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of every row, in first-seen order."""
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    return list(seen)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return "<br>".join(esc(v) for v in value)
    return esc(value)


def banner(title: str, detail: str = "", tone: str = "unknown") -> str:
    """A coloured verdict banner; tone is good / warn / bad / unknown."""
    colour = VERDICT_COLOURS.get(tone, VERDICT_COLOURS["unknown"])
    return (
        f"<div style='border-left:6px solid {colour};padding:8px 12px;margin:6px 0;"
        f"background:#f7f7f7'><div style='font-size:1.3em;font-weight:bold;color:{colour}'>"
        f"{esc(title)}</div><div>{esc(detail)}</div></div>"
    )


def figure_html(fig: Any, include_plotlyjs: bool) -> str:
    """A figure (or a figure dict) as an HTML fragment (plotly.js inlined when asked: the first figure of a kernel)."""
    import plotly.io as pio

    return pio.to_html(fig, full_html=False, include_plotlyjs=include_plotlyjs, config={"displaylogo": False})


def figure_bundle(fig: Any) -> dict[str, Any]:
    """The mime bundle for a figure: plotly JSON for JupyterLab, HTML (plotly.js once per kernel).

    Every text of the figure (trace text, hover text, titles, axis labels) is redacted first:
    figures are drawn from log lines and parameters, and the notebook is shared evidence.
    """
    global _PLOTLYJS_EMITTED
    from .redact import redact_markup_obj

    clean = redact_markup_obj(json.loads(fig.to_json()))
    bundle = {
        "application/vnd.plotly.v1+json": clean,
        "text/html": figure_html(clean, include_plotlyjs=not _PLOTLYJS_EMITTED),
    }
    _PLOTLYJS_EMITTED = True
    return bundle


class FigureView:
    """A plotly figure as a result value: a cell that ends with it shows the figure, offline too.

    Deliberately no attribute delegation: IPython would find the figure's own
    ``_ipython_display_`` through it and bypass the offline HTML. Use ``.figure`` for the Figure.
    """

    def __init__(self, figure: Any) -> None:
        self.figure = figure

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Render through ``figure_bundle`` so the offline HTML copy carries the figure."""
        return figure_bundle(self.figure)


class NoFigure:
    """What a figure method returns when its step did not run: a line saying so, not an error."""

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    def _repr_html_(self) -> str:
        return f"<p><em>{esc(self.name)}: no data ({esc(self.why)})</em></p>"


class HtmlView:
    """An HTML fragment (a table, a banner) as a cell result: a result method returns it so the
    cell shows the table, where a bare string would show its markup."""

    def __init__(self, html: str) -> None:
        self.html = html

    def _repr_html_(self) -> str:
        return self.html


class FigureGroup:
    """Several figures shown by one cell (one per log, say), each offline-capable."""

    def __init__(self, figures: list[Any], empty: str = "no figure") -> None:
        self.figures, self.empty = list(figures), empty

    def __len__(self) -> int:
        """How many figures the group holds."""
        return len(self.figures)

    def _ipython_display_(self) -> None:
        """One output per figure, each a full bundle (plotly JSON for JupyterLab, HTML offline)."""
        from IPython.display import HTML, display

        if not self.figures:
            display(HTML(self._repr_html_()))
        for fig in self.figures:
            display(figure_bundle(fig), raw=True)

    def _repr_html_(self) -> str:
        """All figures as one HTML fragment (where IPython's display hook is not used)."""
        global _PLOTLYJS_EMITTED
        if not self.figures:
            return f"<p><em>{esc(self.empty)}</em></p>"
        parts = []
        for fig in self.figures:
            parts.append(figure_html(fig, include_plotlyjs=not _PLOTLYJS_EMITTED))
            _PLOTLYJS_EMITTED = True
        return "".join(parts)


def figure_view(figure: Any, name: str = "figure", why: str = "its step did not run") -> FigureView | NoFigure:
    """A figure that displays itself, or a note when there is none (the one figure idiom)."""
    return NoFigure(name, why) if figure is None else FigureView(figure)
