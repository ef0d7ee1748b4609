"""Runbook templates: finding them, and the one reader of what parameters each declares.

Why one reader: the runner refuses a name a template does not declare, the suite routes shared
values to the runbooks that declare them, the console builds its widgets from them and the CLI
and tests check the documentation against them. When each had its own parser, an annotated
parameter (``x: int = 3``) was accepted by the runner and dropped from the suite's routing. Here
the ``parameters`` cell is parsed once with ``ast`` (never executed, as papermill's own
inspection also refuses to), and the first markdown cell's table gives each one's meaning.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

from ..bounded import load_json
from ..records import Record
from ..resources import templates_dir
from .parameters import RunbookError

_ROW = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|(.*)\|\s*$")
_TEMPLATE_RE = re.compile(r"^(\d\d)_(.+)\.ipynb$")
#: A template larger than this is refused unread (a real one is tens of KiB).
MAX_TEMPLATE_BYTES = 4 << 20


@dataclasses.dataclass
class Parameter(Record):
    """One declared parameter. ``kind``: bool, int, float, str, list, dict or any (default None)."""

    SCHEMA = "runbook_parameter"

    name: str
    default: Any
    kind: str
    meaning: str = ""


def available_runbooks(templates: Path | None = None) -> dict[str, Path]:
    """Runbook name (without its number) → template path, in procedure order."""
    folder = templates or templates_dir()
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.ipynb")):
        match = _TEMPLATE_RE.match(path.name)
        if match:
            found[match.group(2)] = path
    return found


def runbook_name(template: Path) -> str:
    """``canary_validation`` for ``03_canary_validation.ipynb``."""
    match = _TEMPLATE_RE.match(Path(template).name)
    if not match:
        raise RunbookError(f"{template}: not a runbook template name (NN_name.ipynb)")
    return match.group(2)


def resolve_runbook(name: str, templates: Path | None = None) -> Path:
    """The template of ``name`` (with or without its number or ``.ipynb``); RunbookError if unknown."""
    books = available_runbooks(templates)
    key = re.sub(r"^\d\d_", "", name).removesuffix(".ipynb")
    if key not in books:
        where = templates or templates_dir()
        raise RunbookError(f"unknown runbook {name!r}; available: {', '.join(books) or f'(none in {where})'}")
    return books[key]


def template_sha256(template: Path) -> str:
    """sha256 of the template's bytes: run.json names exactly which runbook text was executed."""
    return hashlib.sha256(Path(template).read_bytes()).hexdigest()


def read_template(template: Path) -> dict[str, Any]:
    """The template's JSON, bounded; RunbookError naming the file when it is not a notebook."""
    path = Path(template)
    try:
        nb, _ = load_json(path, MAX_TEMPLATE_BYTES)  # the one bounded JSON reader: size and depth
    except (OSError, ValueError) as exc:
        raise RunbookError(f"{path}: unreadable template ({exc})") from exc
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise RunbookError(f"{path}: not a notebook (no cells)")
    return nb


def cell_source(cell: dict[str, Any]) -> str:
    """A cell's source as one string (nbformat allows a string or a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def parameters_cell(nb: dict[str, Any]) -> dict[str, Any] | None:
    """The cell tagged ``parameters`` (papermill's rule: the first one), or None."""
    for cell in nb.get("cells", []):
        if isinstance(cell, dict) and "parameters" in ((cell.get("metadata") or {}).get("tags") or []):
            return cell
    return None


def documented_parameters(nb: dict[str, Any]) -> dict[str, str]:
    """Name → meaning from the first markdown cell's table rows (``| `name` | … | meaning |``)."""
    for cell in nb.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            found: dict[str, str] = {}
            for line in cell_source(cell).splitlines():
                match = _ROW.match(line.strip())
                if match:
                    cells = [c.strip() for c in match.group(2).split("|")]
                    found[match.group(1)] = cells[-1] if cells else ""
            return found
    return {}


def _kind(value: Any) -> str:
    for kind in (bool, int, float, str, list, dict):
        if isinstance(value, kind):
            return kind.__name__
    return "any"


def declared_parameters(template: str | Path) -> list[Parameter]:
    """Parameters of a runbook template, in the order its ``parameters`` cell assigns them.

    ``x = 1``, ``x: int = 1`` and ``x = y = 1`` all declare. A default that is not a literal (an
    expression) is reported with kind ``any`` and default None (any value accepted) rather than
    evaluated; an
    annotation without a value (``x: int``) declares nothing, since papermill would have no
    default to replace. A template without a parameters cell declares none.
    """
    path = Path(template)
    nb = read_template(path)
    cell = parameters_cell(nb)
    if cell is None:
        return []
    try:
        tree = ast.parse(cell_source(cell))
    except SyntaxError as exc:
        raise RunbookError(f"{path}: the parameters cell is not valid Python ({exc})") from exc
    meanings = documented_parameters(nb)
    params: dict[str, Parameter] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            default: Any = ast.literal_eval(value)
            kind = _kind(default)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            default, kind = None, "any"
        for target in targets:
            if isinstance(target, ast.Name):
                params[target.id] = Parameter(target.id, default, kind, meanings.get(target.id, ""))
    return list(params.values())


def parameter_defaults(template: str | Path) -> dict[str, Any]:
    """Name → default of the template's parameters (None for a non-literal): the names a run may set."""
    return {p.name: p.default for p in declared_parameters(template)}
