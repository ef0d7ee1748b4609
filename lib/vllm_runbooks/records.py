"""Typed, versioned records: the contract between runbook stages.

Every record is a dataclass that serialises to plain JSON (for scraps, evidence files and
run.json) and reads back without Jupyter. ``schema`` names the record kind and
``schema_version`` lets a later reader refuse or adapt an older file instead of guessing.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
from pathlib import Path
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="Record")


def to_jsonable(value: Any) -> Any:
    """Plain-JSON view of dataclasses, enums, paths, dates, sets and tuples."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, Record):
            out = {"schema": value.SCHEMA, "schema_version": value.SCHEMA_VERSION, **out}
        return out
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


class Record:
    """Mixin for dataclass records. Subclasses set SCHEMA and SCHEMA_VERSION."""

    SCHEMA: ClassVar[str] = "record"
    SCHEMA_VERSION: ClassVar[int] = 1

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, ensure_ascii=False)

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        """Shallow reader: unknown keys are ignored so newer files still load.

        Records with nested records override this to rebuild their children.
        """
        version = data.get("schema_version", cls.SCHEMA_VERSION)
        if isinstance(version, int) and version > cls.SCHEMA_VERSION:
            raise ValueError(
                f"{cls.SCHEMA} schema_version {version} is newer than this library reads "
                f"({cls.SCHEMA_VERSION}); upgrade vllm-runbooks"
            )
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})

    def scrap(self) -> dict[str, Any]:
        """What gets glued into a notebook: the record's plain JSON."""
        return self.to_dict()


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
