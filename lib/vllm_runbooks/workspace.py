"""A workspace for JupyterLab: the folder an on-call engineer opens during an incident.

Why a workspace and not the package folder: an installed package is shared and may be read-only,
and a run written inside it would vanish on the next upgrade. ``vllm-runbooks init DIR`` writes
the runbooks, the incident console, an example parameters file and a README into a new folder,
with a marker file so that every notebook opened below it (``DIR/runbooks/01_….ipynb`` runs
with ``DIR/runbooks`` as its working directory) puts its runs in ``DIR/runs``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

from . import __version__
from .execution.templates import available_runbooks
from .records import utc_now
from .resources import WORKSPACE_MARKER, shipped_dir

#: Companion notebooks copied to the workspace's top level.
COMPANIONS = ("incident_console.ipynb", "run_comparison.ipynb")
EXAMPLE_PARAMS = "params.example.yaml"

README = """# vllm-runbooks workspace

Made by `vllm-runbooks init` (vllm-runbooks {version}, {created}). Open it with
`jupyter lab --notebook-dir=.` from this folder.

- `incident_console.ipynb`: walks an incident through runbooks 01 to 06 with widgets, one run
  directory per incident.
- `run_comparison.ipynb`: what changed between two runs.
- `runbooks/`: copies of the runbook templates, to read and step through by hand. The console
  and `vllm-runbooks run` execute the installed templates (their sha256 is in each run.json);
  to execute these copies instead, set `VLLM_RUNBOOKS_TEMPLATES=$PWD/runbooks`.
- `{params}`: a parameters file for `vllm-runbooks suite -f {params}`.
- `runs/`: every run lands here (from any notebook below this folder, and from the CLI run in
  this folder), never inside the installed package. `VLLM_RUNBOOKS_RUNS` moves it.

Sample incidents ship with the package: a parameter `examples/incidents/k3-cu130-on-r575` means
the shipped bundle wherever you run from (a folder of that name here would win).
"""


class WorkspaceError(ValueError):
    """The workspace cannot be written where asked (not empty, not a folder, not writable)."""


def init_workspace(dest: str | Path) -> Path:
    """Write a new workspace at ``dest`` (absent or empty) and return its path.

    A new folder is built in a hidden sibling and renamed into place, so an interrupted ``init``
    leaves no half workspace behind. An existing empty folder (``mkdir ws && cd ws && init .``) is
    filled in place, keeping its owner, mode and the shells standing in it; what was written is
    removed again on failure. A folder that already holds anything is refused untouched.
    """
    target = Path(dest).expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise WorkspaceError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        raise WorkspaceError(f"{target} is not empty: a workspace is only written into a new or empty folder")
    if target.is_dir():
        try:
            _fill(target)
        except BaseException as exc:
            for entry in target.iterdir():  # it was empty: everything in it now is ours
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise WorkspaceError(f"cannot write the workspace at {target}: {exc.strerror or exc}") from exc
            raise
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(target.parent / f".{target.name}.init-{secrets.token_hex(4)}")
        staging.mkdir()
    except OSError as exc:
        raise WorkspaceError(f"cannot create {target}: {exc.strerror or exc}") from exc
    try:
        _fill(staging)
        os.rename(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise WorkspaceError(f"cannot write the workspace at {target}: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _fill(folder: Path) -> None:
    runbooks, notebooks, examples = shipped_dir("runbooks"), shipped_dir("notebooks"), shipped_dir("examples")
    (folder / "runbooks").mkdir()
    (folder / "runs").mkdir()
    for template in available_runbooks(runbooks).values():
        shutil.copyfile(template, folder / "runbooks" / template.name)
    for name in COMPANIONS:
        shutil.copyfile(notebooks / name, folder / name)
    shutil.copyfile(examples / "suite.yaml", folder / EXAMPLE_PARAMS)
    created = utc_now()
    (folder / "README.md").write_text(
        README.format(version=__version__, created=created, params=EXAMPLE_PARAMS), encoding="utf-8"
    )
    marker = {"schema": "workspace", "schema_version": 1, "vllm_runbooks": __version__, "created_at": created}
    (folder / WORKSPACE_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
