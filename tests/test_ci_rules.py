"""The skip-or-fail rule of ``tests/ci_rules.py``: what make test installs may not skip in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_rules import need_module, need_path


def test_missing_things_skip_here_and_fail_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="corpus not present"):
        need_path(tmp_path / "nope.jsonl", "corpus")
    with pytest.raises(pytest.skip.Exception, match="no_such_module_zz not installed"):
        need_module("no_such_module_zz")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run in CI: corpus not present"):
        need_path(tmp_path / "nope.jsonl", "corpus")
    with pytest.raises(pytest.fail.Exception, match="must run in CI: no_such_module_zz"):
        need_module("no_such_module_zz")
    assert need_path(tmp_path, "tmp") == tmp_path and need_module("json").dumps([]) == "[]"
