"""Runbook templates: committed clean, parameters documented, and runnable with their defaults.

An on-call engineer opens a runbook in JupyterLab and runs it top to bottom without passing
anything; that must complete (recording what it could not establish), and write only into a new
run directory of its own.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import papermill as pm
import pytest

from conftest import REPO_ROOT
from vllm_runbooks.runner import available_runbooks
from vllm_runbooks.scraps import read_scraps

TEMPLATES = list(available_runbooks().items())


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _parameter_names(path: Path) -> list[str]:
    cell = next(c for c in _cells(path) if "parameters" in c.get("metadata", {}).get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    return [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]


def test_the_four_runbooks_are_there() -> None:
    assert [name for name, _ in TEMPLATES] == [
        "evidence_capture",
        "compatibility_decision",
        "canary_validation",
        "prefix_cache_check",
        "load_check",
    ]


@pytest.mark.parametrize(("name", "path"), TEMPLATES)
def test_committed_clean_with_documented_parameters(name: str, path: Path) -> None:
    cells = _cells(path)
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "outputs committed"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    first_markdown = "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])
    names = _parameter_names(path)
    assert "run_dir" in names
    undocumented = [n for n in names if f"`{n}`" not in first_markdown]
    assert not undocumented, f"{name}: parameters not documented in the first markdown cell: {undocumented}"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path"), TEMPLATES)
def test_runs_top_to_bottom_with_defaults(name: str, path: Path, tmp_path: Path, monkeypatch) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("VLLM_RUNBOOKS_RUNS", str(runs))
    # Nothing is expected to listen on the default endpoint here: those runbooks must still complete.
    out = tmp_path / path.name
    pm.execute_notebook(str(path), str(out), progress_bar=False, cwd=str(REPO_ROOT), execution_timeout=600)
    headline = read_scraps(out)["headline"]
    assert headline["runbook"] == name and headline["verdict"]
    created = [p for p in runs.iterdir() if p.is_dir()]
    assert len(created) == 1 and "-interactive-" in created[0].name
