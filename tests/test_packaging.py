"""environment.yml and pyproject.toml must describe the same environment."""

from __future__ import annotations

import re
import tomllib

import yaml

from conftest import REPO_ROOT


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_deps() -> dict[str, str]:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {_name(d): d.replace(" ", "") for d in data["project"]["dependencies"]}


def _environment_deps() -> tuple[dict[str, str], list[str]]:
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text(encoding="utf-8"))
    deps: dict[str, str] = {}
    pip_lines: list[str] = []
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            pip_lines = entry.get("pip", [])
            continue
        deps[_name(entry)] = entry.replace(" ", "")
    for line in pip_lines:
        if not line.startswith("-") and line != ".":  # "." is the project itself
            deps[_name(line)] = line.replace(" ", "")
    return deps, pip_lines


def test_environment_yml_matches_pyproject() -> None:
    project = _pyproject_deps()
    env, pip_lines = _environment_deps()
    env.pop("python"), env.pop("pip")
    assert project == env
    assert "." in pip_lines, "the package itself, built as a wheel like pip does"
    assert not [line for line in pip_lines if line.startswith("-e")], "an editable install ties conda to the checkout"


def test_console_script_declared() -> None:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["scripts"]["vllm-runbooks"] == "vllm_runbooks.cli:main"
    assert {"dev", "target"} <= set(data["project"]["optional-dependencies"])
