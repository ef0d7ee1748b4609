"""The runner's papermill engine: fewer rewrites of the output notebook, and nothing lost by it.

Why: the throttled saves cut seconds from every run, and each way a deferred save could lose
evidence (a raising cell, the end of the run, a cancel by SIGTERM) must still leave it on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from papermill.engines import NotebookExecutionManager

from conftest import REPO_ROOT
from notebook_factory import make_template
from vllm_runbooks.execution import engine, runner

pytestmark = pytest.mark.slow

QUICK_CELLS = [f"print('cell {i} done')" for i in range(24)]


def _outputs(notebook: Path) -> str:
    return json.dumps([c.get("outputs", []) for c in json.loads(notebook.read_text())["cells"]])


def test_quick_cells_are_saved_far_fewer_times_and_all_outputs_land(tmp_path: Path, monkeypatch) -> None:
    writes: list[float] = []
    original = NotebookExecutionManager.save

    def counting(self, **kwargs):  # the real write, counted
        writes.append(time.monotonic())
        return original(self, **kwargs)

    monkeypatch.setattr(NotebookExecutionManager, "save", counting)
    make_template(tmp_path / "templates", "01_quick.ipynb", QUICK_CELLS)
    result = runner.run_runbook("quick", {}, tmp_path / "run", templates=tmp_path / "templates")
    assert result.status == "ok"
    cells = len(QUICK_CELLS) + 1
    # papermill alone writes at every cell start and end (2 per cell, plus start and end).
    assert len(writes) < cells, f"{len(writes)} writes for {cells} cells"
    text = _outputs(Path(result.notebook))
    assert all(f"cell {i} done" in text for i in range(len(QUICK_CELLS))), "a deferred save was lost"
    assert json.loads(Path(result.notebook).read_text())["metadata"]["papermill"]["end_time"], "final save deferred"


def test_a_raising_cell_is_written_with_its_traceback(tmp_path: Path) -> None:
    body = ["print('before')", "raise RuntimeError('kaboom on purpose')", "print('never')"]
    make_template(tmp_path / "templates", "01_boom.ipynb", body)
    result = runner.run_runbook("boom", {}, tmp_path / "run", templates=tmp_path / "templates")
    assert result.status == "failed"
    text = _outputs(Path(result.notebook))
    assert "kaboom on purpose" in text and "before" in text and "never" not in text
    # papermill's final save (after the kernel is gone, so never deferred) is the one on disk
    meta = json.loads(Path(result.notebook).read_text())["metadata"]["papermill"]
    assert meta["end_time"] and meta["exception"] is True


def _start_hanging_run(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """``vllm-runbooks run`` of six quick cells and then one that hangs silently; returns once
    the hanging cell has started (every quick cell has run), with the notebook's path."""
    marker = tmp_path / "hanging"
    body = [*QUICK_CELLS[:6], f"import pathlib, time\npathlib.Path({str(marker)!r}).write_text('x')\ntime.sleep(600)"]
    make_template(tmp_path / "templates", "01_hang.ipynb", body)
    env = {**os.environ, "VLLM_RUNBOOKS_TEMPLATES": str(tmp_path / "templates")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "lib"), env.get("PYTHONPATH", "")])
    argv = [
        sys.executable,
        "-m",
        "vllm_runbooks.cli",
        "run",
        "hang",
        "--run-dir",
        str(tmp_path / "run"),
        "--no-progress",
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the hanging cell never started")
        time.sleep(0.05)
    return proc, tmp_path / "run" / "01_hang.ipynb"


def _quick_cells_on_disk(notebook: Path) -> bool:
    try:
        text = _outputs(notebook)
    except ValueError:  # empty or mid-write: papermill's own write is not atomic
        return False
    return all(f"cell {i} done" in text for i in range(6))


def test_sigterm_flushes_the_deferred_notebook_before_the_process_ends(tmp_path: Path) -> None:
    """A cancel (SIGTERM to the runner, as the console sends) while a cell hangs right after quick
    ones: the quick cells' outputs, possibly only in a deferred save, are on disk afterwards."""
    proc, notebook = _start_hanging_run(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM  # the process still ends as SIGTERM ends it
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _quick_cells_on_disk(notebook), "outputs before the cancel were lost"


def test_quick_cells_before_a_silent_long_cell_reach_disk_while_it_runs(tmp_path: Path) -> None:
    """No signal, no kernel message: the deferred save is still written about a second later, so
    a SIGKILL (OOM killer, lost node) during a silent long cell keeps the cells before it."""
    proc, notebook = _start_hanging_run(tmp_path)
    try:
        deadline = time.monotonic() + 10 * engine.SAVE_EVERY_S + 5
        while not _quick_cells_on_disk(notebook) and time.monotonic() < deadline:  # the timer's write
            time.sleep(0.1)
        assert _quick_cells_on_disk(notebook), "the cells before the silent one were not written while it ran"
    finally:
        proc.kill()
        proc.wait(timeout=60)


def test_the_final_save_is_never_deferred(tmp_path: Path) -> None:
    """Straight on the manager: a save within the interval is deferred, notebook_complete writes
    anyway (nothing runs an event loop after it, so a deferred final save would be lost)."""
    import nbformat

    out = tmp_path / "out.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("before")])
    nb.metadata["papermill"] = {}  # as papermill's parameterize leaves it
    manager = engine.ThrottledSaves(nb, output_path=str(out), progress_bar=False)
    manager.notebook_start()  # the first save is written
    first = out.read_text()
    manager.nb.cells[0].source = "added"
    manager.save()  # within the interval: deferred
    assert out.read_text() == first
    manager.notebook_complete()
    on_disk = json.loads(out.read_text())
    assert on_disk["metadata"]["papermill"]["end_time"] and "".join(on_disk["cells"][0]["source"]) == "added"


def test_the_engine_is_registered_under_its_name() -> None:
    from papermill.engines import papermill_engines

    assert papermill_engines.get_engine(engine.ENGINE_NAME) is engine.ThrottledEngine
