"""HTML copies of executed notebooks that open on an air-gapped node: no request leaves the file.

nbconvert's lab template loads require.js, MathJax, Mermaid and the widget manager from CDNs. The
runbooks need none of them (plotly.js is inlined by the figures themselves; no cell writes LaTeX),
and on an air-gapped node each is a failed request and a console error. This template is the lab
template with those four script blocks emptied, kept as a string so it ships with the module.
"""

from __future__ import annotations

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
