"""Result files as their runbooks write them, for hand-made run directories.

Why: runbook 06 reads every result back typed (``runs.load_results``), so a test that writes a
result file by hand must write one its class reads. ``real_result`` takes the few fields a test
cares about, fills every other required field with its type's blank (``""``, ``0``, ``[]``, the
first member of an enum, a nested record completed the same way), builds the real result class
from it and returns that object's ``to_dict()``: the bytes a runbook's own ``save`` would hold.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

from vllm_runbooks.records import rebuild
from vllm_runbooks.stage import RESULT_MODULES, RESULTS_BY_SCHEMA, result_class


def _unwrap(tp: Any) -> tuple[Any, bool]:
    """(the type inside ``X | None``, whether None is allowed)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else Any), len(args) < len(typing.get_args(tp))
    return tp, False


def _blank(tp: Any) -> Any:
    inner, optional = _unwrap(tp)
    if optional:
        return None
    origin = typing.get_origin(inner) or inner
    if isinstance(origin, type) and issubclass(origin, enum.Enum):
        return next(iter(origin)).value
    if dataclasses.is_dataclass(origin):
        return complete(origin, {})
    return {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}}.get(origin, None)


def _fill(tp: Any, value: Any) -> Any:
    inner, _ = _unwrap(tp)
    origin = typing.get_origin(inner) or inner
    if dataclasses.is_dataclass(origin) and isinstance(value, dict):
        return complete(origin, value)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(inner) or (Any,)
        return [_fill(item, v) for v in value]
    return value


def complete(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every required field of record class ``cls`` present (nested records too)."""
    hints = typing.get_type_hints(cls)
    out = dict(data)
    for f in dataclasses.fields(cls):
        if f.name in out:
            out[f.name] = _fill(hints[f.name], out[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            out[f.name] = _blank(hints[f.name])
    return out


def registered(schema: Any) -> type | None:
    """The result class of a schema name (every runbook's result module imported), or None."""
    for runbook in RESULT_MODULES:
        result_class(runbook)  # imports each runbook's result module once
    return RESULTS_BY_SCHEMA.get(schema) if isinstance(schema, str) else None


def real_result(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (naming its ``schema``) built into the real result class and written back as it saves."""
    cls = registered(data.get("schema"))
    if cls is None:
        raise KeyError(f"no result class for schema {data.get('schema')!r}")
    filled = complete(cls, {k: v for k, v in data.items() if k not in ("schema", "schema_version")})
    own = getattr(cls, "from_dict", None)
    built = own(filled) if own is not None and "from_dict" in vars(cls) else rebuild(cls, filled)
    return built.to_dict()
