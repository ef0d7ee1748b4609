"""Where the embedded target keeps its model cache and per-server state.

Why one resolver: the CLI, the pytest fixtures and ``make demo`` must agree on the cache, whatever
the working directory. Order: ``$VLLM_RUNBOOKS_CACHE``, then ``<repo>/.cache/vllm-runbooks`` for a
source checkout, then the user's cache directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..resources import checkout_root


def cache_root() -> Path:
    """The cache folder: ``$VLLM_RUNBOOKS_CACHE``; a checkout's ``.cache/``; else the user's cache dir.

    Never inside an installed package (site-packages may be read-only and is shared); models
    survive venv rebuilds. The user's cache dir is ``$XDG_CACHE_HOME`` or ``~/.cache``.
    """
    env = os.environ.get("VLLM_RUNBOOKS_CACHE")
    if env:
        return Path(env).expanduser()
    root = checkout_root()
    if root is not None:
        return root / ".cache" / "vllm-runbooks"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "vllm-runbooks"


def state_root() -> Path:
    """Default parent of per-target state directories (pid, port, args, log)."""
    return cache_root() / "target"
