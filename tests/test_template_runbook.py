"""The template a new runbook starts from runs end to end (issue 22 item 7): papermill executes
``runbooks/_template.ipynb`` against the shipped example package, glues its headline and saves."""

from __future__ import annotations

import json
from pathlib import Path

import papermill as pm
import pytest

from conftest import REPO_ROOT
from vllm_runbooks.example.stage import Config, run
from vllm_runbooks.execution.scraps import read_scraps

TEMPLATE = REPO_ROOT / "runbooks" / "_template.ipynb"


@pytest.mark.slow
def test_the_template_executes_and_saves_its_result(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    out = tmp_path / "out.ipynb"
    pm.execute_notebook(
        str(TEMPLATE),
        str(out),
        parameters={"endpoint": "ftp://user:pw@host", "run_dir": str(run_dir)},
        kernel_name="python3",
        progress_bar=False,
        cwd=str(tmp_path),
    )
    headline = read_scraps(out)["headline"]
    assert headline == {"schema": "headline", "schema_version": 1, "runbook": "example", "verdict": "unusable",
                        "figures": {"problems": 2}}  # fmt: skip
    saved = json.loads((run_dir / "example" / "result.json").read_text())
    assert saved["problems"][0] == "scheme 'ftp': only http and https" and "pw@" not in json.dumps(saved)


def test_the_example_stage_says_every_problem() -> None:
    assert run(Config("https://vllm.internal:8000")).headline().verdict == "usable"
    bad = run(Config("not a url"))
    assert bad.headline().verdict == "unusable" and bad.problems == ["scheme 'none': only http and https", "no host"]
