"""HTML copies of executed notebooks that open on an air-gapped node: no request leaves the file.

nbconvert's lab template loads require.js, MathJax, Mermaid and the widget manager from CDNs. The
runbooks need none of them (no cell writes LaTeX), and on an air-gapped node each is a failed
request and a console error. This template is the lab template with those four script blocks
emptied, kept as a string so it ships with the module, plus what the product's pages share:

- figures: a notebook stores each figure as plotly JSON only (``display.figure_bundle``); the
  exporter turns it into ``display.figure_div`` and the page loads plotly.js from the one copy in
  its folder (:func:`shared_plotlyjs`, ``plotly-<version>.min.js``) through a relative
  ``<script src>``, which chromium and firefox load from ``file://``. Inlining it instead cost
  4.6 MB per page (a suite's run directory was 91 MB). A page opened away from that file shows,
  in place of each figure, a notice naming the file it needs.
- a Content-Security-Policy (``display.page_csp``): nothing from the network, no inline script
  but the one fixed figure script, so markup that reached an output from a value cannot run.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path
from typing import Any

from ..display import FIGURE_SCRIPT, PLOTLY_MIME, figure_div, page_csp

TEMPLATE_NAME = "vllm_runbooks_offline.html.j2"

OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
<meta http-equiv="Content-Security-Policy" content="{{ resources.vr_csp }}">
{%- if resources.vr_library %}
<script src="{{ resources.vr_library | escape_html }}" charset="utf-8"></script>
{%- endif -%}
{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block footer_js %}
{%- if resources.vr_figure_script %}<script>{{ resources.vr_figure_script }}</script>{% endif -%}
{% endblock footer_js %}
"""

_PLOTLYJS: list[tuple[str, str]] = []


def plotlyjs() -> tuple[str, str]:
    """(plotly.js source, its version) as the installed plotly ships it; ("", "") without plotly."""
    if not _PLOTLYJS:
        try:
            from plotly.offline import get_plotlyjs, get_plotlyjs_version

            _PLOTLYJS.append((get_plotlyjs(), get_plotlyjs_version()))
        except Exception:  # noqa: BLE001 - without plotly there is no library to share
            _PLOTLYJS.append(("", ""))
    return _PLOTLYJS[0]


def plotlyjs_name() -> str | None:
    """The shared library's file name (``plotly-<version>.min.js``), None without plotly."""
    source, version = plotlyjs()
    return f"plotly-{version}.min.js" if source and version else None


def shared_plotlyjs(folder: str | Path) -> str | None:
    """Make sure ``folder`` holds the one plotly.js its pages load; returns its name (relative).

    Written whole and never over an existing file (a run never overwrites): inside a run the
    runner writes it while a runbook runs, so it is that runbook's output in run.json's manifest,
    and ``runs --verify`` checks it like any artefact. None when plotly is not installed.
    """
    name = plotlyjs_name()
    if name is None:
        return None
    target = Path(folder) / name
    if target.exists():
        return name
    tmp = target.with_name(f".{name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as handle:
            handle.write(plotlyjs()[0])
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass  # written meanwhile by another runbook of the run
    finally:
        tmp.unlink(missing_ok=True)
    return name


def offline_html_exporter(**options: Any) -> Any:
    """nbconvert's lab HTML exporter without any script fetched from the network.

    ``options`` go to ``HTMLExporter`` (e.g. ``exclude_input=True`` for the approver's report view),
    so every HTML copy the product writes shares the one offline template.
    """
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(
        template_name="lab",
        template_file=TEMPLATE_NAME,
        extra_loaders=[DictLoader({TEMPLATE_NAME: OFFLINE_TEMPLATE})],
        **options,
    )


#: The approver's report view: the same exporter with code inputs and prompts left out.
REPORT_OPTIONS = ("exclude_input", "exclude_input_prompt", "exclude_output_prompt")


def count_figures(nb: Any) -> int:
    """How many plotly outputs ``nb`` holds (a page without any needs no library and no script)."""
    return sum(
        isinstance(o, dict) and PLOTLY_MIME in (o.get("data") or {})
        for c in nb.get("cells", [])
        for o in c.get("outputs", []) or []
    )


def draw_figures(nb: Any, library: str | None) -> int:
    """Give every plotly output of ``nb`` (in place) the page fragment that draws it; how many.

    The fragment replaces the output's other renderings (an older notebook's inlined plotly.js
    among them), so a figure is on the page once, drawn from its JSON.
    """
    count = 0
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            data = output.get("data") if isinstance(output, dict) else None
            if isinstance(data, dict) and PLOTLY_MIME in data:
                output["data"] = {"text/html": figure_div(data[PLOTLY_MIME], library)}
                count += 1
    return count


#: An ipywidgets output: a live kernel draws it; a static page cannot (no widget manager loads).
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    "<p><em>Interactive controls: they work when the notebook is opened in JupyterLab; "
    "a static page cannot run them.</em></p>"
)


def static_widgets(nb: Any) -> None:
    """Replace every widget output of ``nb`` (in place) by a line saying where it works, and drop
    the saved widget state: nbconvert would otherwise add an inline script no page may run."""
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            data = output.get("data") if isinstance(output, dict) else None
            if isinstance(data, dict) and WIDGET_MIME in data:
                output["data"] = {"text/html": WIDGET_NOTE}


def page_resources(figures: int, library: str | None) -> dict[str, Any]:
    """What the offline template adds to a page: its CSP, and with figures the library and script."""
    return {
        "vr_csp": page_csp(bool(figures)),
        "vr_library": library if figures else None,
        "vr_figure_script": FIGURE_SCRIPT if figures else "",
    }


class OfflineRenderer:
    """One offline exporter for both HTML copies of a run, made ready while the kernel runs.

    Why: building nbconvert's exporter and its first render (template compile, lexers, markdown
    parser) cost about 1.5 s of each ``vllm-runbooks run`` on a 2-core machine, and a second
    exporter for the report view repeated most of it. :meth:`warm_in_background` does that work
    in a thread while papermill waits on the kernel (its process is idle then); both copies are
    then rendered by the one warmed exporter, toggling only the report view's options.
    """

    def __init__(self) -> None:
        self._exporter: Any = None
        self._thread: threading.Thread | None = None

    def warm_in_background(self) -> OfflineRenderer:
        """Start building and warming the exporter; rendering waits for it. Returns self."""
        if self._thread is None and self._exporter is None:
            self._thread = threading.Thread(target=self._warm, name="vllm-runbooks-html-warmup", daemon=True)
            self._thread.start()
        return self

    def _warm(self) -> None:
        try:
            import nbformat

            exporter = offline_html_exporter()
            nb = nbformat.v4.new_notebook(
                cells=[
                    nbformat.v4.new_markdown_cell("# warm-up\n\n| a | b |\n|---|---|\n| `1` | *2* |"),
                    nbformat.v4.new_code_cell(
                        "x = 1",
                        outputs=[
                            nbformat.v4.new_output("stream", name="stdout", text="x\n"),
                            nbformat.v4.new_output("display_data", data={"text/html": "<b>x</b>", "text/plain": "x"}),
                        ],
                    ),
                ]
            )
            exporter.from_notebook_node(nb, resources=page_resources(0, None))
            self._exporter = exporter
        except Exception:  # noqa: BLE001 - render() builds a fresh exporter and reports its own error
            self._exporter = None

    def render(self, nb: Any, report: bool = False, folder: str | Path | None = None) -> str:
        """HTML of ``nb``: the full copy, or the report view (no code inputs, no prompts).

        ``folder``: where the page will lie; with figures, the shared plotly.js is made sure of
        there (:func:`shared_plotlyjs`). ``nb``'s figure and widget outputs are rewritten in place.
        """
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._exporter is None:
            self._exporter = offline_html_exporter()
        for option in REPORT_OPTIONS:
            setattr(self._exporter, option, report)
        library = None
        if count_figures(nb):
            library = shared_plotlyjs(folder) if folder is not None else plotlyjs_name()
        figures = draw_figures(nb, library)
        static_widgets(nb)
        body, _ = self._exporter.from_notebook_node(nb, resources=page_resources(figures, library))
        return body
