"""Read every run directory's run.json into points: one per (run, runbook), figures flattened.

Generic on purpose: a runbook's headline (verdict + figures) is all that is read, so runbooks
added later appear without code. Bounded: at most ``max_runs`` run directories (the newest), a
run.json within the one bound every reader uses (``runjson.RUN_JSON_MAX_BYTES``: a run that
``runs`` lists is never refused here), nested figures to depth 3; an unreadable run is kept as a
point with the reason, never dropped silently.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from ..execution.runjson import RUN_JSON, read_run_json
from ..records import Record

MAX_DEPTH = 3
#: the history's own runbook: its entries are not part of the history it draws
SELF = "validation_history"


@dataclasses.dataclass
class Point(Record):
    """One runbook's result in one run: when, verdict, status and its numeric figures."""

    SCHEMA = "history_point"

    run_id: str
    run_dir: str
    at: str  # the runbook's start (UTC, ISO 8601); the run's creation when absent
    runbook: str
    verdict: str | None
    status: str
    figures: dict[str, float] = dataclasses.field(default_factory=dict)
    reason: str | None = None


def flatten(figures: Any, prefix: str, depth: int = 0) -> dict[str, float]:
    """Numeric leaves of a headline's figures as ``prefix.key.sub`` → float (bools and NaN left out)."""
    out: dict[str, float] = {}
    if isinstance(figures, dict) and depth < MAX_DEPTH:
        for key, value in figures.items():
            out.update(flatten(value, f"{prefix}.{key}", depth + 1))
    elif isinstance(figures, int | float) and not isinstance(figures, bool):
        if math.isfinite(figures):
            out[prefix] = float(figures)
    return out


def _run_points(run_dir: Path) -> list[Point]:
    path = run_dir / RUN_JSON
    try:
        data = read_run_json(path)  # the one bound, in size and depth
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            raise ValueError("not a run record")
    except FileNotFoundError:
        return [Point(run_dir.name, str(run_dir), "", "?", None, "unreadable", reason="no run.json")]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [Point(run_dir.name, str(run_dir), "", "?", None, "unreadable", reason=f"run.json: {exc}")]
    created = str(data.get("created_at") or "")
    points = []
    for entry in data["runbooks"]:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or "?")
        if name == SELF:
            continue
        head = entry.get("headline") if isinstance(entry.get("headline"), dict) else {}
        verdict = head.get("verdict") if isinstance(head.get("verdict"), str) else None
        points.append(
            Point(
                run_id=run_dir.name,
                run_dir=str(run_dir),
                at=str(entry.get("started_at") or created),
                runbook=name,
                verdict=verdict,
                status=str(entry.get("status") or "unknown"),
                figures=flatten(head.get("figures") or {}, name),
            )
        )
    return points


def read_points(runs_dir: str | Path, max_runs: int = 500) -> list[Point]:
    """Points of the newest ``max_runs`` run directories under ``runs_dir``, oldest first."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    dirs = sorted((p for p in root.iterdir() if p.is_dir() and not p.is_symlink()), key=lambda p: p.name)
    points = [pt for d in dirs[-max_runs:] for pt in _run_points(d)]
    return sorted(points, key=lambda p: (p.at, p.run_id, p.runbook))
