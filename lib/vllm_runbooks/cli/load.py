"""``vllm-runbooks load``: one bounded load measurement from a shell, printed as one summary.

Why beside the notebook: an engineer who wants "how many requests/s at concurrency 32, and the
p95 TTFT" should not have to open runbook 05. The same engine runs both.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import exit_codes

ORDER = 60


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``load`` (the engine of runbook 05, without the notebook)."""
    p = subparsers.add_parser(
        "load",
        help="send a bounded streaming load to one endpoint; print a summary",
        epilog="Every numeric flag is finite and inside the range of vllm_runbooks.load.limits (the same table "
        "as runbook 05's: e.g. --requests 1..100000, --concurrency 1..1024, --input-words 1..100000, "
        "--timeout 0.1..3600 s); a value outside it is refused with exit code 2 before any request.",
    )
    p.add_argument("--endpoint", required=True, help="base URL of the OpenAI-compatible server (only target)")
    p.add_argument("--model", default=None, help="served model name (default: the first in /v1/models)")
    p.add_argument("--concurrency", type=int, default=8, help="most requests in flight at once")
    p.add_argument("--requests", type=int, default=100, help="requests to send (hard cap)")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--input-words", type=int, default=24, help="words of generated prompt per request")
    p.add_argument("--rate", type=float, default=None, help="requests/s on a seeded schedule (default: closed loop)")
    p.add_argument("--arrival", choices=("poisson", "gamma", "constant"), default="poisson")
    p.add_argument("--gamma-shape", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=0, help="first requests excluded from the statistics")
    p.add_argument("--api", choices=("chat", "completions"), default="chat")
    p.add_argument("--max-seconds", type=float, default=120.0, help="wall-clock cap of the whole run")
    p.add_argument("--timeout", type=float, default=60.0, help="deadline of each request, seconds")
    p.add_argument("--no-ignore-eos", action="store_true", help="let the model stop before --max-tokens")
    p.add_argument("--api-key-env", default="VLLM_API_KEY", help="NAME of the env var holding the API key")
    p.add_argument("--save-records", default=None, help="write per-request records (redacted JSONL) to this new file")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_cmd_load)


def _cmd_load(args: argparse.Namespace) -> int:
    """Refused (2) on bad input, failed (1) when the endpoint cannot be used, else 0 and the summary."""
    from ..execution.parameters import RunbookError, check_env_name
    from ..load.cli_summary import measure
    from ..load.limits import cli_problems

    problems = cli_problems(args)
    try:
        check_env_name("load", "--api-key-env", args.api_key_env)  # a pasted key is refused, never echoed
    except RunbookError as exc:
        problems.append(str(exc))
    if problems:
        for problem in problems:
            print(f"vllm-runbooks load: {problem}", file=sys.stderr)
        return exit_codes.REFUSED
    if args.save_records and Path(args.save_records).exists():
        print(f"vllm-runbooks load: {args.save_records} exists; records never overwrite a file", file=sys.stderr)
        return exit_codes.REFUSED
    try:
        summary, problem = measure(args)
    except ValueError as exc:
        print(f"vllm-runbooks load: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    if problem:
        print(f"vllm-runbooks load: {problem}", file=sys.stderr)
        if summary is None:
            return exit_codes.FAILED
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            print(f"{key:<22} {json.dumps(value)}")
    return 0
