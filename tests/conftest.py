"""Shared pytest set-up: the real-target fixtures live in target_fixtures (a plugin module)."""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

INCIDENTS = REPO_ROOT / "examples" / "incidents"
R575 = INCIDENTS / "k3-cu130-on-r575"
R580 = INCIDENTS / "k3-after-r580-upgrade"
#: Fake secrets planted in the constructed r575 incident (see its README): none may reach a run.
R575_PLANTED = (
    "hf_kQ7pLm2XvR9tYw4ZsB8nC3dF6gH1jK5aE0uI",
    "sk-k3canary-9f8e7d6c5b4a3f2e1d0c",
    "Pr0xyPa55word",
    "AKIAJK3CANARY7EXAMPL",
    "wJalrXUtnFEMI",
)

# run.json is HMAC-signed with a machine key (execution/signing.py); the tests never touch the
# user's own key: one key for the session, in a private folder, inherited by every subprocess.
if not os.environ.get("VLLM_RUNBOOKS_SIGNING_KEY") and not os.environ.get("VLLM_RUNBOOKS_SIGNING_KEY_FILE"):
    os.environ["VLLM_RUNBOOKS_SIGNING_KEY_FILE"] = str(Path(tempfile.mkdtemp(prefix="vr-key-")) / "signing.key")

pytest_plugins = [p for p in ("target_fixtures", "browser_fixtures") if (TESTS_DIR / f"{p}.py").exists()]


#: the fixtures of target_fixtures.py that start (or share) a real vLLM server
TARGET_FIXTURES = frozenset(
    {
        "target_factory",
        "target",
        "target_client",
        "target_no_tool_parser",
        "target_no_prefix_caching",
        "target_small_kv",
    }
)
_DEF_PARAMS = re.compile(r"^\s*def \w+\(([^)]*)\)", re.M)
_GETFIXTUREVALUE = re.compile(r"getfixturevalue\(\s*[\"'](\w+)[\"']")


@functools.cache
def uses_real_target(module: str) -> bool:
    """Whether a test module asks for a real-server fixture (in a test's or a fixture's parameters)."""
    try:
        text = (REPO_ROOT / module).read_text(encoding="utf-8")
    except OSError:
        return False
    for params in _DEF_PARAMS.findall(text):
        names = {p.split(":")[0].split("=")[0].strip() for p in params.split(",")}
        if names & TARGET_FIXTURES:
            return True
    return any(name in TARGET_FIXTURES for name in _GETFIXTUREVALUE.findall(text))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 (xdist hook)
    """``make test`` runs two pytest-xdist workers (``-n 2 --dist loadgroup``). Our groups: every
    module that uses the real vLLM target runs on one worker, so each server configuration starts
    once per session; every other module stays whole on one worker, so its module fixtures (the Ray
    cluster, a browser) are built once. (xdist's own loadgroup marks do not group under pytest 9.2,
    which no longer reads ``item._nodeid``; this scheduler groups by module path instead.)"""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RealTargetTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return "real-vllm-target" if uses_real_target(module) else module

    return RealTargetTestsTogether(config, log)
