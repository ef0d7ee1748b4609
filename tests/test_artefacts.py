"""Artefacts written beside a notebook are redacted and never overwrite each other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_runbooks.artefacts import write_artefact


def test_redacted_and_never_overwritten(tmp_path: Path) -> None:
    secret = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
    first = write_artefact(tmp_path, "prefix_cache/check.json", {"snippet": f"HF_TOKEN={secret}", "n": 3})
    second = write_artefact(tmp_path, "prefix_cache/check.json", {"n": 4})
    assert first.name == "check.json" and second.name == "check-2.json"
    assert json.loads(first.read_text())["n"] == 3 and json.loads(second.read_text())["n"] == 4
    assert secret not in first.read_text()
    text = write_artefact(tmp_path, "notes.txt", f"Authorization: Bearer {secret}")
    assert secret not in text.read_text()


def test_refuses_paths_outside_the_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="leaves the run directory"):
        write_artefact(tmp_path / "run", "../escape.json", {})
