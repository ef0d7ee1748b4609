"""The ``vllm-runbooks`` command. Each area adds its sub-commands from its own ``cli_*`` module."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence

from .runner import (
    RunbookError,
    available_runbooks,
    coerce_cli_value,
    load_param_file,
    run_runbook,
)

#: Exit codes of `run`: a step raised (the notebook is saved), refused before running, verdict not accepted.
EXIT_FAILED, EXIT_REFUSED, EXIT_VERDICT = 1, 2, 3

# Areas register their own sub-commands; a module that fails to import is reported, not fatal.
COMMAND_MODULES = (
    "vllm_runbooks.cli_evidence",
    "vllm_runbooks.cli_logs",
    "vllm_runbooks.cli_compat",
    "vllm_runbooks.cli_target",
    "vllm_runbooks.cli_load",
)


def _add_run(sub: argparse._SubParsersAction) -> None:
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
        help=f"exit {EXIT_VERDICT} when the runbook's verdict is one of these "
        "(for schedulers: e.g. --fail-on-verdict fail incomplete)",
    )
    parser.set_defaults(func=_cmd_run)

    lister = sub.add_parser("list", help="list the runbooks in procedure order")
    lister.set_defaults(func=_cmd_list)

    runs = sub.add_parser("runs", help="list past run directories with status and verdicts")
    runs.add_argument("--base", help="folder of run directories (default: runs/)")
    runs.add_argument("--verify", action="store_true", help="check every artefact's sha256 against run.json")
    runs.add_argument("--format", choices=("text", "json"), default="text")
    runs.set_defaults(func=_cmd_runs)

    compare = sub.add_parser("compare", help="compare the headline figures of several runs")
    compare.add_argument("run_dirs", nargs="+")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.set_defaults(func=_cmd_compare)


def _cmd_run(args: argparse.Namespace) -> int:
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
        return EXIT_FAILED
    verdict = (result.headline or {}).get("verdict")
    if verdict in args.fail_on_verdict:
        print(f"vllm-runbooks: verdict {verdict!r} is one of --fail-on-verdict", file=sys.stderr)
        return EXIT_VERDICT
    return 0


def summarise(results: Sequence) -> str:
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


def _cmd_list(args: argparse.Namespace) -> int:
    for name, path in available_runbooks().items():
        print(f"{name:<28} {path}")
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    from .runs import list_runs, summarise_run

    found = list_runs(args.base)
    if args.verify:
        found = [summarise_run(r.run_dir, verify=True) for r in found]
    if args.format == "json":
        dump_json([r.to_dict() for r in found])
    for r in found if args.format == "text" else []:
        verdicts = ", ".join(f"{k}={v}" for k, v in r.verdicts.items()) or (r.reason or "")
        flag = f"  TAMPERED: {', '.join(r.tampered)}" if r.tampered else ""
        print(f"{r.run_dir}  {r.status:<10} {verdicts}{flag}")
    return 1 if any(r.tampered for r in found) else 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from .runs import compare_runs

    comparison = compare_runs(args.run_dirs)
    if args.format == "json":
        dump_json(comparison.to_dict())
        return 0
    for row in comparison.rows:
        mark = "≠" if f"{row['runbook']}.{row['figure']}" in comparison.changed else " "
        values = [str(v) for k, v in row.items() if k not in ("runbook", "figure")]
        print(f"{mark} {row['runbook']}.{row['figure']}: " + " | ".join(values))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vllm-runbooks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            print(f"vllm-runbooks: {module_name} unavailable: {exc}", file=sys.stderr)
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (RunbookError, FileNotFoundError) as exc:
        print(f"vllm-runbooks: {exc}", file=sys.stderr)
        return EXIT_REFUSED


def dump_json(obj: object) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
