"""Reading one run directory for the change record: run.json, each runbook's result, artefacts.

Why its own reader: the record must cite *files* (relative to the run directory, so the record
still opens when the runs folder is copied elsewhere) and must read every input defensively — a
runbook that did not run, failed, or wrote an older shape is a reason in the record, never a
crash. Each runbook's result is read back typed, once, through ``runs.load_results`` (the stage
contract), with the file and sha256 it came from; nothing here reads a result's JSON by hand,
a notebook's scraps, or run.json's copy of a headline. Only bounded reads: an artefact larger
than ``MAX_JSON_BYTES`` is not parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..execution.runjson import (
    ARTEFACT_JSON_MAX_BYTES,
    RUN_JSON,
    ArtefactError,
    newest_listed,
    read_checked_json,
    read_run_json,
)
from ..execution.runs import RunResults

#: The bound of every artefact the record parses: the same as ``runs.load_result``'s, so a file one
#: reader accepts is never ignored by the other.
MAX_JSON_BYTES = ARTEFACT_JSON_MAX_BYTES


class RecordRefused(Exception):
    """The record cannot be written truthfully (altered artefact, unreadable run); names the file."""


@dataclass
class RunbookEntry:
    """One runbook as run.json recorded it (the last execution of that name wins)."""

    name: str
    status: str
    error: str | None = None
    notebook: str | None = None  # relative to the run directory
    html: str | None = None
    report_html: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


class RunView:
    """A run directory, read once: entries by runbook name, the artefact manifest, file helpers."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.run_id = str(data.get("run_id") or path.name)
        self.manifest: dict[str, str] = {
            str(k): str(v) for k, v in (data.get("artefacts") or {}).items() if isinstance(k, str)
        }
        self.entries: dict[str, RunbookEntry] = {}
        #: Runbooks whose entry is not backed by its executed notebook, with why (never cited).
        self.unproven: dict[str, str] = {}
        #: Files a recorded runbook (or the runner) wrote, from the entries' ``outputs``; None for
        #: a run written before entries named their outputs (then the manifest alone decides).
        self.outputs: set[str] | None = None
        recorded = (path / RUN_JSON).exists()
        for raw in data.get("runbooks") or []:
            if isinstance(raw, dict) and isinstance(raw.get("name"), str):
                entry = self._entry(raw)
                why = self._unproven(raw, entry) if recorded else None
                if why:
                    self.unproven[entry.name] = why
                    self.entries.pop(entry.name, None)
                    continue
                self.unproven.pop(entry.name, None)
                self.entries[entry.name] = entry
                if isinstance(raw.get("outputs"), list):
                    self.outputs = (self.outputs or set()) | {str(o) for o in raw["outputs"]}
        for attached in data.get("attached") or []:
            if isinstance(attached, dict) and isinstance(attached.get("outputs"), list):
                self.outputs = (self.outputs or set()) | {str(o) for o in attached["outputs"]}
        #: resolved path → sha256, shared with the verification of the same build (each file hashed once)
        self.hashed: dict[str, str] = {}
        self._results: RunResults | None = None

    @classmethod
    def load(cls, run_dir: str | Path, *, allow_empty: bool = False) -> RunView:
        """Read ``run.json``; refuses (naming the file) when it is unreadable, or missing unless
        ``allow_empty`` (a run directory where nothing has finished yet: every runbook is missing)."""
        path = Path(run_dir).resolve()
        run_json = path / RUN_JSON
        if allow_empty and path.is_dir() and not run_json.exists():
            return cls(path, {"run_id": path.name, "runbooks": [], "artefacts": {}})
        try:
            data = read_run_json(run_json)  # the one bounded reader (size and depth), the one bound
        except FileNotFoundError as exc:
            raise RecordRefused(f"{run_json}: missing — not a run directory (no runbook has finished in it)") from exc
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise RecordRefused(f"{run_json}: unreadable ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            raise RecordRefused(f"{run_json}: not a run record (no runbooks list)")
        return cls(path, data)

    def _rel(self, value: Any) -> str | None:
        if not isinstance(value, str) or not value:
            return None
        p = Path(value)
        try:
            return str(p.resolve().relative_to(self.path)) if p.is_absolute() else str(p)
        except ValueError:
            return p.name  # run directory moved: the runner writes notebooks at its top level

    def _entry(self, raw: dict[str, Any]) -> RunbookEntry:
        notebook = self._rel(raw.get("notebook"))
        report = None
        if notebook:
            candidate = Path(notebook).with_suffix(".report.html")
            report = str(candidate) if (self.path / candidate).is_file() else None
        params = raw.get("parameters")
        return RunbookEntry(
            name=raw["name"],
            status=str(raw.get("status") or "unknown"),
            error=raw.get("error") if isinstance(raw.get("error"), str) else None,
            notebook=notebook,
            html=self._rel(raw.get("html")),
            report_html=report,
            parameters=params if isinstance(params, dict) else {},
        )

    def _unproven(self, raw: dict[str, Any], entry: RunbookEntry) -> str | None:
        """Why an entry cannot be cited: a finished runbook always leaves its executed notebook,
        listed in the manifest (and among its outputs); an entry without one was written by hand."""
        if entry.status == "running":
            return None
        if not entry.notebook or entry.notebook not in self.manifest:
            return f"run.json has an entry for {entry.name} but its executed notebook is not in the run's manifest"
        outputs = raw.get("outputs")
        if isinstance(outputs, list) and entry.notebook not in outputs:
            return f"{entry.name}'s executed notebook is not among the files its run.json entry wrote"
        return None

    def entry(self, name: str) -> RunbookEntry | None:
        return self.entries.get(name)

    def exists(self, rel: str) -> bool:
        return (self.path / rel).is_file()

    def artefact(self, rel: str) -> str | None:
        """The newest attempt of ``rel`` (``name.json``, ``name-2.json``…) the manifest lists, or None.

        Through ``runjson.newest_listed`` (the rule ``runs.load_result`` follows: a rerun writes
        ``-2`` and the record must cite that one, never the stale fixed name) with the manifest this
        view read once, so a record build parses run.json once, not once per file.
        """
        listed = self.manifest if (self.path / RUN_JSON).exists() else None
        try:
            found = newest_listed(self.path, rel, listed)
        except ArtefactError as exc:
            raise RecordRefused(str(exc)) from exc
        if found is None:
            return None
        name = (Path(rel).parent / found.name).as_posix()
        if not (self.path / RUN_JSON).exists():
            return name
        if name not in self.manifest or (self.outputs is not None and name not in self.outputs):
            return None  # listed by no recorded runbook: never cited
        return name

    def citable(self) -> dict[str, str] | None:
        """The manifest entries a recorded runbook wrote (None: no run.json, every file counts)."""
        if not (self.path / RUN_JSON).exists():
            return None
        return {k: v for k, v in self.manifest.items() if self.outputs is None or k in self.outputs}

    def results(self) -> RunResults:
        """Every proven runbook's result, read back typed once (``runs.load_results``) against the
        manifest this view read, each with the file and sha256 it was read from."""
        if self._results is None:
            from ..execution.runs import load_results

            self._results = load_results(self.path, list(self.entries), manifest=self.citable(), hashed=self.hashed)
        return self._results

    def result(self, runbook: str) -> Any:
        """``runbook``'s typed result, or None (then :meth:`unread` says why)."""
        return self.results().results.get(runbook)

    def result_file(self, runbook: str) -> str | None:
        """The file (relative to the run directory) ``runbook``'s result was read from: what a citation names."""
        found = self.results().read_from.get(runbook)
        return found["rel"] if found else None

    def unread(self, runbook: str) -> str:
        """Why ``runbook`` has no typed result here ("" when it has one)."""
        if self.result(runbook) is not None:
            return ""
        entry = self.entries.get(runbook)
        if entry is None:
            return self.unproven.get(runbook) or f"{runbook} did not run"
        why = self.results().refused.get(runbook)
        if why:
            return why
        return f"{runbook} {entry.status}: {entry.error or 'no result read back'}"

    def verdict(self, runbook: str) -> str | None:
        """The verdict ``runbook``'s own result gives (never run.json's copy of it)."""
        result = self.result(runbook)
        return result.headline().verdict if result is not None else None

    def key_figures(self, runbook: str) -> dict[str, Any]:
        """The key figures ``runbook``'s own result gives ({} when it has none)."""
        result = self.result(runbook)
        return dict(result.headline().figures) if result is not None else {}

    def evidence(self) -> tuple[Any, str]:
        """Runbook 01's typed ``Evidence`` and, when None, why not."""
        return self.result("evidence_capture"), self.unread("evidence_capture")

    def suite(self) -> Any:
        """The suite's plan (``SuiteResult``) when the suite ran this run, else None."""
        from ..execution.suite import SUITE_FILE, SuiteResult
        from ..records import rebuild

        try:
            saved = read_checked_json(
                self.path, SUITE_FILE, SuiteResult.SCHEMA, manifest=self.citable(), hashed=self.hashed
            )
            return rebuild(SuiteResult, saved.data)
        except (OSError, ValueError, TypeError, KeyError):
            return None
