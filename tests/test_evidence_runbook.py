"""Runbook 01 executed with papermill: scraps, evidence dir, and no planted secret anywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from conftest import R575, R575_PLANTED
from vllm_runbooks.execution.runs import load_result
from vllm_runbooks.execution.scraps import read_scraps
from vllm_runbooks.redact import redact_parameters
from vllm_runbooks.registry import Registry

ROOT = Path(__file__).parents[1]
NOTEBOOK = ROOT / "runbooks" / "01_evidence_capture.ipynb"
PLANTED = [
    *R575_PLANTED,
    "paramSecret777",
    "ghp_runbookAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "urlpw999",
    "eyJhbGciOiJIUzI1NiJ9.eyJydW5ib29rIjoxMjM0NX0",
]


def test_template_is_clean() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in (
        "source",
        "run_dir",
        "image",
        "container",
        "log_paths",
        "launch_command",
        "endpoint",
        "probe_image",
        "collector_timeout_s",
    ):
        assert f"{name} =" in tagged[0].source and f"`{name}`" in nb.cells[0].source
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None
            assert "for " not in c.source and "re." not in c.source  # thin: calls and names only


def _execute(params: dict, out: Path) -> dict:
    import papermill as pm

    pm.execute_notebook(
        str(NOTEBOOK),
        str(out),
        parameters=params,
        cwd=str(ROOT / "runbooks"),
        kernel_name="python3",
        progress_bar=False,
    )
    return read_scraps(out)


@pytest.mark.slow
def test_runbook_on_bundle_leaks_no_secret(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(R575, bundle)
    with open(bundle / "container-logs.txt", "a") as f:
        f.write(
            "GITHUB_TOKEN=ghp_runbookAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
            "GET https://bob:urlpw999@hf.example/models?access_token=eyJhbGciOiJIUzI1NiJ9.eyJydW5ib29rIjoxMjM0NX0"
            ".c2lnbmF0dXJlc2lnbmF0dXJl\n"
        )
    run_dir = tmp_path / "run"
    params = redact_parameters(
        {
            "source": str(bundle),
            "run_dir": str(run_dir),
            "launch_command": "vllm serve moonshotai/Kimi-K3 --api-key paramSecret777",
            "endpoint": None,
            "collector_timeout_s": 60,
        }
    )
    out = run_dir / "01_evidence_capture.ipynb"
    run_dir.mkdir()
    scraps = _execute(params, out)
    head = scraps["headline"]
    assert head["runbook"] == "evidence_capture" and head["verdict"] == "complete"
    assert head["figures"]["gpus"] == 8 and head["figures"]["driver"] == "575.57.08"
    assert head["figures"]["image_cuda"] == "13.0.2" and head["figures"]["unavailable_count"] == 0
    assert scraps["evidence"]["items"]["nvidia"]["value"]["driver_branch"] == "r575"
    ev = load_result(run_dir, "evidence_capture")
    assert ev.get("launch", "origin") == "parameter" and "<redacted:api-key>" in ev.get("launch", "command")
    # the lead's runner adds HTML; render it here too so the scan covers it
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_filename(str(out))
    (run_dir / "01_evidence_capture.html").write_text(html)
    nb_text = out.read_text()
    assert "application/vnd.plotly.v1+json" in nb_text  # figures rendered
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert len(files) > 20
    for p in files:
        data = p.read_bytes()
        for s in PLANTED:
            assert s.encode() not in data, f"{s} leaked into {p.relative_to(run_dir)}"


@pytest.mark.slow
def test_runbook_local_without_gpu_completes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    scraps = _execute({"run_dir": str(run_dir), "collector_timeout_s": 60}, run_dir / "out.ipynb")
    head = scraps["headline"]
    assert head["verdict"] in {"partial", "complete"}
    ev = json.loads((run_dir / "evidence" / "evidence.json").read_text())
    for item in ev["items"].values():
        assert item["status"] in {"ok", "partial", "unavailable"}
        if item["status"] != "ok":
            assert item["reason"]


# --- an abandoned collector may not write after the capture moved on ------------------------------
def test_collector_abandoned_after_timeout_cannot_write(tmp_path: Path) -> None:
    import threading

    from vllm_runbooks.evidence import Item, run_bounded
    from vllm_runbooks.evidence.registry import Context, WriteRefused
    from vllm_runbooks.probe import Options

    ctx = Context(source=None, opts=Options(), out_dir=tmp_path / "evidence")  # type: ignore[arg-type]
    release, done = threading.Event(), threading.Event()
    seen: dict[str, str] = {}

    def blocked() -> Item:
        try:
            release.wait(30)
            ctx.keep("late.txt", b"written after the timeout")
            seen["outcome"] = "written"
        except WriteRefused as e:
            seen["outcome"] = f"refused: {e}"
        finally:
            done.set()
        return Item.unavailable("unreachable")

    item = run_bounded(blocked, 0.05, "blocked")
    assert item.status == "unavailable" and "timed out after 0.05s" in item.reason
    assert "writes to raw/ are refused" in item.reason
    release.set()
    assert done.wait(30)
    assert seen["outcome"].startswith("refused") and "raw/late.txt" in seen["outcome"]
    assert not (tmp_path / "evidence" / "raw" / "late.txt").exists()

    # a collector that finishes in time still writes, on the same context
    def quick() -> Item:
        return Item.unavailable("wrote", {"rel": ctx.keep("early.txt", b"ok")})

    assert run_bounded(quick, 30, "quick").value == {"rel": "raw/early.txt"}
    assert (tmp_path / "evidence" / "raw" / "early.txt").read_bytes() == b"ok"


class _StallingLog:
    """A log stream that gives one line, then waits for ``release`` before the rest."""

    def __init__(self, release: object) -> None:
        self.release = release
        self.lines = [b"INFO starting\n", b"ERROR late line HF_TOKEN=hf_kQ7pLm2XvR9tYw4ZsB8nC3dF6gH1jK5aE0uI\n"]

    def __enter__(self) -> _StallingLog:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self):  # noqa: ANN204
        yield self.lines[0]
        self.release.wait(30)  # type: ignore[attr-defined]
        yield self.lines[1]

    def readline(self, limit: int = -1) -> bytes:
        """The logs collector reads line by line with a length cap (probe.store_log)."""
        if not hasattr(self, "_it"):
            self._it = iter(self)
        return next(self._it, b"")


def test_stalled_log_collector_leaves_nothing_after_sha256sums(tmp_path: Path, monkeypatch) -> None:
    """The capture finishes (evidence.json, SHA256SUMS) while a log copy hangs; when the copy resumes
    it must not add a file under raw/ — the manifest still verifies and no partial copy is left."""
    import tempfile
    import threading

    from vllm_runbooks.evidence import registry as collectors
    from vllm_runbooks.evidence.collectors.logs import collect_logs

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    release, done = threading.Event(), threading.Event()
    outcome: dict[str, BaseException | None] = {}

    class StallingSource:
        kind = "bundle"
        meta = None

        def read(self, name: str):  # noqa: ANN201
            from vllm_runbooks.probe import Captured

            return Captured(name, "unavailable", reason="not in this test")

        def logs(self):  # noqa: ANN201
            return [("server.log", lambda: _StallingLog(release))]

        def findings(self) -> list[str]:
            return []

        def close(self) -> None:
            return None

    def logs_then_report(ctx: collectors.Context):  # noqa: ANN202
        try:
            return collect_logs(ctx)
        except BaseException as e:
            outcome["error"] = e
            raise
        finally:
            done.set()

    monkeypatch.setattr("vllm_runbooks.evidence.writer.open_source", lambda source, opts: StallingSource())
    only_logs = Registry("evidence collector")  # a registry of this one collector, not discovered
    only_logs.add(collectors.Collector("logs", "Logs", logs_then_report))
    monkeypatch.setattr(collectors, "COLLECTORS", only_logs)
    from vllm_runbooks.evidence import Evidence, collect_evidence

    run_dir = tmp_path / "run"
    ev = collect_evidence("stalling", run_dir=run_dir, collector_timeout_s=0.2)
    assert ev.items["logs"].status == "unavailable" and "refused" in ev.items["logs"].reason
    release.set()
    assert done.wait(30)
    assert isinstance(outcome.get("error"), collectors.WriteRefused)
    # raw/logs/ may exist (made before the timeout); no file may have landed in it
    assert not [p for p in (run_dir / "evidence" / "raw").rglob("*") if p.is_file()]
    assert list(scratch.iterdir()) == []  # the copy made outside the run dir is gone too
    Evidence.load(run_dir)  # the manifest still matches the directory
    sums = (run_dir / "evidence" / "SHA256SUMS").read_text()
    assert "raw/logs" not in sums
