"""Shared pytest set-up: the real-target fixtures live in target_fixtures (a plugin module)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

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
