"""``vllm-runbooks suite -f params.yaml``: runbooks 01 → 06 into one run directory.

The parameters file has a ``shared`` section and one section per runbook (see
:mod:`vllm_runbooks.suite`); ``--baseline`` names the run saved before the change, for the
change record's baseline and before/after sections.
"""

from __future__ import annotations

import argparse
import sys

from . import exit_codes

ORDER = 15


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``suite``."""
    parser = sub.add_parser("suite", help="run the procedure (01 → 06) into one run directory")
    parser.add_argument("-f", "--parameters-file", required=True, help="YAML: a 'shared' section + one per runbook")
    parser.add_argument("--run-dir", help="a new (or empty) run directory (default: runs/<timestamp>-<host>-<id>/)")
    parser.add_argument("--baseline", help="run directory saved before the change (for the change record)")
    parser.add_argument("--kernel", help="Jupyter kernel name (default: the notebooks')")
    parser.add_argument(
        "--cell-timeout", type=int, default=1800, help="seconds one cell may run before its runbook fails"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(func=cmd_suite)


def cmd_suite(args: argparse.Namespace) -> int:
    """OK when every runbook ran (or was skipped with a reason); FAILED when one failed or was refused."""
    from ..runner import load_param_file
    from ..suite import run_suite
    from . import dump_json

    params = load_param_file(args.parameters_file)

    def progress(entry: object) -> None:
        print(f"suite: {entry.name}: {entry.status}", file=sys.stderr, flush=True)  # type: ignore[attr-defined]

    result = run_suite(
        params,
        args.run_dir,
        args.baseline,
        kernel_name=args.kernel,
        on_entry=progress,
        cell_timeout_s=args.cell_timeout,
    )
    if args.format == "json":
        dump_json(result.to_dict())
    else:
        print("\n".join(result.lines()))
    return exit_codes.OK if result.ok else exit_codes.FAILED
