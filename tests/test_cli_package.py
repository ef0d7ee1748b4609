"""The CLI package: commands found by file, one exit-code table, a light start.

Why: six areas add commands; a command that is not discovered, an exit code that means two
things, or a start that loads pandas for ``diagnose-log`` would each be noticed only in use.
"""

from __future__ import annotations

import subprocess
import sys

from vllm_runbooks.cli import build_parser, command_modules, exit_codes
from vllm_runbooks.cli import compat as cli_compat
from vllm_runbooks.cli import target as cli_target


def test_every_command_module_is_discovered_and_registers() -> None:
    names = {m.rsplit(".", 1)[1] for m in command_modules()}
    assert {"run", "runs", "evidence", "logs", "compat", "target"} <= names
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"run", "list", "runs", "compare", "probe", "diagnose-log", "check-compat", "target"} <= set(sub.choices)


def test_one_exit_code_table_with_distinct_meanings() -> None:
    codes = list(exit_codes.TABLE.values())
    assert len(codes) == len(set(codes)), "one number, one meaning"
    assert set(cli_target.EXIT_CODES.values()) <= set(codes)
    assert exit_codes.VERDICT not in cli_target.EXIT_CODES.values()  # 3 meant both before


def test_spelled_out_choices_match_the_library() -> None:
    from vllm_runbooks.compat.inputs import BRAND_CLASSES
    from vllm_runbooks.target import PRESETS

    assert tuple(cli_compat.BRAND_CLASSES) == tuple(BRAND_CLASSES)
    assert tuple(cli_target.PRESET_NAMES) == tuple(sorted(PRESETS))


def test_start_up_does_not_load_notebook_or_plotting_stacks() -> None:
    code = (
        "import sys\nfrom vllm_runbooks.cli import build_parser\nbuild_parser()\n"
        "print([m for m in ('papermill', 'pandas', 'plotly', 'nbformat', 'httpx') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_python_dash_m_runs_the_same_entry_point() -> None:
    res = subprocess.run([sys.executable, "-m", "vllm_runbooks.cli", "list"], capture_output=True, text=True)
    assert res.returncode == 0 and "evidence_capture" in res.stdout
    bad = subprocess.run([sys.executable, "-m", "vllm_runbooks.cli", "nosuch"], capture_output=True, text=True)
    assert bad.returncode == exit_codes.REFUSED


def test_runs_dir_option_does_not_leak_into_the_callers_environment(tmp_path, monkeypatch) -> None:
    """``--runs-dir`` reaches the kernels through the environment, but only for that command: an
    in-process caller (a notebook, a test) keeps its own runs directory afterwards."""
    import os

    from vllm_runbooks.cli import main

    monkeypatch.delenv("VLLM_RUNBOOKS_RUNS", raising=False)
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    assert "VLLM_RUNBOOKS_RUNS" not in os.environ
    monkeypatch.setenv("VLLM_RUNBOOKS_RUNS", "/elsewhere")
    assert main(["--runs-dir", str(tmp_path), "runs"]) == 0
    assert os.environ["VLLM_RUNBOOKS_RUNS"] == "/elsewhere"
