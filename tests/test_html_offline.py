"""Every executed runbook's HTML copy opens in chromium with the network blocked.

The HTML copy is what a platform owner opens on an air-gapped node: no request may leave the file
(no CDN script, no MathJax, no fonts), every plotly chart must draw itself as SVG, and the page
must log no console error. Runbooks are executed for real (01/02 on the r575 sample incident,
03/04 against the embedded vLLM target).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from browser_fixtures import offline_page, screenshot
from conftest import R575
from vllm_runbooks.execution.offline_html import offline_html_exporter
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.templates import available_runbooks

#: runbooks that need no server: parameters, and the runbooks that must run first into the same run dir
LOCAL = {
    "evidence_capture": ({"source": str(R575)}, ()),
    "compatibility_decision": ({}, ("evidence_capture",)),
    # "@runs": the folder holding this module's run directory (so the history has a run to draw)
    "validation_history": ({"runs_dir": "@runs"}, ("evidence_capture", "compatibility_decision")),
    # runbooks landing from other branches (06, 07): their defaults, after 01/02 where they read them
    "change_record": ({}, ("evidence_capture", "compatibility_decision")),
    "fleet_survey": ({}, ()),
}
#: runbooks that need an endpoint: the embedded target's URL and model are added; kept small
ENDPOINT = {
    "canary_validation": {"tool_calls": 2, "request_timeout_s": 60.0},
    "prefix_cache_check": {"requests": 3, "shared_prompt_tokens": 400, "max_requests": 10, "max_seconds": 60},
    # runbook 05 (from another branch), bounded to a few seconds per stage
    "load_check": {
        "max_requests": 40,
        "max_seconds": 60.0,
        "stage_seconds": 5.0,
        "max_concurrency": 2,
        "level_requests": 4,
        "level_seconds": 5.0,
        "same_prefix_requests": 2,
        "image_tools_requests": 1,
    },
}


def _param(name: str) -> Any:
    if name in LOCAL:
        return pytest.param(name, marks=pytest.mark.slow)
    if name in ENDPOINT:
        return pytest.param(name, marks=[pytest.mark.slow, pytest.mark.server])
    return pytest.param(name, marks=pytest.mark.skip(reason=f"{name}: add its parameters to LOCAL or ENDPOINT here"))


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return {"dir": tmp_path_factory.mktemp("html-local") / "run", "done": {}}


def _execute_local(name: str, state: dict[str, Any]) -> Any:
    if name not in state["done"]:
        params, before = LOCAL[name]
        for first in before:
            _execute_local(first, state)
        params = {k: str(state["dir"].parent) if v == "@runs" else v for k, v in params.items()}
        state["done"][name] = run_runbook(name, params, state["dir"])
    return state["done"][name]


def assert_opens_offline(browser: Any, html: Path, shot: str) -> int:
    """Open ``html`` with every non-file request blocked; return the number of plotly charts drawn."""
    with offline_page(browser) as (page, log):
        page.goto(html.as_uri(), wait_until="load")
        charts = page.locator("div.plotly-graph-div").count()
        if charts:
            page.wait_for_function(
                "n => [...document.querySelectorAll('div.plotly-graph-div')]"
                ".filter(d => d.querySelector('svg.main-svg')).length >= n",
                arg=charts,
                timeout=30_000,
            )
        screenshot(page, shot)
        assert log.blocked == [], f"{html.name} tried to reach the network: {log.blocked}"
        assert log.errors == [], f"{html.name} logged console errors: {log.errors}"
    return charts


@pytest.mark.parametrize("name", [_param(n) for n in available_runbooks()])
def test_html_copy_opens_offline(name: str, browser: Any, local_run: dict[str, Any], request: Any) -> None:
    if name in LOCAL:
        result = _execute_local(name, local_run)
    else:
        target = request.getfixturevalue("target")
        params = {"endpoint": target.base_url, "model": target.model, **ENDPOINT[name]}
        result = run_runbook(name, params, Path(request.getfixturevalue("tmp_path")) / "run")
    assert result.status == "ok", result.error
    html = Path(result.html)
    source = html.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=\"https?:", source), "a script is loaded from the network"
    charts = assert_opens_offline(browser, html, f"html-offline-{name}")
    notebook = nbformat.read(result.notebook, as_version=4)
    plotly_outputs = sum(
        "application/vnd.plotly.v1+json" in (o.get("data") or {}) for c in notebook.cells for o in c.get("outputs", [])
    )
    assert charts >= plotly_outputs, f"{plotly_outputs} plotly outputs, {charts} charts drawn"


def test_offline_exporter_drops_every_cdn_script(browser: Any, tmp_path: Path) -> None:
    """Math in markdown and widget state would pull MathJax and the widget manager from CDNs."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb.cells.append(nbformat.v4.new_markdown_cell("# Title\n\nInline math $a^2$ and a [link](https://example.org)."))
    body, _ = offline_html_exporter().from_notebook_node(nb)
    assert not re.search(r"<script[^>]+src=", body) and "cdnjs" not in body and "unpkg" not in body
    page = tmp_path / "math.html"
    page.write_text(body, encoding="utf-8")
    assert assert_opens_offline(browser, page, "html-offline-math") == 0
