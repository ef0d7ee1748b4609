"""``vllm-runbooks approve`` and ``approvals``: a person's decision on a change record, bound and signed."""

from __future__ import annotations

import argparse
import sys

from . import exit_codes

ORDER = 25


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``approve`` and ``approvals``."""
    approve = sub.add_parser(
        "approve",
        help="approve, reject or approve with conditions the change record of a run (signed with an SSH key)",
        epilog="The run is verified first (run.json, its manifest, every artefact the record cites): anything "
        "changed since the record was written is refused (exit 2), and so is the requester approving their own "
        "change. Without --key (or $VLLM_RUNBOOKS_APPROVER_KEY) the approval is recorded as unsigned.",
    )
    approve.add_argument("run_dir")
    approve.add_argument("--as", dest="approver", required=True, help="your name, as the allowed-signers file has it")
    approve.add_argument("--decision", required=True, choices=("approve", "reject", "conditions"))
    approve.add_argument("--note", default="", help="conditions or reasons (one line, stored escaped)")
    approve.add_argument("--role", default="", help="the role you approve as, when the policy names roles")
    approve.add_argument("--key", default=None, help="your SSH private key (ssh-keygen -Y sign)")
    approve.set_defaults(func=cmd_approve)

    listing = sub.add_parser("approvals", help="list a run's approvals, each checked now, and the policy's status")
    listing.add_argument("run_dir")
    listing.add_argument("--allowed-signers", default=None, help="ssh-keygen allowed-signers file to verify with")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.set_defaults(func=cmd_approvals)


def cmd_approve(args: argparse.Namespace) -> int:
    """0 recorded; 2 refused (what changed, self-approval, no record, signing failed)."""
    from ..change_record.approvals import ApprovalRefused, approve

    try:
        written = approve(args.run_dir, args.approver, args.decision, args.note, args.role, args.key)
    except (ApprovalRefused, OSError) as exc:
        print(f"vllm-runbooks approve: refused: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    print(f"recorded {written}")
    return cmd_approvals(argparse.Namespace(run_dir=args.run_dir, allowed_signers=None, format="text"))


def cmd_approvals(args: argparse.Namespace) -> int:
    """0 when the record is approved, 1 otherwise (pending, rejected, or an approval no longer holds)."""
    import os
    from pathlib import Path

    from ..change_record.approvals import (
        SIGNERS_ENV,
        ApprovalRefused,
        check_approvals,
        current_record,
        policy_status,
        reachable,
    )
    from . import dump_json

    try:
        record, rel = current_record(Path(args.run_dir).resolve())
    except ApprovalRefused as exc:
        print(f"vllm-runbooks approvals: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    checks = check_approvals(args.run_dir, args.allowed_signers)
    status, why = policy_status(record, checks)
    never = reachable(record, args.allowed_signers or os.environ.get(SIGNERS_ENV))
    if never and not status.startswith("approved") and status != "rejected":
        status, why = "unreachable", f"{why}; {never}"
    if args.format == "json":
        dump_json({"record": rel, "status": status, "why": why, "approvals": [c.to_dict() for c in checks]})
    else:
        print(f"{rel}: {status} — {why} (requested by {record.get('requester') or 'unknown'})")
        for c in checks:
            print(f"  {c.file}: {c.approver} {c.decision}{f' as {c.role}' if c.role else ''} at {c.at}: "
                  f"{c.status} — {c.why}")  # fmt: skip
    return exit_codes.OK if status.startswith("approved") else exit_codes.FAILED
