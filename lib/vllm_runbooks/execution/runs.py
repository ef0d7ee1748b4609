"""Reading run directories back: list past runs, compare their headlines, rebuild their results.

The platform owner's question is "what changed between the failed launch and the canary after the
upgrade?"; run.json answers it without opening notebooks. Unreadable run directories are listed
with the reason instead of being skipped silently.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ..records import Record
from ..resources import default_runs_dir
from .runjson import (
    APPROVALS_DIR,
    RUN_JSON,
    UNLISTED,
    UNREAD,
    check_run,
    read_run_json,
    run_manifest,
    running_state,
    signature_status,
)


@dataclasses.dataclass
class RunSummary(Record):
    """One run directory as a row: status and each runbook's verdict and figures."""

    SCHEMA = "run_summary"

    run_dir: str
    status: str  # ok | failed | unreadable
    created_at: str | None = None
    verdicts: dict[str, str | None] = dataclasses.field(default_factory=dict)
    figures: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    reason: str | None = None
    tampered: list[str] = dataclasses.field(default_factory=list)
    #: With ``verify``: how far this machine vouches for run.json (``runjson.signature_status``).
    signature: str | None = None
    signature_why: str | None = None


def summarise_run(run_dir: str | Path, verify: bool = False) -> RunSummary:
    """run.json → RunSummary; with ``verify`` the artefacts' sha256 are checked against it."""
    path = Path(run_dir)
    try:
        data = read_run_json(path / RUN_JSON)
    except FileNotFoundError:
        return RunSummary(str(path), "unreadable", reason="no run.json (interrupted before the first runbook ended?)")
    except (OSError, ValueError) as exc:
        return RunSummary(str(path), "unreadable", reason=f"run.json unreadable: {exc}")
    if not isinstance(data, dict):
        return RunSummary(str(path), "unreadable", reason=f"run.json holds a {type(data).__name__}, not an object")
    entries = data.get("runbooks")
    if not isinstance(entries, list):
        return RunSummary(str(path), "unreadable", reason="run.json has no list of runbooks")
    verdicts: dict[str, str | None] = {}
    figures: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    status = data.get("status") if isinstance(data.get("status"), str) else "unknown"
    for entry in entries:
        if not isinstance(entry, dict):
            problems.append(f"a runbooks entry is a {type(entry).__name__}, not an object")
            status = "unreadable"
            continue
        name = str(entry.get("name", "?"))
        if entry.get("status") == "running":
            state = running_state(entry)
            verdicts[name] = state
            if state == "interrupted":
                problems.append(f"{name} was interrupted (started {entry.get('started_at')}, never finished)")
                status = "interrupted"
            elif status != "interrupted":
                status = "running"
            continue
        head = entry.get("headline") if isinstance(entry.get("headline"), dict) else {}
        verdict = head.get("verdict")
        verdicts[name] = verdict if isinstance(verdict, str | type(None)) else str(verdict)
        figures[name] = head.get("figures") if isinstance(head.get("figures"), dict) else {}
    tampered = _verify(path, data) if verify else []
    signature, signature_why = signature_status(data) if verify else (None, None)
    return RunSummary(
        run_dir=str(path),
        status=status,
        created_at=data.get("created_at") if isinstance(data.get("created_at"), str) else None,
        verdicts=verdicts,
        figures=figures,
        reason="; ".join(problems) or None,
        signature=signature,
        signature_why=signature_why,
        tampered=tampered,
    )


def _verify(path: Path, data: dict[str, Any]) -> list[str]:
    """What no longer matches run.json, through the one verifier (``runjson.check_run``): changed
    or missing artefacts, files the manifest does not list (a notebook left by a killed run), run.json
    itself when its signature does not match, and approvals whose evidence changed.

    An unsigned run.json that lists nothing is not called edited (see ``runjson``): it vouches for
    nothing, so every file beside it is flagged as unlisted, and ``signature`` says ``unsigned``.
    """
    hashed: dict[str, str] = {}
    check = check_run(path, data, unlisted=True, hashed=hashed)
    found = [f"{RUN_JSON} (edited: its signature does not match)"] if check.state == "edited" else []
    found += [f"{c.rel} (not in the manifest)" if c.status == UNLISTED else c.rel for c in check.problems]
    if (path / APPROVALS_DIR).is_dir():
        from ..change_record.approvals import check_approvals  # the record package reads this layer, not the reverse

        found += [
            f"{c.file} (approval by {c.approver}: {c.status}: {c.why})"
            for c in check_approvals(path, hashed=hashed)
            if c.status in ("stale", "forged", "unreadable")
        ]
    return found


def list_runs(base: str | Path | None = None) -> list[RunSummary]:
    """Every run directory under ``base`` (default ``runs/``), oldest first."""
    root = Path(base or default_runs_dir())
    if not root.is_dir():
        return []
    return [summarise_run(p) for p in sorted(root.iterdir()) if p.is_dir()]


@dataclasses.dataclass
class RunComparison(Record):
    """Headline figures of several runs side by side; ``changed`` lists rows that differ."""

    SCHEMA = "run_comparison"

    runs: list[RunSummary]
    rows: list[dict[str, Any]]
    changed: list[str]

    def _repr_html_(self) -> str:
        from ..display import html_table

        columns = ["runbook", "figure"] + [Path(r.run_dir).name for r in self.runs]
        marked = [
            {
                **row,
                "figure": ("≠ " if f"{row['runbook']}.{row['figure']}" in self.changed else "") + str(row["figure"]),
            }
            for row in self.rows
        ]
        return html_table(marked, columns)

    def to_frame(self) -> Any:
        """The comparison rows as a DataFrame (pandas imported only here)."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def compare_runs(run_dirs: list[str | Path]) -> RunComparison:
    """Verdicts and headline figures of each runbook, one column per run."""
    runs = [summarise_run(d) for d in run_dirs]
    names = [Path(r.run_dir).name for r in runs]
    keys: dict[tuple[str, str], None] = {}
    for run in runs:
        for book in run.verdicts:
            keys.setdefault((book, "verdict"), None)
            for fig in run.figures.get(book, {}):
                keys.setdefault((book, fig), None)
    rows: list[dict[str, Any]] = []
    changed: list[str] = []
    for book, fig in keys:
        values = []
        for run in runs:
            value = run.verdicts.get(book) if fig == "verdict" else run.figures.get(book, {}).get(fig)
            values.append(value)
        row = {"runbook": book, "figure": fig}
        row.update({name: _cell(v) for name, v in zip(names, values, strict=True)})
        rows.append(row)
        if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1:
            changed.append(f"{book}.{fig}")
    return RunComparison(runs=runs, rows=rows, changed=changed)


def load_result(run_dir: str | Path, runbook: str) -> Any:
    """Rebuild what ``runbook`` concluded in ``run_dir`` from the artefact it saved.

    Later stages read earlier results through it (02–05 read runbook 01's evidence here); 06
    reads every result of a run at once through :func:`load_results` (the newest attempt
    run.json's manifest lists, with the file and sha256 it was read from). The result class
    is found by runbook name in the stage registry, the file is checked against run.json's sha256
    manifest, and a changed, unlisted or unreadable file raises ``runjson.ArtefactError`` naming it.
    ``runbook`` may carry its number (``01_evidence_capture``). A missing artefact raises
    ``FileNotFoundError``.
    """
    from ..stage import load_result as _load

    return _load(run_dir, runbook)


@dataclasses.dataclass
class RunResults(Record):
    """Every runbook result a run saved, read back typed once, with the file each was read from
    (``read_from``: relative path and sha256, what a citation names), or the reason it was not."""

    SCHEMA = "run_results"

    run_dir: str
    results: dict[str, Any] = dataclasses.field(default_factory=dict)  # runbook → stage result
    refused: dict[str, str] = dataclasses.field(default_factory=dict)  # runbook → why it was not read
    read_from: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)  # runbook → rel, sha256

    def _repr_html_(self) -> str:
        from ..display import esc, html_table

        rows = [
            {"runbook": name, "verdict": result.headline().verdict, "read back": "yes"}
            for name, result in self.results.items()
        ] + [{"runbook": name, "verdict": None, "read back": why} for name, why in self.refused.items()]
        return f"<p><b>{esc(Path(self.run_dir).name)}</b></p>" + html_table(rows, ["runbook", "verdict", "read back"])


def load_results(
    run_dir: str | Path,
    names: list[str] | None = None,
    *,
    manifest: Any = UNREAD,
    hashed: dict[str, str] | None = None,
) -> RunResults:
    """Each runbook run.json lists (or each of ``names``), rebuilt typed; never raises for one bad result.

    Why: the change record (runbook 06) and the run comparison read every stage of a run; one
    refused artefact (missing, or changed since the run) is named, and the others are still read. A reader
    that already holds the run's manifest (and a hash memo) passes them: run.json is then not
    parsed again and no file is hashed twice.
    """
    from ..stage import read_result, result_class

    out = RunResults(run_dir=str(run_dir))
    if names is None:
        try:
            names = [e.get("name") for e in read_run_json(Path(run_dir) / RUN_JSON)["runbooks"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            out.refused[RUN_JSON] = f"unreadable: {exc}"
            return out
    if manifest is UNREAD:
        try:
            manifest = run_manifest(run_dir)
        except ValueError as exc:  # ArtefactError: run.json cannot vouch for any file
            out.refused[RUN_JSON] = str(exc)
            return out
    for name in dict.fromkeys(n for n in names if isinstance(n, str)):
        try:
            result_class(name)
        except KeyError:
            continue  # a runbook without a registered result (an older or external one): nothing to read
        try:
            loaded = read_result(run_dir, name, manifest=manifest, hashed=hashed)
        except (OSError, ValueError) as exc:  # not saved, changed since, or not of its kind: said
            out.refused[name] = str(exc)
            continue
        try:
            loaded.result.headline()  # a verdict outside its runbook's vocabulary: the file is not its result
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            out.refused[name] = f"{loaded.rel}: its headline does not read ({exc})"
            continue
        out.results[name] = loaded.result
        out.read_from[name] = {"rel": loaded.rel, "sha256": loaded.sha256}
    return out


def _cell(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, default=str)
    return value
