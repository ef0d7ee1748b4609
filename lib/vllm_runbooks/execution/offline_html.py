"""HTML copies of executed notebooks that open on an air-gapped node: no request leaves the file.

nbconvert's lab template loads require.js, MathJax, Mermaid and the widget manager from CDNs. The
runbooks need none of them (plotly.js is inlined by the figures themselves; no cell writes LaTeX),
and on an air-gapped node each is a failed request and a console error. This template is the lab
template with those four script blocks emptied, kept as a string so it ships with the module.
"""

from __future__ import annotations

import threading
from typing import Any

TEMPLATE_NAME = "vllm_runbooks_offline.html.j2"

OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
"""


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
            exporter.from_notebook_node(nb)
            self._exporter = exporter
        except Exception:  # noqa: BLE001 - render() builds a fresh exporter and reports its own error
            self._exporter = None

    def render(self, nb: Any, report: bool = False) -> str:
        """HTML of ``nb``: the full copy, or the report view (no code inputs, no prompts)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._exporter is None:
            self._exporter = offline_html_exporter()
        for option in REPORT_OPTIONS:
            setattr(self._exporter, option, report)
        body, _ = self._exporter.from_notebook_node(nb)
        return body
