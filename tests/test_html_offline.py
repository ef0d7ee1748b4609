"""Every executed runbook's HTML copy, report view and the run's index.html open in chromium with
the network blocked.

These pages are what a platform owner opens on an air-gapped node: no request may leave the file
(no CDN script, no MathJax, no fonts), every plotly chart must draw itself as SVG (from the run
directory's one plotly.js), and the page must log no console error. Runbooks are executed for real
(01/02 on the r575 sample incident, 03/04 against the embedded vLLM target), and their files must
stay small: figures are stored as plotly JSON, never with the 4.6 MB library.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from browser_fixtures import offline_page, screenshot
from conftest import R575
from vllm_runbooks.execution.offline_html import offline_html_exporter, plotlyjs, plotlyjs_name
from vllm_runbooks.execution.report_view import report_path, table_key, top_level_tables
from vllm_runbooks.execution.runjson import load_run
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.runs import summarise_run
from vllm_runbooks.execution.suite import run_suite
from vllm_runbooks.execution.templates import available_runbooks

#: issue 20: an executed notebook (and each of its pages) at most 1 MB; a suite's run directory 25 MB
MAX_NOTEBOOK_BYTES = 1024 * 1024
MAX_RUN_DIR_BYTES = 25 * 1024 * 1024

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
    """Open ``html`` with every non-file request blocked; return the number of plotly charts drawn
    (every figure of the page: each has drawn its SVG and no "not drawn" notice is left)."""
    with offline_page(browser) as (page, log):
        page.goto(html.as_uri(), wait_until="load")
        charts = page.locator("div.vr-figure").count()
        if charts:
            page.wait_for_function(
                "n => [...document.querySelectorAll('div.vr-figure')]"
                ".filter(d => d.querySelector('svg.main-svg')).length >= n",
                arg=charts,
                timeout=30_000,
            )
        screenshot(page, shot)
        assert page.locator(".vr-figure-notice").count() == 0, f"{html.name}: a figure was not drawn"
        assert log.blocked == [], f"{html.name} tried to reach the network: {log.blocked}"
        assert log.errors == [], f"{html.name} logged console errors: {log.errors}"
    return charts


def assert_report_layout(report: Path, headline: dict[str, Any] | None) -> None:
    """A report view leads with the verdict, folds the parameter documentation, and says each
    table once (what it says, whatever its styling)."""
    page = report.read_text(encoding="utf-8")
    body = page[page.index("<body") :]
    assert headline, f"{report.name}: no headline recorded"
    verdict = html.escape(f"{headline['runbook']}: {headline['verdict']}")
    assert body.index(verdict) < body.index("<details>") < body.index("</details>") < body.index("<h2"), report.name
    assert body.count(verdict) == 1, f"{report.name}: the verdict is shown twice"
    keys = [k for k in (table_key(t) for t in top_level_tables(page)) if k]
    assert keys and len(keys) == len(set(keys)), f"{report.name}: a table is shown twice"


def assert_small(paths: list[Path]) -> None:
    """Each file at most 1 MB, and none carries plotly.js (the run directory holds it once)."""
    library = plotlyjs()[0][:2000]
    for path in paths:
        assert path.stat().st_size <= MAX_NOTEBOOK_BYTES, f"{path.name}: {path.stat().st_size} bytes"
        assert library not in path.read_text(encoding="utf-8"), f"{path.name} inlines plotly.js"


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
    report = report_path(Path(result.notebook))
    assert_small([Path(result.notebook), html, report])
    charts = assert_opens_offline(browser, html, f"html-offline-{name}")
    notebook = nbformat.read(result.notebook, as_version=4)
    plotly_outputs = sum(
        "application/vnd.plotly.v1+json" in (o.get("data") or {}) for c in notebook.cells for o in c.get("outputs", [])
    )
    assert charts >= plotly_outputs, f"{plotly_outputs} plotly outputs, {charts} charts drawn"
    assert assert_opens_offline(browser, report, f"report-offline-{name}") == charts
    assert_report_layout(report, result.headline)


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


@pytest.mark.slow
def test_index_and_report_views_of_a_suite_open_offline_with_every_figure(browser: Any, tmp_path: Path) -> None:
    """A real suite (01, 02, 07 on the r575 sample, 03-05 skipped: no endpoint, then 06): its
    index.html and every report view draw every figure offline; the run stays small and verified."""
    params = {"shared": {"source": str(R575)}, "fleet_survey": {}}
    result = run_suite(params, tmp_path / "run", cell_timeout_s=300)
    run_dir = Path(result.run_dir)
    ran = [e for e in result.runbooks if e.status == "ok"]
    assert {e.name for e in ran} >= {"evidence_capture", "compatibility_decision", "change_record"}, result.lines()
    index = run_dir / "index.html"
    charts = assert_opens_offline(browser, index, "index-offline")
    # one main figure per runbook that draws any (06 draws none), the record on top, the skipped named
    figured = [e for e in ran if e.notebook and "application/vnd.plotly.v1+json" in Path(e.notebook).read_text()]
    assert charts == len(figured) >= 2
    page = index.read_text(encoding="utf-8")
    assert page.index("Change record") < page.index("01_evidence_capture.ipynb") and "canary_validation" in page
    reports = sorted(run_dir.glob("*.report.html"))
    assert len(reports) == len(ran)
    headlines = {Path(e["notebook"]).stem: e.get("headline") for e in load_run(run_dir)["runbooks"]}
    for report in reports:
        assert_opens_offline(browser, report, f"suite-{report.stem}")
        assert_report_layout(report, headlines[report.name.removesuffix(".report.html")])
    assert_small([*run_dir.glob("*.ipynb"), *run_dir.glob("*.html")])
    total = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    assert total <= MAX_RUN_DIR_BYTES, f"run directory {total} bytes"
    assert [p.name for p in run_dir.glob("plotly-*.min.js")] == [plotlyjs_name()]
    assert summarise_run(run_dir, verify=True).tampered == []  # every page and the library are listed


@pytest.mark.slow
def test_a_report_view_attached_alone_says_its_figures_are_not_drawn(browser: Any, local_run: dict[str, Any]) -> None:
    result = _execute_local("evidence_capture", local_run)
    alone = local_run["dir"].parent / "ticket"
    alone.mkdir(exist_ok=True)
    copy = alone / report_path(Path(result.notebook)).name
    copy.write_bytes(report_path(Path(result.notebook)).read_bytes())
    with offline_page(browser) as (page, log):
        page.goto(copy.as_uri(), wait_until="load")
        figures = page.locator("div.vr-figure").count()
        notices = page.locator(".vr-figure-notice")
        assert figures >= 1 and notices.count() == figures and page.locator("svg.main-svg").count() == 0
        assert notices.first.is_visible() and str(plotlyjs_name()) in notices.first.inner_text()
        screenshot(page, "report-alone")
        assert log.blocked == []
