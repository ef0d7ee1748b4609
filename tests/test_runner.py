"""The runner's run-directory contract: outputs, run.json, no overwrite, failures still saved."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from notebook_factory import make_template
from vllm_runbooks.cli import main
from vllm_runbooks.execution import parameters, runjson, runner
from vllm_runbooks.execution import templates as templates_mod
from vllm_runbooks.execution.offline_html import plotlyjs_name
from vllm_runbooks.execution.scraps import read_scraps

OK_BODY = [
    "import plotly.graph_objects as go\nfrom vllm_runbooks.display import FigureView\n"
    "from vllm_runbooks.execution.scraps import glue",
    "FigureView(go.Figure(go.Bar(x=['gpu0', 'gpu1'], y=[141, 141])))",
    "glue('headline', {'runbook': 'smoke', 'verdict': 'pass', 'figures': {'gpus': 2, 'endpoint': endpoint}})",
]
FAIL_BODY = [
    "from vllm_runbooks.execution.scraps import glue\nglue('headline', {'runbook': 'boom', 'verdict': 'unknown'})",
    "raise RuntimeError('collector exploded on purpose')",
    "print('never reached')",
]


@pytest.fixture()
def templates(tmp_path: Path) -> Path:
    folder = tmp_path / "templates"
    params = "run_dir = None\nendpoint = 'http://127.0.0.1:8000'\nlaunch_command = ''\n"
    make_template(folder, "01_smoke.ipynb", OK_BODY, params)
    make_template(folder, "02_boom.ipynb", FAIL_BODY)
    return folder


def test_available_runbooks_strips_numbers(templates: Path) -> None:
    assert list(templates_mod.available_runbooks(templates)) == ["smoke", "boom"]
    with pytest.raises(runner.RunbookError, match="unknown runbook"):
        templates_mod.resolve_runbook("nope", templates)


def test_new_run_dirs_are_distinct(tmp_path: Path) -> None:
    dirs = {runner.new_run_dir(tmp_path) for _ in range(5)}
    assert len(dirs) == 5
    assert all(d.is_dir() and d.parent == tmp_path for d in dirs)


def test_cli_value_typing() -> None:
    assert parameters.coerce_cli_value("8") == 8
    assert parameters.coerce_cli_value("0.5") == 0.5
    assert parameters.coerce_cli_value("False") is False
    assert parameters.coerce_cli_value("None") is None
    assert parameters.coerce_cli_value("575.57.08") == "575.57.08"


@pytest.mark.slow
def test_run_writes_notebook_html_and_run_json(templates: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = runner.run_runbook("smoke", {"endpoint": "http://h:1"}, run_dir, templates=templates)
    assert result.status == "ok", result.error
    nb, html = Path(result.notebook), Path(result.html or "")
    assert nb.name == "01_smoke.ipynb" and html.name == "01_smoke.html"
    assert read_scraps(nb)["headline"]["figures"] == {"gpus": 2, "endpoint": "http://h:1"}
    page = html.read_text(encoding="utf-8")
    # figures are drawn from the run directory's one plotly.js, never fetched or inlined
    assert not re.search(r"<script[^>]*src=[\"']https?://[^\"']*plot", page)
    assert "Plotly.newPlot" in page and len(page) < 1_000_000
    assert f'src="{plotlyjs_name()}"' in page and (run_dir / plotlyjs_name()).is_file()
    run = runjson.load_run(run_dir)
    assert run["status"] == "ok"
    entry = run["runbooks"][0]
    assert entry["headline"]["verdict"] == "pass"
    assert entry["parameters"]["run_dir"] == str(run_dir.resolve())
    listed = {"01_smoke.ipynb", "01_smoke.html", "01_smoke.report.html", plotlyjs_name(), "index.html"}
    assert set(run["artefacts"]) == listed
    assert run["artefacts"]["01_smoke.ipynb"] == runjson.sha256_file(nb)
    assert run["versions"]["packages"]["papermill"]


@pytest.mark.slow
def test_existing_notebook_is_never_overwritten(templates: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = runner.run_runbook("smoke", {}, run_dir, templates=templates)
    before = Path(first.notebook).read_bytes()
    with pytest.raises(runner.RunbookError, match="already exists"):
        runner.run_runbook("smoke", {}, run_dir, templates=templates)
    assert Path(first.notebook).read_bytes() == before
    assert len(runjson.load_run(run_dir)["runbooks"]) == 1


@pytest.mark.slow
def test_failing_cell_still_saves_notebook_and_html(templates: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # A suite: the first runbook passes, the second fails; both land in one run.json.
    runner.run_runbook("smoke", {}, run_dir, templates=templates)
    result = runner.run_runbook("boom", {}, run_dir, templates=templates)
    assert result.status == "failed"
    assert "collector exploded on purpose" in (result.error or "")
    nb = json.loads(Path(result.notebook).read_text(encoding="utf-8"))
    # papermill puts an error banner near the top of the executed notebook.
    top = json.dumps(nb["cells"][:2])
    assert "An Exception was encountered" in top
    assert "collector exploded on purpose" in Path(result.html or "").read_text(encoding="utf-8")
    assert read_scraps(nb)["headline"]["verdict"] == "unknown"
    run = runjson.load_run(run_dir)
    assert run["status"] == "failed"
    assert [r["status"] for r in run["runbooks"]] == ["ok", "failed"]


@pytest.mark.slow
def test_cli_exit_codes_and_secret_parameters(templates: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("VLLM_RUNBOOKS_TEMPLATES", str(templates))
    run_dir = tmp_path / "run"
    secret = "sk-proj-THISISAPLANTEDSECRET1234567890"
    rc = main(
        [
            "run",
            "smoke",
            "--run-dir",
            str(run_dir),
            "--no-progress",
            "-r",
            "launch_command",
            f"vllm serve m --api-key {secret}",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "verdict=pass" in out and "01_smoke.html" in out
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
    assert main(["run", "boom", "--run-dir", str(run_dir), "--no-progress"]) == 1
    assert main(["run", "smoke", "--run-dir", str(run_dir), "--no-progress"]) == 2


def test_corrupt_run_json_is_refused_before_running(templates: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("garbage{")
    with pytest.raises(runner.RunbookError, match="unreadable"):
        runner.run_runbook("smoke", {}, run_dir, templates=templates)
    assert (run_dir / "run.json").read_text() == "garbage{"
    assert not (run_dir / "01_smoke.ipynb").exists()


def test_endpoint_with_credentials_is_refused_not_silently_rewritten(templates: Path, tmp_path: Path) -> None:
    with pytest.raises(runner.RunbookError, match="api_key_env"):
        runner.run_runbook("smoke", {"endpoint": "http://admin:pw@node:8000"}, tmp_path / "run", templates=templates)
    assert not (tmp_path / "run" / "01_smoke.ipynb").exists()


def test_concurrent_records_are_not_lost(tmp_path: Path) -> None:
    """Several runbooks finishing at once in one run directory each keep their entry."""
    from concurrent.futures import ThreadPoolExecutor

    def record(i: int) -> None:
        runjson.record_run(
            tmp_path,
            runner.RunbookResult(
                name=f"book{i}",
                notebook="",
                html=None,
                status="ok",
                started_at="",
                ended_at="",
                duration_s=0.0,
                parameters={},
                run_dir=str(tmp_path),
            ),
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(record, range(40)))
    names = {r["name"] for r in runjson.load_run(tmp_path)["runbooks"]}
    assert names == {f"book{i}" for i in range(40)}


@pytest.mark.slow
def test_fail_on_verdict_exit_code(templates: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_RUNBOOKS_TEMPLATES", str(templates))
    args = ["run", "smoke", "--no-progress", "--fail-on-verdict", "pass"]
    assert main([*args, "--run-dir", str(tmp_path / "a")]) == 3
    assert main(["run", "smoke", "--no-progress", "--fail-on-verdict", "fail", "--run-dir", str(tmp_path / "b")]) == 0
