"""Execute runbook templates with papermill into immutable run directories.

A run directory is the unit of change evidence: the executed notebooks, their offline HTML
copies and report views, the runbooks' own artefacts, ``run.json`` — the machine-readable
summary a scheduler or script acts on without opening a notebook — and ``index.html``, the page
an approver opens first (``run_index``), rewritten after each runbook. Nothing in a run
directory is ever overwritten: a second execution of the same runbook into the same directory
is refused (the index page before is set aside as ``index-N.html``, never replaced).

This module is the orchestration: finding a template, run directories and the checks made
before anything runs, and :func:`run_runbook`. The parameter checks live in ``parameters``,
run.json in ``runjson``, the scrubbed notebook and its HTML in ``notebook_output``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re
import secrets
import shutil
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..records import Record, utc_now
from ..redact import redact_parameters, redact_text
from ..resources import default_runs_dir
from ..stage import Headline
from .notebook_output import render_html, scrub_notebook
from .offline_html import OfflineRenderer
from .parameters import (
    RunbookError,
    check_parameters,
    keep_real_paths,
    refuse_altered_targets,
    refuse_non_utf8_path,
)
from .report_view import render_report_view
from .run_index import INDEX_FILE, write_run_index
from .runjson import RUN_JSON, UnlistedFilesError, read_run_json, record_run, record_running, run_json_edited
from .scraps import read_scraps
from .templates import parameter_defaults, resolve_runbook, runbook_name, template_sha256

KERNEL_LOG_LEVEL = os.environ.get("VLLM_RUNBOOKS_KERNEL_LOG_LEVEL", "CRITICAL")


@dataclasses.dataclass
class RunbookResult(Record):
    """One runbook executed into a run directory."""

    SCHEMA = "runbook_result"

    name: str
    notebook: str
    html: str | None
    status: str  # "ok" | "failed"
    started_at: str
    ended_at: str
    duration_s: float
    parameters: dict[str, Any]
    error: str | None = None
    headline: dict[str, Any] | None = None
    run_dir: str = ""
    template_sha256: str = ""  # the exact template text executed (the package version is in run.json)

    def summary_line(self) -> str:
        """One line per runbook for the terminal summary a person scans after a run."""
        verdict = (self.headline or {}).get("verdict", "—")
        return f"{self.name:<24} {self.status:<7} verdict={verdict}"

    def _repr_html_(self) -> str:
        from ..display import banner, html_table

        tone = "good" if self.status == "ok" else "bad"
        verdict = (self.headline or {}).get("verdict", "—")
        rows = [{"field": k, "value": v} for k, v in ((self.headline or {}).get("figures") or {}).items()]
        return banner(f"{self.name}: {self.status}", f"verdict: {verdict}", tone) + html_table(rows)


def new_run_dir(base: Path | None = None, label: str | None = None) -> Path:
    """Create ``runs/<UTC timestamp>-<host>-<short id>/``; exclusive, so two runs never share one."""
    base = Path(base or default_runs_dir())
    refuse_non_utf8_path("the runs directory", base)  # run.json and the notebook could not hold it
    base.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", label or socket.gethostname())[:40] or "host"
    for _ in range(20):
        path = base / f"{stamp}-{host}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RunbookError(f"could not create a fresh run directory under {base}")


def check_run_dir(run_dir: Path) -> Path:
    """Make sure ``run_dir`` is (or can become) a writable directory before anything runs."""
    path = Path(run_dir)
    refuse_non_utf8_path("--run-dir", path)
    if path.exists() and not path.is_dir():
        raise RunbookError(f"--run-dir {path} exists and is not a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RunbookError(f"--run-dir {path} lies under {parent}, which is not a directory")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunbookError(f"cannot create --run-dir {path}: {exc.strerror or exc}") from exc
    probe = path / f".write-test-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with probe.open("x") as handle:
            handle.write("x")
        probe.unlink()
    except OSError as exc:
        raise RunbookError(
            f"--run-dir {path} is not writable ({exc.strerror or exc}): read-only, immutable or not yours"
        ) from exc
    return path.resolve()


def run_runbook(
    name: str,
    parameters: Mapping[str, Any] | None = None,
    run_dir: str | Path | None = None,
    *,
    progress: bool = False,
    kernel_name: str | None = None,
    execution_timeout_s: int = 1800,
    templates: Path | None = None,
) -> RunbookResult:
    """Execute one runbook into ``run_dir`` (a new one when None) and record it in run.json.

    A failing cell still leaves the executed notebook, its HTML copy and ``status: failed``;
    callers decide the exit code from ``result.status``.
    """
    import papermill as pm

    from .engine import ENGINE_NAME, flush_on_terminate

    template = resolve_runbook(name, templates)
    short = runbook_name(template)
    # Everything that can be refused is refused before the run directory is touched.
    checked = check_parameters(short, parameter_defaults(template), dict(parameters or {}))
    digest = template_sha256(template)
    # Parameters are redacted before papermill writes them into the notebook: a secret passed
    # by mistake (an --api-key in a launch command) must not land in shared evidence.
    params = redact_parameters(checked)
    refuse_altered_targets(checked, params)
    run_path = check_run_dir(Path(run_dir)) if run_dir else new_run_dir()
    output = run_path / template.name
    if output.exists():
        raise RunbookError(f"{output} already exists: a run never overwrites another; use a new --run-dir")
    _check_run_json(run_path)
    keep_real_paths(checked, params)
    params["run_dir"] = str(run_path)

    # Claim the output name first so a concurrent run into the same directory fails cleanly.
    try:
        output.open("x").close()
    except FileExistsError as exc:
        raise RunbookError(f"{output} already exists: a run never overwrites another") from exc
    entry_id = secrets.token_hex(6)
    try:
        record_running(run_path, short, output, params, entry_id, digest)
    except UnlistedFilesError as exc:
        output.unlink(missing_ok=True)  # the empty name this call claimed above, nothing else
        raise RunbookError(str(exc)) from exc

    started, t0 = utc_now(), time.monotonic()
    status, error = "ok", None
    html = OfflineRenderer().warm_in_background()  # ready by the time the notebook has run
    try:
        with flush_on_terminate():
            pm.execute_notebook(
                str(template),
                str(output),
                parameters=params,
                engine_name=ENGINE_NAME,  # nbclient's, saving the notebook at most once a second
                kernel_name=kernel_name,
                progress_bar=progress,
                cwd=str(Path.cwd()),  # relative paths in parameters mean what they meant to the caller
                execution_timeout=execution_timeout_s,
                request_save_on_cell_execute=True,
                # Steps report live (collectors as they run) on our stderr, keeping stdout for the summary;
                # the notebook keeps the same lines.
                stdout_file=sys.stderr if progress else None,
                stderr_file=sys.stderr if progress else None,
                # The kernel's own log (a TCP-transport warning at start, "KeyboardInterrupt caught in
                # kernel" at shutdown) is noise to the reader of a healthy run; cell errors are kept
                # in the notebook and in result.error.
                extra_arguments=[f"--IPKernelApp.log_level={KERNEL_LOG_LEVEL}"],
            )
    except Exception as exc:  # papermill raises PapermillExecutionError; keep any failure as evidence
        status = "failed"
        error = redact_text(_describe_error(exc))
    duration = round(time.monotonic() - t0, 2)

    if output.stat().st_size == 0:  # papermill failed before writing anything: keep the template
        shutil.copyfile(template, output)
    scrub_notebook(output)
    html_path = render_html(output, html)
    render_report_view(output, html)  # the approver's view: results without code, beside the full HTML
    headline = Headline.coerce(read_scraps(output).get("headline")) if output.stat().st_size else None
    result = RunbookResult(
        name=short,
        notebook=str(output),
        html=str(html_path) if html_path else None,
        status=status,
        started_at=started,
        ended_at=utc_now(),
        duration_s=duration,
        parameters=params,
        error=error,
        headline=headline.to_dict() if headline else None,
        run_dir=str(run_path),
        template_sha256=digest,
    )
    record_run(run_path, result, entry_id)
    try:  # the approver's one page, rewritten with this runbook in it; never fails the run
        write_run_index(run_path)
    except (OSError, ValueError) as exc:
        print(f"vllm-runbooks: {run_path / INDEX_FILE} not written: {redact_text(str(exc))}", file=sys.stderr)
    return result


def _check_run_json(run_dir: Path) -> None:
    """Refuse to add to a run whose record cannot be read: the result would be lost."""
    path = run_dir / RUN_JSON
    if not path.exists():
        return
    try:
        data = read_run_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            raise ValueError("not a run record")
        if not all(isinstance(entry, dict) for entry in data["runbooks"]):
            raise ValueError("an entry of 'runbooks' is not an object")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunbookError(f"{path} is unreadable ({exc}); it is left as it is: use a new --run-dir") from exc
    edited = run_json_edited(data)
    if edited:
        raise RunbookError(f"{path}: {edited}; it is left as it is: use a new --run-dir")


def _describe_error(exc: BaseException) -> str:
    ename = getattr(exc, "ename", None)
    evalue = getattr(exc, "evalue", None)
    cell = getattr(exc, "exec_count", None)
    if ename:
        return f"{ename}: {evalue} (cell {cell})"
    return f"{type(exc).__name__}: {exc}"
