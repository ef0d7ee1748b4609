"""Runbook templates: committed clean, parameters documented, and runnable with their defaults.

An on-call engineer opens a runbook in JupyterLab and runs it top to bottom without passing
anything; that must complete (recording what it could not establish), and write only into a new
run directory of its own.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
from pathlib import Path

import papermill as pm
import pytest

from conftest import REPO_ROOT
from vllm_runbooks import stage
from vllm_runbooks.execution.runjson import load_run
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.runs import load_result
from vllm_runbooks.execution.scraps import read_scraps
from vllm_runbooks.execution.templates import (
    available_runbooks,
    declared_parameters,
    documented_parameters,
    read_template,
)
from vllm_runbooks.stage import Headline, result_class

TEMPLATES = list(available_runbooks().items())
#: the skeleton a new runbook starts from: held to the same hygiene, never listed or run.
SKELETON = REPO_ROOT / "runbooks" / "_template.ipynb"


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _parameter_names(path: Path) -> list[str]:
    return [p.name for p in declared_parameters(path)]


#: (runbook, parameter) whose notebook default deliberately differs from its Config default, and why.
NOTEBOOK_DEFAULTS = {
    ("fleet_survey", "bundles"): "opened with no parameters, 07 surveys the shipped sample fleet; "
    "a library call must name its bundles (Config() alone is 'nothing to survey')",
}


def _config_class(runbook: str) -> type:
    """The runbook's ``Config``: ``<package>/stage.py`` of the package that registers its result."""
    package = stage.RESULT_MODULES[runbook].rsplit(".", 1)[0]
    return importlib.import_module(f"{package}.stage").Config


def _field_default(field: dataclasses.Field) -> object:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _documented_default(text: str) -> object:
    text = text.strip().strip("`")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # an unquoted string (`http://…`)


@pytest.mark.parametrize(("name", "path"), TEMPLATES)
def test_parameters_declared_once_cell_table_and_config_agree(name: str, path: Path) -> None:
    """The parameters cell, the first markdown cell's table and the stage's ``Config`` name the
    same parameters with the same defaults. ``run_dir`` is the runner's (every runbook takes it;
    a Config may or may not). A Config field a user cannot set would silently keep its default."""
    declared = {p.name: p for p in declared_parameters(path)}
    nb = read_template(path)
    table = documented_parameters(nb)
    assert list(table) == list(declared), f"{name}: the table and the parameters cell list differ"
    first = "".join(next(c for c in nb["cells"] if c["cell_type"] == "markdown")["source"])
    for row in first.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`") and cells[0].strip("`") in declared:
            param = declared[cells[0].strip("`")]
            assert _documented_default(cells[1]) == param.default, f"{name}.{param.name}: table says {cells[1]}"
    fields = {f.name: f for f in dataclasses.fields(_config_class(name))}
    assert set(fields) - {"run_dir"} == set(declared) - {"run_dir"}, (
        f"{name}: Config fields not parameters {sorted(set(fields) - set(declared))}; "
        f"parameters not in Config {sorted(set(declared) - set(fields) - {'run_dir'})}"
    )
    for pname, param in declared.items():
        default = _field_default(fields[pname]) if pname in fields else dataclasses.MISSING
        if default is dataclasses.MISSING or param.kind == "any" and param.default is None:
            continue  # required in Config (the notebook fills it) or None in the notebook
        if (name, pname) in NOTEBOOK_DEFAULTS:
            continue
        assert default == param.default, f"{name}.{pname}: notebook default {param.default!r}, Config {default!r}"


def test_a_drifted_runbook_fails_the_agreement_check(tmp_path: Path) -> None:
    """The check above is not vacuous: a parameter dropped from the table or a Config field the
    notebook does not set is caught."""
    name, path = TEMPLATES[2]
    nb = json.loads(path.read_text(encoding="utf-8"))
    md = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    md["source"] = [ln for ln in md["source"] if "`tool_calls`" not in ln]
    drifted = tmp_path / path.name
    drifted.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(AssertionError, match="table and the parameters cell"):
        test_parameters_declared_once_cell_table_and_config_agree(name, drifted)


def test_the_runbooks_are_there_in_procedure_order() -> None:
    names = [name for name, _ in TEMPLATES]
    assert names == [
        "evidence_capture",
        "compatibility_decision",
        "canary_validation",
        "prefix_cache_check",
        "load_check",
        "change_record",
        "fleet_survey",
        "validation_history",
    ]


@pytest.mark.parametrize(("name", "path"), [*TEMPLATES, ("_template", SKELETON)])
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
    assert headline["schema"] == "headline" and headline["verdict"] in result_class(name).VERDICTS
    created = [p for p in runs.iterdir() if p.is_dir()]
    assert len(created) == 1 and "-interactive-" in created[0].name


@pytest.mark.parametrize(("name", "path"), [*TEMPLATES, ("_template", SKELETON)])
def test_last_cell_glues_the_typed_headline_through_the_contract(name: str, path: Path) -> None:
    """A runbook ends with ``glue_result(result)``: the one helper that glues the typed headline."""
    last = [c for c in _cells(path) if c["cell_type"] == "code"][-1]
    calls = [
        node.func.id
        for node in ast.walk(ast.parse("".join(last["source"])))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    assert "glue_result" in calls, f"{name}: last cell does not call glue_result"
    if path != SKELETON:
        assert result_class(name).RUNBOOK == name  # and the result it glues is registered under its name


def test_the_skeleton_is_not_a_runbook() -> None:
    assert SKELETON.is_file() and SKELETON not in dict(TEMPLATES).values()


@pytest.mark.slow
def test_run_json_holds_every_typed_headline_and_each_result_reads_back(tmp_path: Path) -> None:
    """Every template, defaults, one run directory: run.json holds every typed headline, and
    ``runs.load_result`` rebuilds each runbook's result from what it saved (nothing listens on the
    default endpoint, so 03 and 04 conclude incomplete / inconclusive, still typed)."""
    names = [name for name, _ in TEMPLATES]
    params = {"compatibility_decision": {"today": "2026-11-29"}}
    results = [run_runbook(name, params.get(name, {}), tmp_path / "run") for name in names]
    assert [r.status for r in results] == ["ok"] * len(names), [r.error for r in results]
    recorded = {e["name"]: e["headline"] for e in load_run(tmp_path / "run")["runbooks"]}
    for name in names:
        head = Headline.coerce(recorded[name])
        assert recorded[name]["schema"] == "headline" and head is not None and head.runbook == name
        assert load_result(tmp_path / "run", name).headline().to_dict() == recorded[name]


def test_one_reader_every_caller_sees_annotated_and_chained_parameters(tmp_path: Path) -> None:
    """``x: int = 3`` and ``a = b = 1`` declare for the runner, the suite's shared routing and the
    console alike (the suite's own parser used to drop the annotated one)."""
    from notebook_factory import make_template
    from vllm_runbooks.execution.parameters import check_parameters
    from vllm_runbooks.execution.suite import plan_parameters
    from vllm_runbooks.execution.templates import parameter_defaults

    params = "run_dir = None\nendpoint_timeout_s: float = 3.0\nfirst = second = 1\nnot_a_default: int\n"
    path = make_template(tmp_path, "01_annotated.ipynb", ["pass"], params)
    names = [p.name for p in declared_parameters(path)]
    assert names == ["run_dir", "endpoint_timeout_s", "first", "second"]
    defaults = parameter_defaults(path)
    assert check_parameters("annotated", defaults, {"endpoint_timeout_s": "7"}) == {"endpoint_timeout_s": 7}
    shared = {"shared": {"endpoint_timeout_s": 9.0, "second": 2, "unrelated": True}}
    planned, skip = plan_parameters("annotated", defaults, shared, tmp_path / "run", None)
    assert planned == {"endpoint_timeout_s": 9.0, "second": 2} and skip is None
