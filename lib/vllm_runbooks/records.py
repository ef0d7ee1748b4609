"""Typed, versioned records: the contract between runbook stages.

Every record is a dataclass that serialises to plain JSON (for scraps, evidence files and
run.json) and reads back without Jupyter. ``schema`` names the record kind and
``schema_version`` lets a later reader refuse or adapt an older file instead of guessing.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import functools
import json
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="Record")
_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """Plain-JSON view of dataclasses, enums, paths, dates, sets and tuples."""
    if type(value) in _PLAIN:  # most leaves: nothing to convert (a str enum is not exactly a str)
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if isinstance(value, Record) and type(value).to_dict is not Record.to_dict:
            # A record that says how it is written (a startup log replaced by its length, derived
            # rates added) is written that way nested too, or the log it leaves out gets stored.
            return value.to_dict()
        return _fields_jsonable(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def _fields_jsonable(value: Any) -> dict[str, Any]:
    """A dataclass's fields as plain JSON (``schema`` and ``schema_version`` first for a record)."""
    out = {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Record):
        out = {"schema": value.SCHEMA, "schema_version": value.SCHEMA_VERSION, **out}
    return out


class Record:
    """Mixin for dataclass records. Subclasses set SCHEMA and SCHEMA_VERSION.

    Why a mixin and not a base dataclass: records keep their own field order and defaults, and
    every one gets the same JSON shape (``schema``, ``schema_version``, fields) for free.
    """

    SCHEMA: ClassVar[str] = "record"
    SCHEMA_VERSION: ClassVar[int] = 1

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``schema``, ``schema_version`` and the fields), for scraps and files."""
        return _fields_jsonable(self)

    def to_json(self, indent: int | None = 2) -> str:
        """The record as JSON text (non-ASCII kept: log excerpts are quoted as they are)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, ensure_ascii=False)

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        """Read the record back deeply (:func:`rebuild`): nested records, enums and optionals typed,
        unknown keys ignored so newer files still load, a newer ``schema_version`` refused.

        Override only where a field needs more than its annotation says (a legacy shape to adapt).
        """
        return rebuild(cls, data)

    def scrap(self) -> dict[str, Any]:
        """What gets glued into a notebook: the record's plain JSON."""
        return self.to_dict()


def check_schema_version(cls: type, data: dict[str, Any]) -> None:
    """The one schema-version check: a file written by a newer library is refused, never half-read."""
    version = data.get("schema_version", getattr(cls, "SCHEMA_VERSION", 1))
    if isinstance(version, int) and version > getattr(cls, "SCHEMA_VERSION", 1):
        name = getattr(cls, "SCHEMA", cls.__name__)
        raise ValueError(
            f"{name} schema_version {version} is newer than this library reads "
            f"({getattr(cls, 'SCHEMA_VERSION', 1)}); upgrade vllm-runbooks"
        )


def rebuild(cls: type[T], data: dict[str, Any]) -> T:
    """Read a record back *deeply*: nested records, lists and dicts of them, enums, optionals.

    For results saved by one runbook and read by another (``runs.load_result``): every part comes
    back typed from its field annotations, so a reader never handles half-dicts. Records with
    their own ``from_dict`` are rebuilt through it; unknown keys are ignored, and a newer
    ``schema_version`` than this library knows is refused. A value of the wrong shape (a string
    where a list, a mapping or a nested record belongs, an enum value outside its vocabulary)
    raises ``TypeError`` naming the field: a reader gets a typed record or a refusal, never a
    half-typed one it would crash on.
    """
    check_schema_version(cls, data)
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.init and f.name in data:
            try:
                kwargs[f.name] = _rebuild_value(hints.get(f.name, Any), data[f.name])
            except TypeError as exc:
                raise TypeError(f"{cls.__name__}.{f.name}: {exc}") from None
    return cls(**kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A record class's field annotations, resolved once per class (resolving compiles each string)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation only importable for type checkers: keep values as read
        return {}


def _shape(value: Any) -> str:
    return type(value).__name__


def _rebuild_value(tp: Any, value: Any) -> Any:
    """One value of annotation ``tp`` from its plain JSON form (see :func:`rebuild`)."""
    if value is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        errors = []
        for arg in sorted(options, key=lambda a: not (isinstance(a, type) and dataclasses.is_dataclass(a))):
            try:
                return _rebuild_value(arg, value)
            except TypeError as exc:
                errors.append(str(exc))
        raise TypeError("; ".join(errors) or f"no annotation fits a {_shape(value)}")
    if origin is list or tp is list:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got a {_shape(value)}")
        return [_rebuild_value(args[0], v) for v in value] if args else value
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected a mapping, got a {_shape(value)}")
        return {k: _rebuild_value(args[1], v) for k, v in value.items()} if len(args) == 2 else value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value  # already built (a record's own from_dict built its parts)
        if not isinstance(value, dict):
            raise TypeError(f"expected a {tp.__name__} record, got a {_shape(value)}")
        custom = getattr(tp, "from_dict", None)
        if issubclass(tp, Record) and custom is not None and custom.__func__ is not Record.from_dict.__func__:
            return custom(value)
        return rebuild(tp, value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise TypeError(f"{value!r} is not one of {[m.value for m in tp]}") from None
    return value


def utc_now() -> str:
    """Now in UTC, second precision, ``Z``-suffixed: the one timestamp format of every record."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
