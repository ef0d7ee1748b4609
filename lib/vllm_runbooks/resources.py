"""Where the files this package ships lie: runbook templates, companion notebooks, examples.

Why one resolver: an installed wheel carries them inside the package (``vllm_runbooks/shipped/``,
mapped there from the repository's top-level ``runbooks/``, ``notebooks/`` and ``examples/`` by
``setup.py``), while a source checkout keeps its one copy at the top level. Everything that needs
a template, the incident console or a sample incident asks here, through ``importlib.resources``
first, so the same code works from a wheel, an sdist build and an editable checkout.

Nothing is ever written here: runs and caches live where :func:`default_runs_dir` and
``target.paths.cache_root`` say.
"""

from __future__ import annotations

import importlib.resources
import os
import stat
from pathlib import Path

#: The shipped parts: one folder name, inside ``vllm_runbooks/shipped/`` and at a checkout's top.
SHIPPED_PARTS = ("runbooks", "notebooks", "examples")
#: A folder holding this file is a workspace (``vllm-runbooks init``): its runs land beside it.
WORKSPACE_MARKER = ".vllm-runbooks-workspace"
#: Environment variables a user sets to move the templates or the runs.
TEMPLATES_ENV = "VLLM_RUNBOOKS_TEMPLATES"
RUNS_ENV = "VLLM_RUNBOOKS_RUNS"


class ResourceMissing(FileNotFoundError):
    """A shipped part is absent: a broken install, or a checkout with the folder deleted."""


def checkout_root() -> Path | None:
    """The source checkout this package runs from (editable install), or None for an installed wheel."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "lib" / "vllm_runbooks").is_dir():
            return parent
    return None


def shipped_dir(part: str) -> Path:
    """The folder of a shipped part (``runbooks``, ``notebooks``, ``examples``) on disk.

    The package's own copy when installed; the checkout's top-level folder otherwise. Raises
    :class:`ResourceMissing` naming both places looked at.
    """
    if part not in SHIPPED_PARTS:
        raise KeyError(f"no shipped part {part!r}; parts: {', '.join(SHIPPED_PARTS)}")
    packaged = importlib.resources.files("vllm_runbooks").joinpath("shipped", part)
    if packaged.is_dir():
        return Path(str(packaged))
    root = checkout_root()
    if root is not None and (root / part).is_dir():
        return root / part
    raise ResourceMissing(
        f"the package ships no {part}/ (looked in {packaged} and in a source checkout): reinstall vllm-runbooks"
    )


def templates_dir() -> Path:
    """The runbook templates in use: ``$VLLM_RUNBOOKS_TEMPLATES`` when set, else the shipped ones."""
    override = os.environ.get(TEMPLATES_ENV)
    return Path(override).expanduser() if override else shipped_dir("runbooks")


def workspace_root(start: Path | None = None) -> Path | None:
    """The workspace (a folder with :data:`WORKSPACE_MARKER`) holding ``start`` (default: cwd), if any.

    A notebook opened from ``WORKSPACE/runbooks/`` runs with that folder as its working
    directory; its runs still belong in ``WORKSPACE/runs``. A marker another user owns (or a
    link) is ignored: a file planted in a shared ``/tmp`` must not redirect everyone's evidence
    below it into a folder of its choosing.
    """
    here = (start or Path.cwd()).resolve()
    uid = os.getuid() if hasattr(os, "getuid") else None
    for folder in (here, *here.parents):
        marker = folder / WORKSPACE_MARKER
        try:
            info = marker.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and (uid is None or info.st_uid == uid):
            return folder
    return None


def default_runs_dir() -> Path:
    """Where new run directories go: ``$VLLM_RUNBOOKS_RUNS``, else the workspace's or cwd's ``runs/``.

    Read at each call (not at import), so ``--runs-dir`` and a notebook kernel started later agree.
    """
    override = os.environ.get(RUNS_ENV)
    if override:
        return Path(override).expanduser()
    return (workspace_root() or Path.cwd()) / "runs"


def resolve_shipped_path(path: str | Path) -> Path:
    """``path`` as given when it exists; a relative ``examples/…`` path missing here, from the package.

    Why: the documented sample (``examples/incidents/k3-cu130-on-r575``) and runbook 07's default
    bundle folders must mean the same from a checkout, a workspace and ``/tmp`` with a wheel.
    Only the ``examples/`` prefix is looked up; any other path is returned unchanged.
    """
    p = Path(path)
    if p.exists() or p.is_absolute() or not p.parts or p.parts[0] != "examples" or ".." in p.parts:
        return p
    try:
        shipped = shipped_dir("examples").parent / p
    except ResourceMissing:
        return p
    return shipped if shipped.exists() else p
