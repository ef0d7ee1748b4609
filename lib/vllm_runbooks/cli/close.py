"""``vllm-runbooks close``: the change closed after its watch window, with a drafted post-implementation review."""

from __future__ import annotations

import argparse
import sys

from . import exit_codes

ORDER = 26


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``close``."""
    close = sub.add_parser(
        "close",
        help="close an approved change after its watch window, with a code and a drafted post-implementation review",
        epilog="Refused (exit 2) when the record is not approved, the run or a cited artefact changed, the change "
        "was closed already, or the watch window (runbook 06 watch_hours after planned_end) has not passed. "
        "Writes close/closure.json (signed with --key or $VLLM_RUNBOOKS_APPROVER_KEY, else unsigned) and "
        "close/post_implementation_review.md.",
    )
    close.add_argument("run_dir")
    close.add_argument("--code", required=True, choices=("successful", "successful_with_issues", "unsuccessful"))
    close.add_argument("--as", dest="closed_by", default=None, help="who closes the change (default: the OS user)")
    close.add_argument("--note", default="", help="what happened, in one line (stored escaped)")
    close.add_argument("--key", default=None, help="your SSH private key (ssh-keygen -Y sign)")
    close.set_defaults(func=cmd_close)


def cmd_close(args: argparse.Namespace) -> int:
    """0 closed; 2 refused (not approved, changed, closed already, watch window running)."""
    from ..change_record.approvals import ApprovalRefused, default_requester
    from ..change_record.closure import ClosureRefused, close

    try:
        closure, review = close(args.run_dir, args.code, args.closed_by or default_requester(), args.note, args.key)
    except (ClosureRefused, ApprovalRefused, OSError) as exc:
        print(f"vllm-runbooks close: refused: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    print(f"closed: {closure}\nreview draft: {review}")
    return exit_codes.OK
