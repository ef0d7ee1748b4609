"""Workspaces and shipped files: what a user gets from ``init`` and from a relative ``examples/`` path.

Why: these decide where evidence lands and which sample a parameter names; a wrong answer means
runs written into the package, a shell left standing in a deleted folder, or a bundle not found.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from vllm_runbooks import resources
from vllm_runbooks.cli import main
from vllm_runbooks.execution.parameters import load_param_file
from vllm_runbooks.workspace import WORKSPACE_MARKER, WorkspaceError, init_workspace


def test_init_writes_the_workspace_and_its_runs_stay_in_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(resources.RUNS_ENV, raising=False)
    root = init_workspace(tmp_path / "new" / "ws")
    names = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert {
        "README.md",
        "incident_console.ipynb",
        "run_comparison.ipynb",
        "params.example.yaml",
        WORKSPACE_MARKER,
    } <= names
    assert sorted(n for n in names if n.startswith("runbooks/")) == sorted(
        f"runbooks/{p.name}" for p in (REPO_ROOT / "runbooks").glob("[0-9][0-9]_*.ipynb")
    )
    assert json.loads((root / WORKSPACE_MARKER).read_text())["schema"] == "workspace"
    monkeypatch.chdir(root / "runbooks")  # a runbook opened in JupyterLab runs here
    assert resources.default_runs_dir() == root / "runs"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no staging folder left behind"


def test_init_fills_an_existing_empty_folder_in_place(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir(mode=0o750)
    inode, mode = folder.stat().st_ino, folder.stat().st_mode
    init_workspace(folder)
    assert folder.stat().st_ino == inode and folder.stat().st_mode == mode, "the folder was replaced"
    assert (folder / "incident_console.ipynb").is_file()


def test_init_refuses_a_folder_that_holds_anything_and_leaves_it_untouched(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "busy"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(WorkspaceError, match="not empty"):
        init_workspace(folder)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert main(["init", str(folder)]) == 2 and "not empty" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError, match="not a folder"):
        init_workspace(tmp_path / "file")


def test_relative_examples_paths_mean_the_shipped_copy_from_anywhere(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    sample = resources.resolve_shipped_path("examples/incidents/k3-cu130-on-r575")
    assert sample.is_absolute() and (sample / "nvidia-smi-q.xml").is_file()
    assert load_param_file("examples/suite.yaml")["shared"]["source"].startswith("examples/incidents/")
    assert resources.resolve_shipped_path("examples/../../etc") == Path("examples/../../etc")  # no escape
    assert resources.resolve_shipped_path("elsewhere/x") == Path("elsewhere/x")
    own = tmp_path / "examples" / "incidents" / "k3-cu130-on-r575"
    own.mkdir(parents=True)
    assert resources.resolve_shipped_path("examples/incidents/k3-cu130-on-r575") == Path(
        "examples/incidents/k3-cu130-on-r575"
    ), "a folder of that name here wins"


def test_the_checkout_is_a_workspace_and_runs_env_wins(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(resources.RUNS_ENV, raising=False)
    monkeypatch.chdir(REPO_ROOT / "runbooks")
    assert resources.default_runs_dir() == REPO_ROOT / "runs"
    monkeypatch.setenv(resources.RUNS_ENV, str(tmp_path / "elsewhere"))
    assert resources.default_runs_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv(resources.RUNS_ENV)
    monkeypatch.chdir(tmp_path)
    assert resources.default_runs_dir() == tmp_path / "runs"


def test_install_hint_names_what_exists(monkeypatch) -> None:
    from vllm_runbooks.target import install

    assert install.install_hint() == install.CHECKOUT_HINT  # this checkout has scripts/
    monkeypatch.setattr(resources, "checkout_root", lambda: None)
    assert install.install_hint() == install.WHEEL_HINT and "scripts/" not in install.WHEEL_HINT


def test_a_marker_that_is_not_a_file_of_this_user_is_not_a_workspace(tmp_path: Path, monkeypatch) -> None:
    import os

    monkeypatch.delenv(resources.RUNS_ENV, raising=False)
    shared = tmp_path / "shared"
    (shared / "someone").mkdir(parents=True)
    (tmp_path / "elsewhere").write_text("{}")
    (shared / WORKSPACE_MARKER).symlink_to(tmp_path / "elsewhere")  # a link is not a marker
    monkeypatch.chdir(shared / "someone")
    assert resources.default_runs_dir() == shared / "someone" / "runs"
    (shared / WORKSPACE_MARKER).unlink()
    (shared / WORKSPACE_MARKER).write_text("{}")
    assert resources.default_runs_dir() == shared / "runs"
    monkeypatch.setattr(os, "getuid", lambda: os.stat(shared / WORKSPACE_MARKER).st_uid + 1)  # planted by another user
    assert resources.default_runs_dir() == shared / "someone" / "runs"
