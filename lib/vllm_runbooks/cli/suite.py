"""``vllm-runbooks suite -f params.yaml``: runbooks 01 → 06 into one run directory.

The parameters file has a ``shared`` section and one section per runbook (see
:mod:`vllm_runbooks.execution.suite`); ``--baseline`` names the run saved before the change, for the
change record's baseline and before/after sections.
"""

from __future__ import annotations

import argparse
import sys

from . import add_runs_dir_option, exit_codes

ORDER = 15


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``suite``."""
    parser = sub.add_parser("suite", help="run the procedure (01 → 06) into one run directory")
    parser.add_argument("-f", "--parameters-file", required=True, help="YAML: a 'shared' section + one per runbook")
    parser.add_argument("--run-dir", help="a new (or empty) run directory (default: a new one in the runs dir)")
    add_runs_dir_option(parser)
    parser.add_argument("--baseline", help="run directory saved before the change (for the change record)")
    parser.add_argument("--kernel", help="Jupyter kernel name (default: the notebooks')")
    parser.add_argument(
        "--cell-timeout", type=int, default=1800, help="seconds one cell may run before its runbook fails"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--fail-on-verdict",
        nargs="+",
        default=[],
        metavar="VERDICT",
        help=f"exit {exit_codes.VERDICT} when a runbook's verdict is one of these (words differ per runbook: "
        f"README 'Verdict words'; a word none of the suite's runbooks gives is refused, exit {exit_codes.REFUSED})",
    )
    parser.add_argument(
        "--junit-xml",
        metavar="PATH",
        help="also write a JUnit XML report: one test suite per runbook, one test case per step/check",
    )
    parser.set_defaults(func=cmd_suite)


def cmd_suite(args: argparse.Namespace) -> int:
    """OK when every runbook ran (or was skipped with a reason); FAILED when one failed or was refused;
    VERDICT when all ran and a verdict is one of ``--fail-on-verdict``. The JUnit report is
    written however the suite ends (refused, crashed, interrupted)."""
    from ..execution.junit import always_written
    from ..execution.parameters import load_param_file, refuse_non_utf8_path
    from ..execution.suite import run_suite, suite_order
    from . import dump_json
    from .run import check_fail_on_verdict, check_output_paths

    def progress(entry: object) -> None:
        print(f"suite: {entry.name}: {entry.status}", file=sys.stderr, flush=True)  # type: ignore[attr-defined]

    with always_written(args.junit_xml, "suite", args.fail_on_verdict) as reported:
        check_output_paths(args)
        refuse_non_utf8_path("--baseline", args.baseline)
        params = load_param_file(args.parameters_file)
        check_fail_on_verdict([name for name, _ in suite_order(params)], args.fail_on_verdict)
        result = run_suite(
            params,
            args.run_dir,
            args.baseline,
            kernel_name=args.kernel,
            on_entry=progress,
            cell_timeout_s=args.cell_timeout,
        )
        reported.extend(junit_results(result))
    if args.format == "json":
        dump_json(result.to_dict())
    else:
        print("\n".join(result.lines()))
    if not result.ok:
        return exit_codes.FAILED
    hits = [e for e in result.runbooks if e.verdict and e.verdict in args.fail_on_verdict]
    if hits:
        names = ", ".join(f"{e.name}={e.verdict}" for e in hits)
        print(f"vllm-runbooks: verdict(s) {names} among --fail-on-verdict", file=sys.stderr)
        return exit_codes.VERDICT
    return exit_codes.OK


def junit_results(result: object) -> list[dict]:
    """One JUnit entry per suite runbook: its run.json entry when it ran (steps, duration,
    headline), else what the suite knows (skipped or refused, with the reason)."""
    from ..execution.runjson import load_run

    try:
        recorded = load_run(result.run_dir).get("runbooks", [])  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - an unreadable run.json still leaves the suite's own entries
        recorded = []
    latest = {b.get("name"): b for b in recorded if isinstance(b, dict)}
    out = []
    for entry in result.runbooks:  # type: ignore[attr-defined]
        ran = latest.get(entry.name) if entry.status in ("ok", "failed") else None
        if ran is not None:
            out.append(ran)
        else:
            reason = entry.reason or entry.status
            out.append({"name": entry.name, "status": entry.status, "error": reason, "notebook": entry.notebook})
    return out
