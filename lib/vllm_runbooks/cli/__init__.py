"""The ``vllm-runbooks`` command: a thin shell over the library, one module per command.

Every module in this package that defines ``register(subparsers)`` is a command (or a group of
commands): ``register`` adds its parser and sets ``func`` to a handler ``(args) -> exit code``.
A new command is a new file here; nothing else to edit. Modules whose name starts with ``_``
and :mod:`.exit_codes` are not commands. Exit codes come from :mod:`.exit_codes` only.

Start-up is kept light: ``register`` functions import only argparse-level things, and each
handler imports the library it needs when it runs, so ``vllm-runbooks diagnose-log`` does not
load papermill, pandas or plotly.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..resources import RUNS_ENV
from . import exit_codes

#: Modules in this package that are not commands.
NOT_COMMANDS = frozenset({"exit_codes"})


def command_modules() -> list[str]:
    """Names of the command modules, in the order their ``ORDER`` (default 100) then name give."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name in NOT_COMMANDS:
            continue
        found.append(f"{__name__}.{info.name}")
    modules = []
    for name in found:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as exc:  # one broken area must not take the whole CLI down
            print(f"vllm-runbooks: {name} unavailable: {exc}", file=sys.stderr)
    ordered = sorted((getattr(m, "ORDER", 100), m.__name__) for m in modules if hasattr(m, "register"))
    return [name for _, name in ordered]


def build_parser() -> argparse.ArgumentParser:
    """The full parser: every discovered command module registers its sub-commands."""
    parser = argparse.ArgumentParser(
        prog="vllm-runbooks",
        description="Evidence, decisions and validation for vLLM launches, as executed notebooks.",
        epilog=exit_codes.describe(),
    )
    parser.add_argument("--version", action="version", version=f"vllm-runbooks {__version__}")
    add_runs_dir_option(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in command_modules():
        sys.modules[name].register(sub)
    return parser


#: Modules kept out of a CLI process: jsonschema imports ``rfc3987_syntax`` (when installed, as
#: jupyter-events makes it) only to check the ``iri`` string format, and that module compiles a
#: lark grammar at import: 3.3 s of every ``vllm-runbooks run`` on a 2-core machine, spent before
#: papermill starts (nbformat imports jsonschema). Nothing this process validates uses ``iri``
#: (nbformat's schemas have no such format; tool schemas are validated in the notebook kernel).
SKIPPED_IMPORTS = ("rfc3987_syntax",)


def skip_slow_imports() -> None:
    """Make ``import rfc3987_syntax`` fail fast in this process unless something already has it."""
    if "jsonschema" in sys.modules:
        return  # too late to matter, and never change what an already-imported jsonschema saw
    for name in SKIPPED_IMPORTS:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: ImportError on import


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run the handler, and map refusals to ``exit_codes.REFUSED`` (never a traceback)."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    skip_slow_imports()
    if args_in[:1] == ["diagnose-log"]:  # fast path: start-up matters for a grep-like tool
        from .logs import main as diagnose_main

        return diagnose_main(args_in[1:])
    parser = build_parser()
    args = parser.parse_args(args_in)
    previous = os.environ.get(RUNS_ENV)
    if getattr(args, "runs_dir", None):
        # Through the environment, so the notebook kernels papermill starts (runbook 08 reads the
        # runs directory, every runbook's interactive fallback writes there) agree with this
        # process; put back afterwards, so an in-process caller's environment is left as it was.
        os.environ[RUNS_ENV] = str(Path(args.runs_dir).expanduser().absolute())
    try:
        return int(args.func(args) or 0)
    except Exception as exc:
        from ..execution.runner import RunbookError  # imported only on this path: start-up stays light

        if not isinstance(exc, RunbookError | FileNotFoundError):
            raise
        print(f"vllm-runbooks: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    finally:
        if previous is None:
            os.environ.pop(RUNS_ENV, None)
        else:
            os.environ[RUNS_ENV] = previous


def add_runs_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--runs-dir DIR``: where new run directories go (default ``./runs``, or ``$VLLM_RUNBOOKS_RUNS``).

    Accepted before or after the command name; SUPPRESS keeps a sub-command's absent option from
    hiding the one given before it.
    """
    parser.add_argument(
        "--runs-dir",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help=f"folder of run directories (default: ./runs of the current directory or workspace, or ${RUNS_ENV})",
    )


def dump_json(obj: object) -> None:
    """Print ``obj`` as indented JSON (``--format json`` of every command)."""
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def summarise(results: Sequence[Any]) -> str:
    """The few lines an on-call engineer reads at the end of a run (see ``cli.run``)."""
    from .run import summarise as _summarise

    return _summarise(results)


__all__ = ["add_runs_dir_option", "build_parser", "command_modules", "dump_json", "exit_codes", "main", "summarise"]
