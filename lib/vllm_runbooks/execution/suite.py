"""The suite: runbooks 01 → 06 into one run directory from one parameters file.

Why: a change is judged on one run, not on notebooks gathered by hand. The parameters file has a
``shared`` section (endpoint, model, evidence source…) given to every runbook that declares the
parameter, and one section per runbook. A runbook that fails or is refused is recorded and the
suite goes on (later runbooks can often still say something); one that cannot run at all (no
endpoint for the canary) is skipped with the reason. The change record always runs last and
says what is missing. A suite never writes into an existing run directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artefacts import write_artefact
from ..records import Record, utc_now
from .parameters import refuse_non_utf8_path
from .run_index import INDEX_FILE
from .runjson import RUN_JSON, record_attachment
from .runner import RunbookError, new_run_dir, run_runbook
from .templates import available_runbooks, parameter_defaults

SHARED = "shared"
RECORD = "change_record"
SUITE_FILE = "suite/suite.json"
#: Runbooks numbered after the record (07, the fleet survey) run only when their section is given.
LAST_CORE = 5


@dataclass
class SuiteEntry(Record):
    """One runbook of the suite: ok / failed / refused / skipped, with the reason and its files."""

    SCHEMA = "suite_entry"
    name: str
    status: str
    reason: str | None = None
    verdict: str | None = None
    notebook: str | None = None
    html: str | None = None
    parameters: list[str] = field(default_factory=list)  # names only: values live in run.json, redacted


@dataclass
class SuiteResult(Record):
    """The suite's outcome: the run directory, each runbook's entry, and the record's verdict."""

    SCHEMA = "suite_result"
    run_dir: str
    started_at: str
    baseline_dir: str | None
    runbooks: list[SuiteEntry] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(e.status in ("ok", "skipped") for e in self.runbooks)

    def lines(self) -> list[str]:
        """What the CLI prints: one line per runbook, then where the record is."""
        out = []
        for e in self.runbooks:
            verdict = f" verdict={e.verdict}" if e.verdict else ""
            reason = f" — {e.reason}" if e.reason and e.status != "ok" else ""
            out.append(f"{e.name:<24} {e.status:<8}{verdict}{reason}")
        out.append(f"run directory: {self.run_dir}")
        index = Path(self.run_dir) / INDEX_FILE
        if index.is_file():
            out.append(f"open first: {index} (the whole run on one offline page)")
        record = Path(self.run_dir) / "change_record.html"
        if record.is_file():
            out.append(f"change record: {Path(self.run_dir) / 'change_record.md'} (offline: {record})")
        return out


def suite_order(params: Mapping[str, Any], templates: Path | None = None) -> list[tuple[str, Path]]:
    """Runbooks to run, in procedure order, the record last; refuses unknown sections."""
    books = available_runbooks(templates)
    unknown = [k for k in params if k != SHARED and k not in books]
    if unknown:
        raise RunbookError(f"parameters file: unknown section(s) {unknown}; runbooks: {list(books)} and {SHARED!r}")
    order = []
    for name, path in books.items():
        number = int(path.name[:2])
        if name == RECORD:
            continue
        if number <= LAST_CORE or name in params:
            order.append((name, path))
    if RECORD in books:
        order.append((RECORD, books[RECORD]))
    return order


def plan_parameters(
    name: str, declared: dict[str, Any], params: Mapping[str, Any], run_dir: Path, baseline: Path | None
) -> tuple[dict[str, Any], str | None]:
    """(parameters, skip reason) for one runbook: shared values it declares, then its own section."""
    shared = params.get(SHARED) or {}
    section = params.get(name) or {}
    if not isinstance(shared, Mapping) or not isinstance(section, Mapping):
        raise RunbookError(f"parameters file: sections must be mappings ({SHARED!r}, {name!r})")
    out = {k: v for k, v in shared.items() if k in declared}
    out.update(section)
    if "evidence_dir" in declared and not out.get("evidence_dir"):
        out["evidence_dir"] = str(run_dir)  # runbook 01 writes its evidence into this run
    if name == RECORD and baseline is not None:
        out.setdefault("baseline_dir", str(baseline))
    undeclared = sorted(k for k in section if k not in declared)
    if undeclared:
        raise RunbookError(f"parameters file: {name} has no parameter(s) {undeclared}")
    # A runbook whose endpoint has a default URL talks to a server (03, 04, 05); 01 only may.
    if isinstance(declared.get("endpoint"), str) and not out.get("endpoint"):
        return out, f"no endpoint given ({SHARED}.endpoint or {name}.endpoint): it talks to a server"
    return out, None


def fresh_run_dir(run_dir: str | Path | None) -> Path:
    """A new run directory, or the given one if it does not exist yet or is empty."""
    if run_dir is None:
        return new_run_dir()
    path = Path(run_dir)
    refuse_non_utf8_path("--run-dir", path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise RunbookError(f"{path} exists and is not empty: a suite never writes into an earlier run")
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def run_suite(
    params: Mapping[str, Any],
    run_dir: str | Path | None = None,
    baseline: str | Path | None = None,
    *,
    templates: Path | None = None,
    on_entry: Callable[[SuiteEntry], None] | None = None,
    cell_timeout_s: int = 1800,
    **kwargs: Any,
) -> SuiteResult:
    """Run the suite; ``kwargs`` go to ``run_runbook`` (progress, kernel_name).

    ``cell_timeout_s`` bounds every cell: a cell that hangs (a widget cell under nbclient can,
    jupyter/nbclient#312) fails that runbook after this long, and the suite goes on.
    """
    base = Path(baseline).resolve() if baseline else None
    if base is not None and not (base / RUN_JSON).is_file():
        raise RunbookError(f"--baseline {base}: not a run directory (no {RUN_JSON})")
    order = suite_order(params, templates)
    declared = {name: parameter_defaults(template) for name, template in order}
    probe = Path(run_dir or ".")
    for name, _ in order:  # a bad section refuses the whole suite before anything runs
        plan_parameters(name, declared[name], params, probe, base)
    path = fresh_run_dir(run_dir)
    result = SuiteResult(str(path), utc_now(), str(base) if base else None)
    for name, _ in order:
        if name == RECORD:
            _write_plan(path, result)
        parameters, skip = plan_parameters(name, declared[name], params, path, base)
        entry = SuiteEntry(name, "skipped", skip, parameters=sorted(parameters))
        if skip is None:
            try:
                done = run_runbook(
                    name, parameters, path, templates=templates, execution_timeout_s=cell_timeout_s, **kwargs
                )
                entry.status, entry.reason = done.status, done.error
                entry.verdict = (done.headline or {}).get("verdict") if done.headline else None
                entry.notebook, entry.html = done.notebook, done.html
            except RunbookError as exc:  # refused (a credential in the endpoint…): recorded, suite goes on
                entry.status, entry.reason = "refused", str(exc)
        result.runbooks.append(entry)
        if on_entry:
            on_entry(entry)
    return result


def _write_plan(run_dir: Path, result: SuiteResult) -> None:
    """suite/suite.json before the record runs, so the record can say what was skipped and why."""
    record_attachment(run_dir, "suite", [write_artefact(run_dir, SUITE_FILE, result)])
