"""``vllm-runbooks run NAME`` and ``list``: execute a runbook template into a run directory.

A thin shell over :func:`vllm_runbooks.execution.runner.run_runbook` (papermill is imported only when a
runbook actually runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import add_runs_dir_option, exit_codes

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
    parser.add_argument("--run-dir", help="run directory (default: a new <runs dir>/<timestamp>-<host>-<id>/)")
    add_runs_dir_option(parser)
    parser.add_argument("--kernel", help="Jupyter kernel name (default: the notebook's)")
    parser.add_argument("--no-progress", action="store_true", help="hide papermill's cell progress bar")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--fail-on-verdict",
        nargs="+",
        default=[],
        metavar="VERDICT",
        help=f"exit {exit_codes.VERDICT} when the runbook's verdict is one of these; the words differ "
        "per runbook (README 'Verdict words'; e.g. canary_validation: fail incomplete, load_check: "
        f"failing degraded); a word the runbook never gives is refused (exit {exit_codes.REFUSED})",
    )
    parser.add_argument(
        "--junit-xml",
        metavar="PATH",
        help="also write a JUnit XML report (one test case per step/check, the verdict checked "
        "against --fail-on-verdict) for Jenkins, GitLab, GitHub Actions",
    )
    parser.set_defaults(func=cmd_run)

    lister = sub.add_parser("list", help="list the runbooks in procedure order")
    lister.set_defaults(func=cmd_list)


def cmd_run(args: argparse.Namespace) -> int:
    """Run one runbook; FAILED when a cell raised, VERDICT when the verdict is one to fail on.

    The JUnit report is written however the run ends (refused, crashed, interrupted): a
    scheduler must see a red test, not a missing file.
    """
    from ..execution.junit import always_written

    with always_written(args.junit_xml, args.name, args.fail_on_verdict) as reported:
        result = _run(args)
        reported.append(result)
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


def _run(args: argparse.Namespace) -> Any:
    """Check what the command line names, gather the parameters, run (raises RunbookError)."""
    from ..execution.parameters import coerce_cli_value, load_param_file
    from ..execution.runner import run_runbook

    check_output_paths(args)
    params: dict = {}
    if args.parameters_file:
        params.update(load_param_file(args.parameters_file))
    params.update({k: coerce_cli_value(v) for k, v in args.parameter})
    params.update(dict(args.raw_parameter))
    check_fail_on_verdict([args.name], args.fail_on_verdict)
    return run_runbook(args.name, params, args.run_dir, progress=not args.no_progress, kernel_name=args.kernel)


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse a ``--run-dir`` / ``--runs-dir`` (or ``$VLLM_RUNBOOKS_RUNS``) that is not UTF-8,
    before anything is created: run.json and the notebook could not hold its name."""
    from ..execution.parameters import refuse_non_utf8_path
    from ..resources import default_runs_dir

    refuse_non_utf8_path("--run-dir", getattr(args, "run_dir", None))
    if getattr(args, "runs_dir", None):
        refuse_non_utf8_path("--runs-dir", args.runs_dir)
    if not getattr(args, "run_dir", None):
        refuse_non_utf8_path("the runs directory", default_runs_dir())


def verdict_vocabulary(runbook: str) -> tuple[str, ...]:
    """The verdict words ``runbook`` can give: its result class's ``VERDICTS`` (``()`` when it has
    no registered result, e.g. a local template)."""
    from ..stage import result_class

    try:
        cls = result_class(runbook)
    except KeyError:
        return ()
    return tuple(getattr(cls, "VERDICTS", ()) or ())


def check_fail_on_verdict(runbooks: Sequence[str], words: Sequence[str]) -> None:
    """Refuse ``--fail-on-verdict`` words none of ``runbooks`` can give.

    Why: the words differ per runbook (``failing`` for load_check, ``fail`` for the canary), and a
    misspelt word never fires: the scheduled run would stay green on exactly the verdict it was
    meant to catch.
    """
    from ..execution.runner import RunbookError

    if not words:
        return
    vocab = {name: verdict_vocabulary(name) for name in runbooks}
    known = {w for words_of in vocab.values() for w in words_of}
    if not known:
        return  # nothing to check against (no runbook here has a registered result)
    unknown = [w for w in words if w not in known]
    if unknown:
        valid = "; ".join(f"{name}: {' '.join(v)}" for name, v in vocab.items() if v)
        raise RunbookError(
            f"--fail-on-verdict {' '.join(unknown)}: not a verdict these runbooks give; valid words: {valid}"
        )


def verdict_table() -> str:
    """README's 'Verdict words' table, made from the result classes (a test keeps them equal)."""
    from ..execution.templates import available_runbooks
    from ..stage import RESULT_MODULES

    names = list(available_runbooks()) + [n for n in RESULT_MODULES if n not in available_runbooks()]
    rows = ["| runbook | verdict words |", "|---|---|"]
    for name in (n for n in names if verdict_vocabulary(n)):
        rows.append(f"| `{name}` | " + ", ".join(f"`{w}`" for w in verdict_vocabulary(name)) + " |")
    return "\n".join(rows)


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
    """Print the runbook templates in procedure order; FAILED when there is none (a broken install)."""
    from ..execution.templates import available_runbooks
    from ..resources import templates_dir

    try:
        folder = templates_dir()
        books = available_runbooks(folder)
    except FileNotFoundError as exc:
        print(f"vllm-runbooks: {exc}", file=sys.stderr)
        return exit_codes.FAILED
    if not books:
        print(f"vllm-runbooks: no runbook templates (NN_name.ipynb) in {folder}", file=sys.stderr)
        return exit_codes.FAILED
    for name, path in books.items():
        print(f"{name:<28} {path}")
    return exit_codes.OK
