"""The console's procedure: the steps, each one's parameters, and what a verdict means next.

Parameters come from each runbook template's own declaration (``execution.templates``), so a
parameter added to a runbook shows up in the console; the data file only says which are shown
up front and which are filled from the incident.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..execution.templates import Parameter, available_runbooks, declared_parameters

STEPS_FILE = Path(__file__).resolve().parents[1] / "data" / "console_steps.yaml"
#: never shown: the console sets them
HIDDEN = frozenset({"run_dir"})


@dataclasses.dataclass
class StepSpec:
    """One step of the procedure as the console shows it."""

    runbook: str
    title: str
    template: Path | None  # None: the runbook is not installed here (yet)
    primary: list[Parameter] = dataclasses.field(default_factory=list)
    more: list[Parameter] = dataclasses.field(default_factory=list)
    from_incident: list[str] = dataclasses.field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.template is not None

    @property
    def number(self) -> str:
        return self.template.name[:2] if self.template else self.title[:2]


def _read(path: Path | None) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((path or STEPS_FILE).read_text(encoding="utf-8")) or {}


def load_plan(steps_file: Path | None = None, templates: Path | None = None) -> list[StepSpec]:
    """The steps in order, with parameters read from the templates that exist."""
    data = _read(steps_file)
    books = available_runbooks(templates)
    plan = []
    for raw in data.get("steps") or []:
        template = books.get(raw["runbook"])
        spec = StepSpec(raw["runbook"], raw.get("title", raw["runbook"]), template)
        spec.from_incident = list(raw.get("from_incident") or [])
        if template is not None:
            declared = [p for p in declared_parameters(template) if p.name not in HIDDEN]
            declared = [p for p in declared if p.name not in spec.from_incident]
            wanted = list(raw.get("primary") or [])
            spec.primary = sorted((p for p in declared if p.name in wanted), key=lambda p: wanted.index(p.name))
            spec.more = [p for p in declared if p.name not in wanted]
            spec.from_incident = [n for n in spec.from_incident if n in {p.name for p in declared_parameters(template)}]
        plan.append(spec)
    return plan


def shared_parameters(steps_file: Path | None = None) -> list[str]:
    """Parameters whose value, typed in one step, pre-fills the later steps."""
    return list(_read(steps_file).get("shared") or [])


def guidance_for(runbook: str, verdict: str | None, steps_file: Path | None = None) -> str:
    """What the verdict means for the next step, in one or two sentences."""
    table = (_read(steps_file).get("guidance") or {}).get(runbook) or {}
    if verdict is None:
        return "No verdict was recorded: read the executed notebook before going on."
    return str(table.get(verdict) or table.get("*") or f"Verdict {verdict}: read the notebook, then go on.")
