"""``vllm-runbooks runs`` and ``compare``: read run directories back without opening notebooks."""

from __future__ import annotations

import argparse
import sys

from . import add_runs_dir_option, exit_codes

ORDER = 20


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``runs`` and ``compare``."""
    runs = sub.add_parser("runs", help="list past run directories with status and verdicts")
    add_runs_dir_option(runs)
    runs.add_argument(
        "--verify",
        action="store_true",
        help="check every artefact's sha256, files the manifest does not list, and run.json's own signature",
    )
    runs.add_argument("--format", choices=("text", "json"), default="text")
    runs.set_defaults(func=cmd_runs)

    compare = sub.add_parser("compare", help="compare the headline figures of several runs")
    compare.add_argument("run_dirs", nargs="+")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=f"with two runs (before, after): exit {exit_codes.VERDICT} when a regression is flagged",
    )
    compare.set_defaults(func=cmd_compare)


def cmd_runs(args: argparse.Namespace) -> int:
    """List runs; FAILED when ``--verify`` finds an artefact changed since its run."""
    from ..execution.runs import list_runs, summarise_run
    from . import dump_json

    found = list_runs(getattr(args, "runs_dir", None))
    if args.verify:
        found = [summarise_run(r.run_dir, verify=True) for r in found]
    if args.format == "json":
        dump_json([r.to_dict() for r in found])
    for r in found if args.format == "text" else []:
        verdicts = ", ".join(f"{k}={v}" for k, v in r.verdicts.items()) or (r.reason or "")
        flag = f"  TAMPERED: {', '.join(r.tampered)}" if r.tampered else ""
        status = "TAMPERED" if r.tampered else r.status  # never "ok" beside a tampered file
        signed = f"  signature: {r.signature}" if r.signature and r.signature != "verified" else ""
        print(f"{r.run_dir}  {status:<10} {verdicts}{flag}{signed}")
    return exit_codes.FAILED if any(r.tampered for r in found) else exit_codes.OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Print each runbook's verdict and headline figures side by side; ≠ marks a change."""
    from ..change_record.sources import RecordRefused
    from ..execution.runs import compare_runs
    from . import dump_json

    comparison = compare_runs(args.run_dirs)
    try:
        changes = before_after(args.run_dirs)
    except (OSError, ValueError, RecordRefused) as exc:  # an unreadable run is said, not a traceback
        print(f"compare: before → after not compared: {exc}", file=sys.stderr)
        changes = []
    if args.format == "json":
        dump_json({**comparison.to_dict(), "before_after": [c.to_dict() for c in changes]})
    else:
        for row in comparison.rows:
            mark = "≠" if f"{row['runbook']}.{row['figure']}" in comparison.changed else " "
            values = [str(v) for k, v in row.items() if k not in ("runbook", "figure")]
            print(f"{mark} {row['runbook']}.{row['figure']}: " + " | ".join(values))
        print("\n".join(before_after_lines(changes)))
    regressed = any(c.regression for c in changes)
    return exit_codes.VERDICT if regressed and args.fail_on_regression else exit_codes.OK


def before_after(run_dirs: list[str]) -> list:
    """With exactly two runs (before, after): the flagged differences (verdicts, p95 latency,
    new error classes, tool accuracy, environment); otherwise none."""
    if len(run_dirs) != 2:
        return []
    from ..change_record.compare import compare_dirs

    return compare_dirs(run_dirs[0], run_dirs[1])


def before_after_lines(changes: list) -> list[str]:
    """One line per before/after difference, regressions marked."""
    if not changes:
        return []
    lines = ["", "before → after (first run = before):"]
    for c in changes:
        mark = "⚠ REGRESSION" if c.regression else "            "
        note = f"  ({c.note})" if c.note else ""
        lines.append(f"{mark} {c.kind:<13} {c.runbook}.{c.item}: {c.before} → {c.after}{note}")
    return lines
