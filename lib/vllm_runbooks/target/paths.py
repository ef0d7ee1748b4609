"""Where the embedded target keeps its model cache and per-server state.

Why one resolver: the CLI, the pytest fixtures and ``make demo`` must agree on the cache, whatever
the working directory (a notebook runs from ``runbooks/``). Order: ``$VLLM_RUNBOOKS_CACHE``, then
``<repo>/.cache/vllm-runbooks`` for a source checkout, then ``~/.cache/vllm-runbooks``.
"""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path | None:
    """The checkout this package runs from (editable install), or None for an installed wheel."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "lib" / "vllm_runbooks").is_dir():
            return parent
    return None


def cache_root() -> Path:
    """The cache folder (``VLLM_RUNBOOKS_CACHE``, else the user cache dir): models survive venv rebuilds."""
    env = os.environ.get("VLLM_RUNBOOKS_CACHE")
    if env:
        return Path(env).expanduser()
    root = repo_root()
    if root is not None:
        return root / ".cache" / "vllm-runbooks"
    return Path.home() / ".cache" / "vllm-runbooks"


def state_root() -> Path:
    """Default parent of per-target state directories (pid, port, args, log)."""
    return cache_root() / "target"
