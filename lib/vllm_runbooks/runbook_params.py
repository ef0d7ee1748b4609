"""What parameters a runbook template declares: name, default, kind and meaning.

Why read the template instead of keeping a list: the console builds its widgets from it and the
scheduling examples are checked against it, so a parameter added to a runbook shows up in both
without another list to keep in step. The ``parameters`` cell gives names and defaults (parsed
with ``ast``, never executed); the first markdown cell's table gives each one's meaning.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from .records import Record

_ROW = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|(.*)\|\s*$")
MAX_TEMPLATE_BYTES = 4 << 20


@dataclasses.dataclass
class Parameter(Record):
    """One declared parameter. ``kind``: bool, int, float, str, list, dict or any (default None)."""

    SCHEMA = "runbook_parameter"

    name: str
    default: Any
    kind: str
    meaning: str = ""


def _kind(value: Any) -> str:
    for kind in (bool, int, float, str, list, dict):
        if isinstance(value, kind):
            return kind.__name__
    return "any"


def _meanings(markdown: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in markdown.splitlines():
        match = _ROW.match(line.strip())
        if match:
            cells = [c.strip() for c in match.group(2).split("|")]
            found[match.group(1)] = cells[-1] if cells else ""
    return found


def declared_parameters(template: str | Path) -> list[Parameter]:
    """Parameters of a runbook template, in the order its ``parameters`` cell assigns them.

    A default that is not a literal (an expression) is reported with kind ``any`` and default
    None rather than evaluated; a template without a parameters cell declares none.
    """
    path = Path(template)
    if path.stat().st_size > MAX_TEMPLATE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_TEMPLATE_BYTES} bytes, not a runbook template")
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    meanings: dict[str, str] = {}
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            meanings = _meanings(_source(cell))
            break
    params: list[Parameter] = []
    for cell in cells:
        if "parameters" not in (cell.get("metadata", {}).get("tags") or []):
            continue
        for node in ast.parse(_source(cell)).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            if not isinstance(target, ast.Name) or node.value is None:
                continue
            try:
                default = ast.literal_eval(node.value)
                kind = _kind(default)
            except ValueError:
                default, kind = None, "any"
            params.append(Parameter(target.id, default, kind, meanings.get(target.id, "")))
        break
    return params


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)
