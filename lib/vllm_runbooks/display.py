"""Shared display helpers: HTML tables, banners, and plotly figures that work offline.

Figures are shown as a mime bundle: JupyterLab renders the plotly JSON natively, and the HTML
copy made by nbconvert gets a ``text/html`` rendering with plotly.js inlined once per kernel,
so an executed notebook opens on an air-gapped node.
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


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


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


def show_figure(fig: Any) -> None:
    """Display a plotly figure so that both JupyterLab and the offline HTML copy render it."""
    from IPython.display import display

    display(figure_bundle(fig), raw=True)


class FigureView:
    """A plotly figure as a result value: a cell that ends with it renders like ``show_figure``.

    Deliberately no attribute delegation: IPython would find the figure's own
    ``_ipython_display_`` through it and bypass the offline HTML. Use ``.figure`` for the Figure.
    """

    def __init__(self, figure: Any) -> None:
        self.figure = figure

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return figure_bundle(self.figure)
