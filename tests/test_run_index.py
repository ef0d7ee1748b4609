"""The approver's pages without a kernel: ``index.html`` built from a hand-made run, and the report
view built from a hand-made executed notebook.

Runs come from ``run_factory.write_run`` (signed with the session key, every file in the manifest);
text fields carry markup, which must reach the page as text. The chromium pass over a real suite
run is in ``test_html_offline.py``.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import plotly.graph_objects as go
import pytest

from run_factory import write_run
from vllm_runbooks.display import FIGURE_SCRIPT, PLOTLY_MIME, figure_bundle, figure_script_hash
from vllm_runbooks.execution import runjson
from vllm_runbooks.execution.offline_html import plotlyjs, plotlyjs_name, shared_plotlyjs
from vllm_runbooks.execution.report_view import render_report_view, top_level_tables
from vllm_runbooks.execution.run_index import INDEX_FILE, RECORD_HTML, build_index, write_run_index
from vllm_runbooks.execution.runner import RunbookResult
from vllm_runbooks.execution.runs import summarise_run
from vllm_runbooks.execution.scraps import SCRAP_MIME
from vllm_runbooks.stage import Headline

HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'><svg onload=alert(3)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"


class _Scripts(HTMLParser):
    """Every script element (attributes and text) and every event-handler attribute of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.handlers: list[str] = []
        self.embeds: list[str] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handlers += [f"{tag} {k}" for k, _ in attrs if k.lower().startswith("on")]
        if tag in ("iframe", "object", "embed"):
            self.embeds.append(tag)
        if tag == "script":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


def assert_inert(page: str) -> _Scripts:
    """No handler, no embed, and no script but the library, the figure script and data blocks."""
    found = _Scripts()
    found.feed(page)
    assert found.handlers == [] and found.embeds == []
    for attrs, text in found.scripts:
        if attrs.get("type") == "application/json":
            assert attrs.get("class") == "vr-figure-data" and "<" not in text
        elif attrs.get("src"):
            assert attrs["src"] == plotlyjs_name() and not text
        else:
            assert text == FIGURE_SCRIPT
    return found


def _figure_notebook(path: Path, title: str) -> None:
    """An executed notebook holding one figure output as the runbooks leave it (JSON, no library)."""
    nb = nbformat.v4.new_notebook()
    bundle = figure_bundle(go.Figure(go.Bar(x=["gpu0"], y=[1]), layout={"title": {"text": title}}))
    output = nbformat.v4.new_output("execute_result", data=bundle, execution_count=1)
    nb.cells.append(nbformat.v4.new_code_cell("result.figure()", outputs=[output]))
    nbformat.write(nb, str(path))


def _entry(name: str, notebook: str, **extra: object) -> dict:
    return {"name": name, "notebook": notebook, "status": "ok", "started_at": "2026-12-01T10:00:00Z", **extra}


def test_every_text_of_the_run_reaches_the_index_as_text(tmp_path: Path) -> None:
    _figure_notebook(tmp_path / "01_a.ipynb", HOSTILE)
    entries = [
        _entry(
            HOSTILE,
            "01_a.ipynb",
            status=HOSTILE,
            error=HOSTILE,
            headline={"runbook": HOSTILE, "verdict": HOSTILE, "figures": {HOSTILE: HOSTILE, "nested": [HOSTILE]}},
        )
    ]
    write_run(tmp_path, entries, {})
    page, figures = build_index(tmp_path)
    found = assert_inert(page)
    assert figures == 1 and ESCAPED in page and "<img src=x" not in page
    # the figure's data sits in a data block the parser never reads as markup; it parses back whole
    data = [text for attrs, text in found.scripts if attrs.get("type") == "application/json"]
    assert json.loads(data[0])["layout"]["title"]["text"] == HOSTILE
    assert f"script-src 'self' {figure_script_hash()}" in page and "default-src 'none'" in page


def test_the_record_comes_first_and_an_altered_one_is_named_not_shown(tmp_path: Path) -> None:
    entries = [
        _entry("evidence_capture", "01_evidence_capture.ipynb"),
        _entry("change_record", "06_change_record.ipynb"),
    ]
    write_run(tmp_path, entries, {})
    record = tmp_path / RECORD_HTML
    record.write_text("<html><head></head><body><h1>Change record — run</h1><p>verdict checked</p></body></html>")
    runjson.record_attachment(tmp_path, "test", [record])  # as runbook 06 leaves it: listed
    page, _ = build_index(tmp_path)
    assert "<p>verdict checked</p>" in page
    assert page.index("verdict checked") < page.index("01_evidence_capture.ipynb")  # the record first
    record.write_text(record.read_text().replace("checked", "forged"))
    page, _ = build_index(tmp_path)
    assert "forged" not in page and "change_record.html: changed since run.json recorded it" in page


def test_the_page_embeds_the_file_runbook_06_writes() -> None:
    from vllm_runbooks.change_record.render import HTML_FILE

    assert RECORD_HTML == HTML_FILE


def test_without_a_record_the_page_says_so_and_lists_skipped_runbooks(tmp_path: Path) -> None:
    plan = {
        "schema": "suite_result",
        "runbooks": [{"name": "canary_validation", "status": "skipped", "reason": f"no endpoint {HOSTILE}"}],
    }
    write_run(tmp_path, [_entry("evidence_capture", "01_evidence_capture.ipynb")], {"suite/suite.json": plan})
    page, figures = build_index(tmp_path)
    assert_inert(page)
    assert "No change record in this run yet" in page and figures == 0 and "script-src 'none'" in page
    assert "canary_validation" in page and f"no endpoint {ESCAPED}" in page


def test_a_notebook_changed_after_the_run_lends_no_figure(tmp_path: Path) -> None:
    _figure_notebook(tmp_path / "01_a.ipynb", "GPU memory")
    write_run(tmp_path, [_entry("a", "01_a.ipynb")], {})
    assert build_index(tmp_path)[1] == 1
    _figure_notebook(tmp_path / "01_a.ipynb", "GPU memory, redrawn")
    page, figures = build_index(tmp_path)
    assert figures == 0 and "01_a.ipynb is changed since run.json recorded it" in page
    assert "redrawn" not in page


def test_the_library_a_page_needs_is_written_and_listed_with_it(tmp_path: Path) -> None:
    _figure_notebook(tmp_path / "01_a.ipynb", "GPU memory")
    write_run(tmp_path, [_entry("a", "01_a.ipynb")], {})
    page = write_run_index(tmp_path)
    library = tmp_path / str(plotlyjs_name())
    manifest = runjson.run_manifest(tmp_path) or {}
    assert library.read_text(encoding="utf-8") == plotlyjs()[0]
    assert manifest[library.name] == runjson.sha256_file(library) and INDEX_FILE in manifest
    assert f"src='{library.name}'" in page.read_text(encoding="utf-8")


def test_the_page_is_listed_and_each_earlier_version_kept_with_its_hash(tmp_path: Path) -> None:
    _figure_notebook(tmp_path / "01_a.ipynb", "GPU memory")
    write_run(tmp_path, [_entry("a", "01_a.ipynb")], {})
    # as the runner leaves it: the library written while runbook 01 ran, one of its outputs
    runjson.record_attachment(tmp_path, "test", [tmp_path / str(shared_plotlyjs(tmp_path))])
    page = write_run_index(tmp_path)
    manifest = runjson.run_manifest(tmp_path) or {}
    assert page == tmp_path / INDEX_FILE and manifest[INDEX_FILE] == runjson.sha256_file(page)
    first = page.read_bytes()
    assert write_run_index(tmp_path) == page and not (tmp_path / "index-1.html").exists()  # nothing new
    # the next runbook is recorded: the page is rewritten, the one before set aside with its hash
    (tmp_path / "02_b.ipynb").write_text("{}")
    result = RunbookResult("b", str(tmp_path / "02_b.ipynb"), None, "ok", "t0", "t1", 1.0, {})
    runjson.record_run(tmp_path, result)
    write_run_index(tmp_path)
    manifest = runjson.run_manifest(tmp_path) or {}
    assert (tmp_path / "index-1.html").read_bytes() == first
    assert manifest["index-1.html"] == runjson.sha256_file(tmp_path / "index-1.html")
    assert manifest[INDEX_FILE] == runjson.sha256_file(page) and b"02_b.ipynb" in page.read_bytes()
    assert summarise_run(tmp_path, verify=True).tampered == []
    # nothing the next runbook would refuse as copied in
    runjson.record_running(tmp_path, "c", tmp_path / "03_c.ipynb", {}, "c1")


def test_an_edited_page_stays_flagged_after_the_next_rewrite(tmp_path: Path) -> None:
    write_run(tmp_path, [_entry("a", "01_a.ipynb")], {})
    page = write_run_index(tmp_path)
    page.write_text(page.read_text(encoding="utf-8").replace("Runbooks", "All approved"), encoding="utf-8")
    assert INDEX_FILE in summarise_run(tmp_path, verify=True).tampered
    (tmp_path / "02_b.ipynb").write_text("{}")
    runjson.record_run(tmp_path, RunbookResult("b", str(tmp_path / "02_b.ipynb"), None, "ok", "t0", "t1", 1.0, {}))
    write_run_index(tmp_path)
    # the edited page was set aside with the hash it was listed with: the edit is not laundered
    assert summarise_run(tmp_path, verify=True).tampered == ["index-1.html"]
    assert "All approved" in (tmp_path / "index-1.html").read_text(encoding="utf-8")


def test_an_edited_run_json_gets_no_page(tmp_path: Path) -> None:
    write_run(tmp_path, [_entry("a", "01_a.ipynb")], {})
    data = json.loads((tmp_path / "run.json").read_text())
    data["runbooks"][0]["status"] = "failed"
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="edited"):
        write_run_index(tmp_path)
    assert not (tmp_path / INDEX_FILE).exists()


# -- the report view -----------------------------------------------------------------------------
def _scrap(name: str, data: object) -> dict:
    payload = {"name": name, "data": data, "encoder": "json", "version": 1}
    return nbformat.v4.new_output("display_data", data={SCRAP_MIME: payload})


def _executed_notebook(path: Path) -> None:
    """A notebook as the runner leaves it: documented parameters, a summary repeating its stage
    table above the stage section, a figure, the headline shown and glued last."""
    headline = Headline("demo", "pass", {"requests": 12, "note": HOSTILE})
    stage_table = "<table><thead><tr><th>stage</th></tr></thead><tbody><tr><td>ramp</td></tr></tbody></table>"
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"parameters": {"endpoint": HOSTILE, "requests": 12}}
    nb.cells.append(
        nbformat.v4.new_markdown_cell(
            "# 09 · Demo runbook\n\nSends a few requests.\n\n**Parameters**\n\n"
            "| name | default | meaning |\n|---|---|---|\n| `requests` | `12` | how many to send |"
        )
    )
    params = nbformat.v4.new_code_cell("requests = 12")
    params.metadata["tags"] = ["parameters"]

    def shown(html: str) -> dict:
        return nbformat.v4.new_output("execute_result", data={"text/html": html, "text/plain": "x"})

    bundle = figure_bundle(go.Figure(go.Bar(x=[1], y=[2])))
    nb.cells += [
        params,
        nbformat.v4.new_code_cell("result", outputs=[shown(f"<div>summary: pass</div>{stage_table}")]),
        nbformat.v4.new_markdown_cell("## Stages"),
        nbformat.v4.new_code_cell("result.stage_table()", outputs=[shown(stage_table)]),
        nbformat.v4.new_code_cell("result.figure()", outputs=[nbformat.v4.new_output("display_data", data=bundle)]),
        nbformat.v4.new_code_cell(
            "glue_result(result)\nresult.headline()",
            outputs=[_scrap("headline", headline.to_dict()), shown(headline._repr_html_())],
        ),
    ]
    nbformat.write(nb, str(path))


def test_the_report_view_leads_with_the_verdict_and_shows_each_table_once(tmp_path: Path) -> None:
    notebook = tmp_path / "09_demo.ipynb"
    _executed_notebook(notebook)
    page = (render_report_view(notebook) or Path()).read_text(encoding="utf-8")
    assert_inert(page)
    lead, about, stages = page.index("demo: pass"), page.index("<details>"), page.index('id="Stages"')
    assert page.index("09 · Demo runbook") < lead < about < stages
    # the documentation and the values used are folded, the values escaped
    folded = page[about : page.index("</details>")]
    assert "how many to send" in folded and "Sends a few requests." in folded and ESCAPED in folded
    assert "how many to send" not in page[page.index("</details>") :]
    # every table once: the headline's at the top only, the stage table in its own section only
    tables = top_level_tables(page)
    assert len(tables) == len(set(tables))
    assert page.count("<td>ramp</td>") == 1 and page.index("<td>ramp</td>") > stages
    assert page.count("demo: pass") == 1 and "summary: pass" in page
    # the figure is drawn by the run directory's one plotly.js, beside the page
    assert "vr-figure-plot" in page and f'src="{plotlyjs_name()}"' in page
    assert (tmp_path / str(plotlyjs_name())).is_file() and len(page) < 1_000_000


def test_a_report_view_without_a_verdict_says_why_first(tmp_path: Path) -> None:
    notebook = tmp_path / "09_demo.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# 09 · Demo"))
    error = nbformat.v4.new_output("error", ename="RuntimeError", evalue=f"exploded {HOSTILE}", traceback=[])
    nb.cells.append(nbformat.v4.new_code_cell("run()", outputs=[error]))
    nbformat.write(nb, str(notebook))
    page = (render_report_view(notebook) or Path()).read_text(encoding="utf-8")
    assert page.index("This runbook failed") < page.index("No verdict")
    assert f"RuntimeError: exploded {ESCAPED}" in page and "<img src=x" not in page


def test_a_notebook_output_carries_the_figure_once_and_no_library() -> None:
    bundle = figure_bundle(go.Figure(go.Scatter(x=list(range(500)), y=list(range(500)))))
    assert set(bundle) == {PLOTLY_MIME, "text/html", "text/plain"}
    size = len(json.dumps(bundle))
    assert size < 50_000 and "Plotly.newPlot" not in json.dumps(bundle)
    assert json.dumps(bundle).count("499") == 2  # x and y, once each: the data is not repeated in HTML
