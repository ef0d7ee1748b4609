"""``vllm-runbooks init DIR``: write a workspace folder for JupyterLab (see ``vllm_runbooks.workspace``)."""

from __future__ import annotations

import argparse
import sys

from . import exit_codes

ORDER = 12


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``init``."""
    parser = sub.add_parser(
        "init", help="write a workspace for JupyterLab: runbooks, incident console, example parameters, README"
    )
    parser.add_argument("dir", help="a new or empty folder")
    parser.set_defaults(func=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    """Write the workspace; REFUSED (nothing written) when the folder holds anything."""
    from ..workspace import WorkspaceError, init_workspace

    try:
        root = init_workspace(args.dir)
    except WorkspaceError as exc:
        print(f"vllm-runbooks: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    count = sum(1 for p in root.rglob("*") if p.is_file())
    print(f"workspace: {root} ({count} files)")
    print(f"open it:   jupyter lab --notebook-dir={root}")
    return exit_codes.OK
