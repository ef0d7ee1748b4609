"""Regressions in a history: the first run where a figure got worse beyond its threshold, or the
verdict went down a level.

Rules are data (``data/history_figures.yaml``): which figures to watch, which direction is worse,
how much is noise. Baseline = median of the previous ``window`` values of the same figure, so one
noisy run does not move it and a step change is flagged once, at the run where it starts.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..records import Record
from .read import Point

RULES_FILE = Path(__file__).resolve().parents[1] / "data" / "history_figures.yaml"


@dataclasses.dataclass
class Rule:
    """How one family of figures is judged."""

    pattern: str
    label: str
    better: str  # "higher" | "lower"
    absolute: float = 0.0
    relative: float = 0.0

    def matches(self, name: str) -> bool:
        return re.search(self.pattern, name) is not None

    def threshold(self, baseline: float) -> float:
        return max(self.absolute, self.relative * abs(baseline))


@dataclasses.dataclass
class Rules:
    """The rules file, read once."""

    window: int
    rules: list[Rule]
    derived: list[dict[str, str]]
    good: frozenset[str]
    bad: frozenset[str]

    def rule_for(self, name: str) -> Rule | None:
        return next((r for r in self.rules if r.matches(name)), None)

    def level(self, verdict: str | None) -> int | None:
        """2 good, 1 neutral, 0 bad; None when there is no verdict."""
        if verdict is None:
            return None
        return 2 if verdict in self.good else 0 if verdict in self.bad else 1


@dataclasses.dataclass
class Regression(Record):
    """A figure (or the verdict) that got worse at ``run_id``, against the runs before it."""

    SCHEMA = "history_regression"

    run_id: str
    at: str
    runbook: str
    figure: str  # "<runbook>.<figure>" or "<runbook>.verdict"
    label: str
    value: Any
    baseline: Any
    threshold: float | None
    detail: str
    ongoing: bool = False  # the newest run is still worse than the baseline


def load_rules(path: str | Path | None = None) -> Rules:
    """Read the rules file; a malformed rule is an error naming it, not a silent skip."""
    from ..bounded import load_yaml

    data = load_yaml(path or RULES_FILE) or {}
    rules = []
    for i, raw in enumerate(data.get("rules") or []):
        try:
            rule = Rule(**raw)
            re.compile(rule.pattern)
        except (TypeError, re.error) as exc:
            raise ValueError(f"history rule #{i + 1} ({raw!r}): {exc}") from exc
        if rule.better not in ("higher", "lower"):
            raise ValueError(f"history rule #{i + 1}: better must be higher or lower, not {rule.better!r}")
        rules.append(rule)
    verdicts = data.get("verdicts") or {}
    return Rules(
        window=max(1, int(data.get("window", 5))),
        rules=rules,
        derived=list(data.get("derived") or []),
        good=frozenset(verdicts.get("good") or ()),
        bad=frozenset(verdicts.get("bad") or ()),
    )


def add_derived(points: Sequence[Point], rules: Rules) -> None:
    """Compute the ratio figures the rules file defines, in place (a zero denominator gives none)."""
    for point in points:
        for spec in rules.derived:
            num, den = point.figures.get(spec["numerator"]), point.figures.get(spec["denominator"])
            if num is not None and den:
                point.figures[spec["name"]] = round(num / den, 6)


def detect(points: Sequence[Point], rules: Rules) -> list[Regression]:
    """Every regression's first run, oldest first."""
    found: list[Regression] = []
    series: dict[str, list[tuple[Point, float]]] = {}
    verdicts: dict[str, list[Point]] = {}
    for point in points:
        if point.status == "unreadable":
            continue
        for name, value in point.figures.items():
            if rules.rule_for(name):
                series.setdefault(name, []).append((point, value))
        verdicts.setdefault(point.runbook, []).append(point)
    for name, values in series.items():
        rule = rules.rule_for(name)
        assert rule is not None
        in_regression = False
        for i, (point, value) in enumerate(values):
            before = [v for _, v in values[max(0, i - rules.window) : i]]
            if not before:
                continue
            baseline = statistics.median(before)
            worse = (baseline - value) if rule.better == "higher" else (value - baseline)
            limit = rule.threshold(baseline)
            if worse > limit:
                if not in_regression:
                    found.append(
                        Regression(
                            point.run_id,
                            point.at,
                            point.runbook,
                            name,
                            rule.label,
                            value,
                            baseline,
                            limit,
                            f"{name} {value:g} vs median {baseline:g} of the {len(before)} run(s) before "
                            f"({'lower' if rule.better == 'higher' else 'higher'} is worse; threshold {limit:g})",
                        )  # fmt: skip
                    )
                in_regression = True
            else:
                in_regression = False
        if in_regression:
            next(r for r in reversed(found) if r.figure == name).ongoing = True
    for runbook, pts in verdicts.items():
        judged = [(p, rules.level(p.verdict)) for p in pts if rules.level(p.verdict) is not None]
        for (before, was), (point, level) in zip(judged, judged[1:], strict=False):
            if level < was:  # type: ignore[operator]
                found.append(
                    Regression(
                        point.run_id,
                        point.at,
                        runbook,
                        f"{runbook}.verdict",
                        "verdict",
                        point.verdict,
                        before.verdict,
                        None,
                        f"{runbook} verdict {before.verdict} → {point.verdict}",
                        ongoing=judged[-1][1] < was,  # type: ignore[operator]
                    )  # fmt: skip
                )
    return sorted(found, key=lambda r: (r.at, r.run_id, r.figure))
