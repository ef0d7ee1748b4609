"""``vllm-runbooks run NAME`` and ``list``: execute a runbook template into a run directory.

A thin shell over :func:`vllm_runbooks.runner.run_runbook` (papermill is imported only when a
runbook actually runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import exit_codes

ORDER = 10


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run`` and ``list``."""
    parser = sub.add_parser("run", help="execute a runbook with papermill into a run directory")
    parser.add_argument("name", help="runbook name without its number, e.g. evidence_capture")
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("KEY", "VALUE"),
        help="a parameter; values are typed like papermill's -p (int, float, bool, None)",
    )
    parser.add_argument(
        "-r",
        "--raw-parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("KEY", "VALUE"),
        help="a parameter kept as a string",
    )
    parser.add_argument("-f", "--parameters-file", help="YAML file of parameters")
    parser.add_argument("--run-dir", help="run directory (default: a new runs/<timestamp>-<host>-<id>/)")
    parser.add_argument("--kernel", help="Jupyter kernel name (default: the notebook's)")
    parser.add_argument("--no-progress", action="store_true", help="hide papermill's cell progress bar")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--fail-on-verdict",
        nargs="+",
        default=[],
        metavar="VERDICT",
        help=f"exit {exit_codes.VERDICT} when the runbook's verdict is one of these "
        "(for schedulers: e.g. --fail-on-verdict fail incomplete)",
    )
    parser.set_defaults(func=cmd_run)

    lister = sub.add_parser("list", help="list the runbooks in procedure order")
    lister.set_defaults(func=cmd_list)


def cmd_run(args: argparse.Namespace) -> int:
    """Run one runbook; FAILED when a cell raised, VERDICT when the verdict is one to fail on."""
    from ..runner import coerce_cli_value, load_param_file, run_runbook

    params: dict = {}
    if args.parameters_file:
        params.update(load_param_file(args.parameters_file))
    params.update({k: coerce_cli_value(v) for k, v in args.parameter})
    params.update(dict(args.raw_parameter))
    result = run_runbook(args.name, params, args.run_dir, progress=not args.no_progress, kernel_name=args.kernel)
    if args.format == "json":
        print(result.to_json())
    else:
        print(summarise([result]))
    if result.status != "ok":
        return exit_codes.FAILED
    verdict = (result.headline or {}).get("verdict")
    if verdict in args.fail_on_verdict:
        print(f"vllm-runbooks: verdict {verdict!r} is one of --fail-on-verdict", file=sys.stderr)
        return exit_codes.VERDICT
    return exit_codes.OK


def summarise(results: Sequence[Any]) -> str:
    """The few lines an on-call engineer reads at the end of a run."""
    lines = []
    for r in results:
        lines.append(r.summary_line())
        if r.error:
            lines.append(f"  error: {r.error}")
        lines.append(f"  notebook: {r.notebook}")
        if r.html:
            lines.append(f"  html:     {r.html}")
    if results:
        lines.append(f"run directory: {results[0].run_dir}")
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    """Print the runbook templates in procedure order."""
    from ..runner import available_runbooks

    for name, path in available_runbooks().items():
        print(f"{name:<28} {path}")
    return exit_codes.OK
