"""The incident console in a real browser, as the on-call engineer uses it.

JupyterLab is started on a free loopback port with a token; Debian's chromium (Playwright) opens
the console, fills its widgets, runs 01 and 02 on the r575 sample incident and 03 against the
embedded vLLM target, cancels 04 against an endpoint that never answers (fault double), and
reopens the incident. Assertions are on what the page shows: verdict text, guidance, plotly
charts drawn as SVG, links to the HTML copies. Screenshots of each step go to test-artifacts/.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser_fixtures import screenshot
from conftest import R575, REPO_ROOT
from fault_server import FaultServer
from vllm_runbooks.workspace import init_workspace

pytestmark = [pytest.mark.slow]

LAB_START_TIMEOUT_S = 180
STEP_TIMEOUT_MS = int(os.environ.get("VR_STEP_TIMEOUT_MS", "300000"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """JupyterLab on a workspace written by ``vllm-runbooks init`` (as ``make lab`` does), isolated
    from the user's Jupyter config; no runs directory is set: the workspace's own is used."""
    root = init_workspace(tmp_path_factory.mktemp("lab") / "workspace")
    home = tmp_path_factory.mktemp("jupyter-home")
    (home / "config").mkdir()
    (home / "config" / "jupyter_server_config.json").write_text(
        json.dumps({"LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}})
    )
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port, token = _free_port(), os.urandom(16).hex()
    env = {
        **{k: v for k, v in os.environ.items() if k != "VLLM_RUNBOOKS_RUNS"},  # the workspace decides
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")]),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
    }
    log = (home / "lab.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.allow_root=True", "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + LAB_START_TIMEOUT_S
    try:
        while True:  # readiness poll with a deadline: the server answers or the test fails
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited {proc.returncode}: {(home / 'lab.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab not up in {LAB_START_TIMEOUT_S} s: {(home / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield {"base": base, "token": token, "root": root, "log": home / "lab.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab_page(browser: Any, lab: dict[str, Any]) -> Iterator[tuple[Any, list[str]]]:
    """A page on the lab; every request to anywhere but the lab is blocked and counted."""
    blocked: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 2400})  # tall: JupyterLab scrolls inside

    def route(r: Any) -> None:
        if r.request.url.startswith(lab["base"]) or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page, blocked
    finally:
        context.close()


def _open_console(page: Any, lab: dict[str, Any]) -> None:
    page.goto(f"{lab['base']}/lab/tree/incident_console.ipynb?token={lab['token']}")
    page.locator(".jp-Notebook").first.wait_for()
    page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
    # the app is exposed (--LabApp.expose_app_in_browser): run the cells by command, not by menu clicks
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.commands.isEnabled('notebook:run-all-cells')", timeout=60_000
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator(".vr-console").wait_for(timeout=120_000)


def _step(page: Any, runbook: str) -> Any:
    return page.locator(f".vr-step-{runbook}")


def _run_and_wait(page: Any, runbook: str, verdict: str) -> Any:
    step = _step(page, runbook)
    step.locator("button.vr-run").click()
    step.locator(".vr-state-running").wait_for(timeout=30_000)
    step.locator(".vr-verdict").filter(has_text=f"verdict: {verdict}").wait_for(timeout=STEP_TIMEOUT_MS)
    return step


def _check_charts_and_link(page: Any, step: Any, lab: dict[str, Any], html_name: str) -> None:
    step.locator(".vr-charts svg.main-svg").first.wait_for(timeout=60_000)
    link = step.locator("a.vr-link-html")
    href = link.get_attribute("href")
    assert href and html_name in href, href
    url = href if href.startswith("http") else f"{lab['base']}{href}" if href.startswith("/") else None
    if url is not None:  # JupyterLab rewrote the relative link to its files URL: it must serve the copy
        resp = page.request.get(url, params={"token": lab["token"]})
        assert resp.status == 200 and "<html" in resp.text()[:2000].lower()


@pytest.mark.server
def test_console_walks_the_incident_in_a_browser(lab: dict[str, Any], lab_page: Any, target: Any) -> None:
    page, blocked = lab_page
    _open_console(page, lab)
    assert "locked" in _step(page, "compatibility_decision").locator(".vr-state").inner_text()
    screenshot(page.locator(".vr-console"), "console-0-opened")

    # 01 on the r575 sample incident
    page.locator(".vr-param-source input").fill(str(R575))
    step = _run_and_wait(page, "evidence_capture", "complete")
    assert "finished" in step.locator(".vr-progress").inner_text()
    assert "driver" in step.locator(".vr-result").inner_text()
    screenshot(_step(page, "evidence_capture"), "console-1-evidence")

    # 02 with an org constraint toggled
    step = _step(page, "compatibility_decision")
    step.locator(".vr-param-maintenance_window_available input").check()
    step = _run_and_wait(page, "compatibility_decision", "driver_too_old")
    assert "Do not touch flags" in step.locator(".vr-guidance").inner_text()
    assert "upgrade_driver" in step.locator(".vr-result").inner_text()
    _check_charts_and_link(page, step, lab, "02_compatibility_decision.html")
    screenshot(_step(page, "compatibility_decision"), "console-2-decision")

    # 03 against the embedded vLLM target
    step = _step(page, "canary_validation")
    step.locator(".vr-param-endpoint input").fill(target.base_url)
    step.locator(".vr-param-model input").fill(target.model)
    step.locator(".vr-param-tool_calls input").fill("2")
    step = _run_and_wait(page, "canary_validation", "incomplete")
    _check_charts_and_link(page, step, lab, "03_canary_validation.html")
    screenshot(_step(page, "canary_validation"), "console-3-canary")

    # 04 against an endpoint that never answers: the live progress line, then Cancel
    fault = FaultServer().start()
    try:
        step = _step(page, "prefix_cache_check")
        step.locator(".vr-param-endpoint input").fill(fault.base_url("hang"))
        step.locator("button.vr-run").click()
        step.locator(".vr-progress-line").filter(has_text=" s · ").wait_for(timeout=120_000)
        screenshot(_step(page, "prefix_cache_check"), "console-4a-running")
        step.locator("button.vr-cancel").click()
        step.locator(".vr-state-cancelled").wait_for(timeout=60_000)
    finally:
        fault.close()
    screenshot(_step(page, "prefix_cache_check"), "console-4b-cancelled")
    incident = Path(page.locator("code.vr-incident-dir").inner_text().strip())
    assert incident.parent == lab["root"] / "runs", "a console opened in a workspace keeps its runs there"
    entries = json.loads((incident / "run.json").read_text())["runbooks"]
    assert [(e["name"], e["status"]) for e in entries] == [
        ("evidence_capture", "ok"),
        ("compatibility_decision", "ok"),
        ("canary_validation", "ok"),
        ("prefix_cache_check", "cancelled"),
    ]
    assert list((incident / "attempts").glob("04_prefix_cache_check-cancelled-*.ipynb"))

    # reopen the incident in a fresh console: it shows where it stands
    _open_console(page, lab)
    page.locator(".vr-open-path input").fill(str(incident))
    page.locator("button.vr-open").click()
    _step(page, "canary_validation").locator(".vr-state-done").wait_for(timeout=30_000)
    assert "cancelled" in _step(page, "prefix_cache_check").locator(".vr-state").inner_text()
    assert not _step(page, "prefix_cache_check").locator("button.vr-run").is_disabled()
    assert _step(page, "canary_validation").locator("button.vr-run").is_disabled()
    assert _step(page, "compatibility_decision").locator(".vr-param-maintenance_window_available input").is_checked()
    screenshot(_step(page, "compatibility_decision"), "console-5-reopened-02")
    screenshot(_step(page, "prefix_cache_check"), "console-5-reopened-04")
    assert blocked == [], f"the lab page tried to reach the network: {blocked}"
