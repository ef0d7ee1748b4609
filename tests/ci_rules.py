"""What a test does when something it needs is missing: skip here, fail under CI.

Why: ``make test`` installs every declared dependency (the fleet extra included) and CI checks out
``../shared`` beside the project, so in CI a missing one is a broken install, not a reason to
skip. On a developer's machine the same test skips with the reason. Hardware and OS limits that
no install step can change (a GPU, running as root) stay plain skips, documented where they are.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """True under CI (``CI=true``), where everything ``make test`` installs must be present."""
    return os.environ.get("CI") == "true"


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason`` locally; fail with it under CI."""
    if in_ci():
        pytest.fail(f"must run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def need_module(name: str, why: str = "") -> ModuleType:
    """The module, or ``unavailable`` naming the install that provides it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unavailable(f"{name} not installed ({why or 'a declared dependency: make test installs it'}): {exc}")


def need_path(path: Path, what: str) -> Path:
    """The path, or ``unavailable`` saying what it is (``../shared`` material, a corpus)."""
    if not path.exists():
        unavailable(f"{what} not present at {path}")
    return path
