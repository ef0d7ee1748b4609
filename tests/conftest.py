"""Shared pytest set-up: the real-target fixtures live in target_fixtures (a plugin module)."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

pytest_plugins = [p for p in ("target_fixtures",) if (TESTS_DIR / f"{p}.py").exists()]
