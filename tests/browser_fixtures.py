"""Pytest plugin: Debian's chromium driven by Playwright for Python, for tests that look at pages.

Why the system chromium: Playwright's own browser download cannot work on a machine that reaches
only package registries, so ``scripts/install_browser.sh`` (run by ``make test``) installs Debian's
``chromium`` and Playwright is pointed at it. Where neither can be had the browser tests skip with
the reason; under CI (``CI=true``), where the install step can run, a missing browser is a failure.

``offline_page(browser)`` opens a page whose every non-``file:`` request is blocked and counted,
and whose console errors and uncaught exceptions are collected: the page must show what it shows
from the file alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("VLLM_RUNBOOKS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: screenshots and other things a person should look at after a browser test
ARTIFACTS = Path(os.environ.get("VLLM_RUNBOOKS_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts"))


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"Playwright for Python is not installed ({exc}); `make test` installs it with the dev extra"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return (
            f"no chromium at {CHROMIUM}: `make test` installs Debian's chromium with scripts/install_browser.sh "
            "(needs root and apt); or set VLLM_RUNBOOKS_CHROMIUM to a chromium binary"
        )
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium per test module (starting one costs about a second)."""
    reason = browser_unavailable()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@dataclasses.dataclass
class PageLog:
    """What a page did besides rendering: requests that tried to leave, console errors."""

    blocked: list[str] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def offline_page(browser: Any, allow_prefix: str = "file:") -> Iterator[tuple[Any, PageLog]]:
    """A page in a fresh context where only URLs starting with ``allow_prefix`` load."""
    log = PageLog()
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(r: Any) -> None:
        if r.request.url.startswith(allow_prefix) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            log.blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(f"uncaught: {e}"))
    try:
        yield page, log
    finally:
        context.close()


def screenshot(target: Any, name: str) -> Path:
    """Save a screenshot of a page (full page) or of one element under test-artifacts/ (ignored by
    git) for a person to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    if hasattr(target, "goto"):
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    return path
