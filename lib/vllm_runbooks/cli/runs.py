"""``vllm-runbooks runs`` and ``compare``: read run directories back without opening notebooks."""

from __future__ import annotations

import argparse

from . import exit_codes

ORDER = 20


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``runs`` and ``compare``."""
    runs = sub.add_parser("runs", help="list past run directories with status and verdicts")
    runs.add_argument("--base", help="folder of run directories (default: runs/)")
    runs.add_argument("--verify", action="store_true", help="check every artefact's sha256 against run.json")
    runs.add_argument("--format", choices=("text", "json"), default="text")
    runs.set_defaults(func=cmd_runs)

    compare = sub.add_parser("compare", help="compare the headline figures of several runs")
    compare.add_argument("run_dirs", nargs="+")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.set_defaults(func=cmd_compare)


def cmd_runs(args: argparse.Namespace) -> int:
    """List runs; FAILED when ``--verify`` finds an artefact changed since its run."""
    from ..runs import list_runs, summarise_run
    from . import dump_json

    found = list_runs(args.base)
    if args.verify:
        found = [summarise_run(r.run_dir, verify=True) for r in found]
    if args.format == "json":
        dump_json([r.to_dict() for r in found])
    for r in found if args.format == "text" else []:
        verdicts = ", ".join(f"{k}={v}" for k, v in r.verdicts.items()) or (r.reason or "")
        flag = f"  TAMPERED: {', '.join(r.tampered)}" if r.tampered else ""
        print(f"{r.run_dir}  {r.status:<10} {verdicts}{flag}")
    return exit_codes.FAILED if any(r.tampered for r in found) else exit_codes.OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Print each runbook's verdict and headline figures side by side; ≠ marks a change."""
    from ..runs import compare_runs
    from . import dump_json

    comparison = compare_runs(args.run_dirs)
    if args.format == "json":
        dump_json(comparison.to_dict())
        return exit_codes.OK
    for row in comparison.rows:
        mark = "≠" if f"{row['runbook']}.{row['figure']}" in comparison.changed else " "
        values = [str(v) for k, v in row.items() if k not in ("runbook", "figure")]
        print(f"{mark} {row['runbook']}.{row['figure']}: " + " | ".join(values))
    return exit_codes.OK
