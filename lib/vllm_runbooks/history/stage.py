"""Runbook 08's stage: ``Config`` (its parameters) and ``run(config) -> History``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..records import Record
from .detect import add_derived, detect, load_rules
from .model import History
from .read import read_points


@dataclasses.dataclass
class Config(Record):
    """The notebook's parameters, typed."""

    SCHEMA = "validation_history_config"

    runs_dir: str
    max_runs: int = 500
    rules_file: str | None = None
    run_dir: str | None = None  # where this history is saved: never read as one of the runs


def run(config: Config) -> History:
    """Read every run under ``runs_dir``, add derived figures, find regressions."""
    rules = load_rules(config.rules_file)
    points = read_points(Path(config.runs_dir), max_runs=max(1, min(int(config.max_runs), 10_000)))
    if config.run_dir:
        own = Path(config.run_dir).resolve()
        points = [p for p in points if Path(p.run_dir).resolve() != own]
    readable = [p for p in points if p.status != "unreadable"]
    add_derived(readable, rules)
    regressions = detect(readable, rules)
    watched: dict[str, str] = {}
    for p in readable:
        for name in p.figures:
            rule = rules.rule_for(name)
            if rule:
                watched.setdefault(name, rule.label)
    return History(
        runs_dir=str(config.runs_dir),
        points=[p.to_dict() for p in readable],
        regressions=[r.to_dict() for r in regressions],
        watched=watched,
        unreadable=[{"run": p.run_id, "reason": p.reason or ""} for p in points if p.status == "unreadable"],
    )
