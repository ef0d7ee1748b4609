"""Hardening round 3, done-when: a suite run fed with hostile server text, every HTML it wrote
opened in chromium with the network blocked — no dialog, no request.

The endpoint is a TEST DOUBLE (tests/hostile_server.py): a real vLLM cannot be made to put markup
in its error messages or carriage returns in /version. Runbook 01/02 read the r575 sample
incident; 03, 04 (retention check on) and 05 talk to the hostile endpoint; 06 writes the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browser_fixtures import offline_page
from conftest import R575
from hostile_server import HostileServer
from vllm_runbooks.execution.suite import run_suite

pytestmark = pytest.mark.slow

#: Elements and handlers that would exist only if server text had been parsed as markup.
ACTIVE = 'img[onerror], svg[onload], iframe, a[href^="javascript"]'


@pytest.fixture(scope="module")
def hostile_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    server = HostileServer().start()
    try:
        params = {
            "shared": {"source": str(R575), "endpoint": server.base_url, "request_timeout_s": 5.0},
            "canary_validation": {"tool_calls": 2, "step_timeout_s": 30.0},
            "prefix_cache_check": {
                "requests": 3,
                "shared_prompt_tokens": 64,
                "retention_check": True,
                "max_requests": 10,
                "max_seconds": 30,
            },
            "load_check": {
                "max_requests": 30,
                "max_seconds": 30.0,
                "stage_seconds": 3.0,
                "max_concurrency": 2,
                "level_requests": 4,
                "level_seconds": 3.0,
                "same_prefix_requests": 2,
                "image_tools_requests": 1,
            },
            "change_record": {"today": "2026-12-01"},
        }
        result = run_suite(params, tmp_path_factory.mktemp("hostile") / "run", cell_timeout_s=300)
    finally:
        server.close()
    return Path(result.run_dir)


def test_every_report_of_a_hostile_run_is_inert_in_chromium(hostile_suite: Path, browser: Any) -> None:
    pages = sorted(hostile_suite.rglob("*.html"))
    names = {p.name for p in pages}
    for expected in (
        "03_canary_validation.html",
        "04_prefix_cache_check.html",
        "04_prefix_cache_check.report.html",
        "05_load_check.html",
        "02_compatibility_decision.html",
        "change_record.html",
    ):
        assert expected in names, sorted(names)
    shown_as_text = 0
    for page_file in pages:
        with offline_page(browser) as (page, log):
            dialogs: list[str] = []
            page.on("dialog", lambda d, seen=dialogs: (seen.append(d.message), d.dismiss()))
            page.goto(page_file.as_uri(), wait_until="load")
            page.wait_for_load_state("networkidle")
            text = page.inner_text("body")
            assert dialogs == [], f"{page_file.name} ran script from the endpoint: {dialogs}"
            assert log.blocked == [], f"{page_file.name} tried to reach the network: {log.blocked}"
            # no element or handler built from the text (plotly's own script carries it as JSON data)
            assert page.evaluate(f"() => document.querySelectorAll({ACTIVE!r}).length") == 0
        shown_as_text += "onerror=alert(1)" in text
    # not vacuous: the hostile text reached the reports, and they show it as the characters it was
    assert shown_as_text >= 3, shown_as_text
    record = (hostile_suite / "change_record.md").read_text(encoding="utf-8")
    assert "\r" not in record and not any(line.startswith("## Verdict") for line in record.splitlines())
