"""The one set of display helpers: HTML tables, banners, badges, and plotly figures that work offline.

Every result renders itself with these (no package keeps its own HTML helpers), so a verdict
looks the same in every runbook. Figures follow one idiom: a result method returns a
:class:`FigureView` (or :func:`figure_view` of a figure that may be missing), and a cell that
ends with it shows the figure. It is shown as a mime bundle of the plotly JSON (which JupyterLab
renders natively, offline) and a line of text; the notebook never carries plotly.js (4.6 MB a
copy). The pages the product writes (HTML copies, report views, the run's ``index.html``) draw
the same JSON with :func:`figure_div` and :data:`FIGURE_SCRIPT`, loading plotly.js from the one
copy in the run directory; a page opened without it says so in place of each figure.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

#: The mime type of a plotly figure in a notebook output (JupyterLab's plotly renderer draws it).
PLOTLY_MIME = "application/vnd.plotly.v1+json"

#: The one palette: every colour a banner, badge, table or figure of the product uses, by meaning.
#: Packages name a tone here rather than keep their own colour tables.
PALETTE = {
    "good": "#1b7f3b",
    "warn": "#b26a00",
    "bad": "#b00020",
    "unknown": "#555555",
    "info": "#0969da",
    "other": "#8250df",
    "muted": "#9e9e9e",
    "faint": "#cccccc",
    "series": "#3b5b92",
    "series_light": "#c7d7e8",
}
#: Background tints for consecutive bands of a figure (load stages on a timeline).
TINTS = ("#e8eef7", "#f4efe6", "#e9f4ea", "#f6e8ee", "#eeeaf6", "#e6f3f4", "#f3f3e4")

VERDICT_COLOURS = {tone: PALETTE[tone] for tone in ("good", "warn", "bad", "unknown")}

#: The tone of each word a badge shows (verdicts, severities, statuses of every runbook).
WORD_TONES = {
    "compatible": "good",
    "compatible_minor_version": "good",
    "compatible_forward_compat": "warn",
    "driver_too_old": "bad",
    "arch_unsupported": "other",
    "unknown": "unknown",
    "error": "bad",
    "warning": "warn",
    "info": "info",
    "ok": "good",
    "partial": "warn",
    "unavailable": "bad",
    "complete": "good",
    "empty": "bad",
    "confirms": "good",
    "contradicts": "bad",
    "neutral": "unknown",
    "met": "good",
    "unmet": "bad",
    "healthy": "good",
    "inconclusive": "unknown",
    "pass": "good",
    "fail": "bad",
    "skip": "warn",
}
BADGE_COLOURS = {word: PALETTE[tone] for word, tone in WORD_TONES.items()}


#: The one stylesheet of the product's own pages (the change record, the run's index.html).
PAGE_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:76rem;margin:1.5rem auto;padding:0 1rem;line-height:1.45}"
    "table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #ccc;padding:.3rem .5rem;"
    "vertical-align:top;text-align:left}th{background:#f3f3f3}code{font-size:.9em}li{margin:.25rem 0}"
    "section{border-top:2px solid #ddd;margin-top:1.5rem;padding-top:.5rem}"
    ".vr-record{border:1px solid #ccc;padding:0 1rem;background:#fcfcfc}.vr-muted{color:#555}"
)


def colour(word: str, default: str = "bad") -> str:
    """The palette colour of a verdict or status word (``default``'s tone for a word it does not know)."""
    return PALETTE[WORD_TONES.get(word, default)]


def esc(value: Any) -> str:
    """HTML-escape anything (None shows as empty): every value shown passes through here."""
    return html.escape("" if value is None else str(value))


def badge(text: str) -> str:
    """A small coloured label for a verdict, severity or status word."""
    color = BADGE_COLOURS.get(text, PALETTE["unknown"])
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


def figure_bundle(fig: Any) -> dict[str, Any]:
    """The mime bundle for a figure: plotly JSON (JupyterLab draws it) and a line saying so.

    No plotly.js and no second copy of the data: inlining the library put 4.6 MB into every
    notebook. A viewer without a plotly renderer shows the line (HTML or text); the product's
    HTML copies draw the JSON (``execution.offline_html``). Every text of the figure (trace text,
    hover text, titles, axis labels) is redacted first: figures are drawn from log lines and
    parameters, and the notebook is shared evidence.
    """
    from .redact import redact_markup_obj

    clean = redact_markup_obj(json.loads(fig.to_json()) if hasattr(fig, "to_json") else fig)
    text = figure_text(clean)
    return {PLOTLY_MIME: clean, "text/html": f"<p><em>{esc(text)}</em></p>", "text/plain": text}


def figure_title(fig: Any, limit: int = 200) -> str:
    """A figure's title text (plotly JSON), bounded; "" when it has none."""
    layout = fig.get("layout") if isinstance(fig, Mapping) else None
    title = layout.get("title") if isinstance(layout, Mapping) else None
    text = title.get("text") if isinstance(title, Mapping) else title
    return " ".join(str(text).split())[:limit] if isinstance(text, str | int | float) else ""


def figure_text(fig: Any) -> str:
    """What a viewer without a plotly renderer shows for a figure output: what it is, where to see it."""
    title = figure_title(fig)
    named = f" {title!r}" if title else ""
    return f"plotly figure{named}: drawn by JupyterLab and in the HTML copies of this notebook"


#: Drawn into every ``div.vr-figure`` of a page from its JSON (``script.vr-figure-data``) once
#: plotly.js has loaded; without plotly.js, or when a figure cannot be drawn, the figure's notice
#: stays and says why. One fixed script: pages list its sha256 in their Content-Security-Policy.
FIGURE_SCRIPT = """(function () {
  var figures = document.querySelectorAll("div.vr-figure");
  for (var i = 0; i < figures.length; i++) {
    var box = figures[i];
    var data = box.querySelector("script.vr-figure-data");
    var plot = box.querySelector("div.vr-figure-plot");
    var notice = box.querySelector(".vr-figure-notice");
    if (!window.Plotly || !data || !plot) { continue; }
    try {
      var fig = JSON.parse(data.textContent);
      var config = Object.assign({displaylogo: false, responsive: true}, fig.config || {});
      window.Plotly.newPlot(plot, fig.data || [], fig.layout || {}, config);
      if (notice) { notice.remove(); }
    } catch (err) {
      if (notice) { notice.textContent = "This figure could not be drawn: " + err; }
    }
  }
})();"""


def figure_script_hash() -> str:
    """The CSP source (``'sha256-…'``) of :data:`FIGURE_SCRIPT`, the one inline script a page runs."""
    digest = base64.b64encode(hashlib.sha256(FIGURE_SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def page_csp(figures: bool) -> str:
    """The Content-Security-Policy of a page the product writes: nothing from the network, no inline
    script but :data:`FIGURE_SCRIPT`, scripts only from the page's own place (the run directory's
    plotly.js) when it has figures. Markup that reached a page from a value cannot run."""
    scripts = f"script-src 'self' {figure_script_hash()}" if figures else "script-src 'none'"
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; {scripts}"


def _finite(value: Any, depth: int = 0) -> Any:
    """``value`` with NaN and infinities as null (``JSON.parse`` refuses them), bounded in depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 64:
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v, depth + 1) for v in value]
    return value


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def figure_div(fig: Any, library: str | None) -> str:
    """A figure (plotly JSON) as an HTML fragment drawn by the page's :data:`FIGURE_SCRIPT`.

    The JSON sits in a data block (never executed, so text in it cannot become markup or script);
    until the figure is drawn the fragment shows a notice naming what is missing, so a page
    attached alone to a ticket says that its figures need ``library`` (plotly.js beside it)
    rather than showing a blank.
    """
    title = figure_title(fig)
    what = f"Figure {title!r}" if title else "A figure"
    where = (
        f"plotly.js ({library}, which lies beside this page in its run directory)"
        if library
        else "plotly.js, which this page does not load"
    )
    notice = (
        f"{what} is not drawn here: it needs {where}. Open the page from its run directory, "
        "or the notebook in JupyterLab."
    )
    return (
        "<div class='vr-figure'>"
        f"<p class='vr-figure-notice' style='border:1px dashed #b26a00;padding:6px 10px'>{esc(notice)}</p>"
        "<div class='vr-figure-plot'></div>"
        f"<script type='application/json' class='vr-figure-data'>{_script_json(fig)}</script>"
        "</div>"
    )


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
    """Several figures shown by one cell (one per log, say), each as a figure bundle."""

    def __init__(self, figures: list[Any], empty: str = "no figure") -> None:
        self.figures, self.empty = list(figures), empty

    def __len__(self) -> int:
        """How many figures the group holds."""
        return len(self.figures)

    def _ipython_display_(self) -> None:
        """One output per figure, each a full bundle (plotly JSON for JupyterLab and the HTML copies)."""
        from IPython.display import HTML, display

        if not self.figures:
            display(HTML(self._repr_html_()))
        for fig in self.figures:
            display(figure_bundle(fig), raw=True)

    def _repr_html_(self) -> str:
        """All figures as one HTML fragment (where IPython's display hook is not used): drawn by a
        page that loads plotly.js and runs :data:`FIGURE_SCRIPT`, a notice otherwise."""
        if not self.figures:
            return f"<p><em>{esc(self.empty)}</em></p>"
        return "".join(figure_div(figure_bundle(fig)[PLOTLY_MIME], None) for fig in self.figures)


def figure_view(figure: Any, name: str = "figure", why: str = "its step did not run") -> FigureView | NoFigure:
    """A figure that displays itself, or a note when there is none (the one figure idiom)."""
    if isinstance(figure, FigureView | NoFigure):
        return figure
    return NoFigure(name, why) if figure is None else FigureView(figure)


class Figures:
    """Mixin for results: ``FIGURES`` names each plot a result can draw (name → ``"module:function"``,
    the function taking the result), and ``result.figure(name)`` is the one way a cell shows one.

    Why names and lazy functions: a notebook cell and a test say which plot they want in one
    word, the list of plots is declared once beside the result, and reading a saved result never
    imports plotly until a figure is drawn.
    """

    FIGURES: ClassVar[dict[str, str]] = {}

    def figure(self, name: str) -> FigureView | NoFigure:
        """One of ``FIGURES`` as a figure that displays itself, or a note saying why there is none."""
        import importlib

        where = self.FIGURES.get(name)
        if where is None:
            raise KeyError(f"unknown figure {name!r}; one of {', '.join(self.FIGURES)}")
        module, _, function = where.partition(":")
        return figure_view(getattr(importlib.import_module(module), function)(self), name)
