"""Records serialise to plain JSON and scraps read back with nbformat alone."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path

import pytest

from vllm_runbooks.execution.scraps import SCRAP_MIME, read_scraps
from vllm_runbooks.records import Record, to_jsonable


class Tone(enum.Enum):
    GOOD = "good"


@dataclasses.dataclass
class Child(Record):
    SCHEMA = "child"
    value: int


@dataclasses.dataclass
class Parent(Record):
    SCHEMA = "parent"
    SCHEMA_VERSION = 2
    name: str
    tone: Tone
    children: list[Child]
    where: Path


def test_record_is_plain_json_with_schema() -> None:
    rec = Parent("x", Tone.GOOD, [Child(1), Child(2)], Path("/tmp/a"))
    data = json.loads(rec.to_json())
    assert data["schema"] == "parent" and data["schema_version"] == 2
    assert data["tone"] == "good" and data["where"] == "/tmp/a"
    assert data["children"] == [
        {"schema": "child", "schema_version": 1, "value": 1},
        {"schema": "child", "schema_version": 1, "value": 2},
    ]


def test_from_dict_ignores_unknown_keys_and_refuses_newer_versions() -> None:
    assert Child.from_dict({"value": 3, "added_later": True}) == Child(3)
    with pytest.raises(ValueError, match="newer"):
        Child.from_dict({"value": 3, "schema_version": 9})


def test_to_jsonable_handles_sets_tuples_bytes() -> None:
    assert to_jsonable({"a": (1, 2), "b": b"\xff", 3: {4}}) == {"a": [1, 2], "b": "\ufffd", "3": [4]}


def test_read_scraps_from_outputs_last_wins(tmp_path: Path) -> None:
    def out(name: str, data: object, as_text: bool = False) -> dict:
        payload = {"name": name, "data": data, "encoder": "json", "version": 1}
        return {
            "output_type": "display_data",
            "metadata": {},
            "data": {SCRAP_MIME: json.dumps(payload) if as_text else payload},
        }

    nb = {
        "cells": [
            {"cell_type": "code", "outputs": [out("headline", {"verdict": "a"}), out("other", 1, as_text=True)]},
            {"cell_type": "markdown"},
            {
                "cell_type": "code",
                "outputs": [out("headline", {"verdict": "b"}), {"output_type": "stream", "text": "x"}],
            },
        ]
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    assert read_scraps(path) == {"headline": {"verdict": "b"}, "other": 1}
