"""One run directory per incident: create it, reopen it, and read where each step stands.

Every press of Run writes into the incident's run directory and never over an earlier file:
before a step is run again (after a cancel or a failure), its earlier notebook and HTML copy are
moved to ``attempts/`` (exclusive names), and the cancellation itself is recorded in run.json
with ``status: cancelled``, so the record shows every attempt.
"""

from __future__ import annotations

import dataclasses
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any

from ..execution.runjson import RUN_JSON, move_artefact, read_run_json, record_run, running_state
from ..execution.runner import RunbookResult, new_run_dir
from ..records import utc_now
from ..resources import default_runs_dir

ATTEMPTS = "attempts"
INCIDENT_LABEL = "incident"


@dataclasses.dataclass
class StepRecord:
    """The latest attempt of one runbook in this incident, as run.json has it."""

    runbook: str
    status: str  # ok | failed | cancelled
    verdict: str | None
    figures: dict[str, Any]
    notebook: str | None
    html: str | None
    error: str | None
    duration_s: float | None
    parameters: dict[str, Any] = dataclasses.field(default_factory=dict)


class Incident:
    """An incident's run directory."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir).resolve()

    @classmethod
    def create(cls, base: str | Path | None = None, label: str = INCIDENT_LABEL) -> Incident:
        """A new incident: a fresh run directory (exclusive create, never an existing one)."""
        return cls(new_run_dir(Path(base or default_runs_dir()), label=label))

    @classmethod
    def open(cls, run_dir: str | Path) -> Incident:
        """Reopen an existing incident; refuses a path that is not a readable run directory."""
        path = Path(run_dir).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no such run directory")
        incident = cls(path)
        incident.records()  # raises ValueError on an unreadable run.json
        return incident

    def run_json(self) -> dict[str, Any]:
        path = self.run_dir / RUN_JSON
        if not path.exists():
            return {"runbooks": []}
        try:
            data = read_run_json(path)  # the one bounded run.json reader (size and depth)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{path} is unreadable ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            raise ValueError(f"{path} is not a run record")
        return data

    def records(self) -> dict[str, StepRecord]:
        """runbook → its latest attempt."""
        out: dict[str, StepRecord] = {}
        for entry in self.run_json()["runbooks"]:
            if not isinstance(entry, dict) or not entry.get("name"):
                continue
            head = entry.get("headline") if isinstance(entry.get("headline"), dict) else {}
            out[entry["name"]] = StepRecord(
                runbook=entry["name"],
                status=str(entry.get("status")),
                verdict=head.get("verdict"),
                figures=head.get("figures") if isinstance(head.get("figures"), dict) else {},
                notebook=entry.get("notebook"),
                html=entry.get("html"),
                error=entry.get("error"),
                duration_s=entry.get("duration_s"),
                parameters=entry.get("parameters") if isinstance(entry.get("parameters"), dict) else {},
            )
        return out

    def attempts(self) -> list[dict[str, Any]]:
        """Every attempt in the order it was recorded (runbook, status, verdict)."""
        return [
            {"runbook": e.get("name"), "status": e.get("status"), "verdict": (e.get("headline") or {}).get("verdict")}
            for e in self.run_json()["runbooks"]
            if isinstance(e, dict)
        ]

    def move_aside(self, template_name: str, why: str) -> list[Path]:
        """Move an earlier attempt's notebook and HTML to ``attempts/`` (never over a file).

        The run's sha256 manifest follows the move, so the attempt stays verifiable.
        """
        moved = []
        stem = Path(template_name).stem
        for suffix in (".ipynb", ".html"):
            source = self.run_dir / f"{stem}{suffix}"
            if not source.exists():
                continue
            folder = self.run_dir / ATTEMPTS
            folder.mkdir(exist_ok=True)
            for n in range(1, 1000):
                target = folder / f"{stem}-{why}-{n}{suffix}"
                try:
                    move_artefact(self.run_dir, source, target)  # exclusive: fails when the name is taken
                except FileExistsError:
                    continue
                moved.append(target)
                break
        return moved

    def record_cancelled(self, runbook: str, template_name: str, parameters: dict[str, Any], started: str,
                         duration_s: float) -> RunbookResult:  # fmt: skip
        """Record a cancelled step in run.json; its partial notebook is kept under attempts/.

        The killed runner left a ``running`` entry behind; the cancellation replaces it (the last
        such entry of this runbook whose process is gone), so the run does not stay "running".
        """
        stale = self._stale_running(runbook)
        moved = self.move_aside(template_name, "cancelled")
        notebook = next((str(p) for p in moved if p.suffix == ".ipynb"), "")
        result = RunbookResult(
            name=runbook,
            notebook=notebook,
            html=None,
            status="cancelled",
            started_at=started,
            ended_at=utc_now(),
            duration_s=round(duration_s, 2),
            parameters=parameters,
            error="cancelled from the incident console",
            headline=None,
            run_dir=str(self.run_dir),
        )
        record_run(self.run_dir, result, stale)
        return result

    def _stale_running(self, runbook: str) -> str | None:
        """entry_id of this runbook's last ``running`` entry whose process is no longer alive."""
        try:
            entries = self.run_json()["runbooks"]
        except ValueError:
            return None
        for entry in reversed(entries):
            if (
                isinstance(entry, dict)
                and entry.get("name") == runbook
                and entry.get("status") == "running"
                and isinstance(entry.get("entry_id"), str)
                and running_state(entry) == "interrupted"
            ):
                return str(entry["entry_id"])
        return None

    def prepare_rerun(self, template_name: str) -> None:
        """Before running a step again: keep the failed attempt's files under attempts/."""
        self.move_aside(template_name, "failed")

    def link(self, path: str | Path | None, from_dir: str | Path | None = None) -> str | None:
        """A link to ``path`` relative to the notebook's folder (JupyterLab opens those), or None.

        The path comes from run.json, which anyone who can write the run directory can edit: only
        a file inside this run directory gets a link, and the link is percent-encoded and starts
        with ``./`` or ``../``, so no ``javascript:`` (or any other scheme) can become clickable.
        """
        if not path or not isinstance(path, str | Path):
            return None
        try:
            target = (self.run_dir / path).resolve() if not Path(path).is_absolute() else Path(path).resolve()
            target.relative_to(self.run_dir.resolve())
            if not target.is_file():
                return None
        except (OSError, ValueError):
            return None
        rel = os.path.relpath(target, Path(from_dir or os.getcwd()).resolve()).replace(os.sep, "/")
        if not rel.startswith("../"):
            rel = "./" + rel
        return urllib.parse.quote(rel, safe="/.-_~")


def incident_id(run_dir: Path) -> str:
    """The short name people say: the run directory's name without the timestamp."""
    return re.sub(r"^\d{8}T\d{6}Z-", "", run_dir.name)
