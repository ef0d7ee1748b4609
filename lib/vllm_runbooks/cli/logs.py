"""``vllm-runbooks diagnose-log PATH...``: classify logs from the shell.

JSON output is a list with one object per path: ``path``, ``label``, ``confidence``
(decisive / likely / inconclusive), ``evidence`` (the deciding lines), ``would_decide`` (what
evidence would settle an inconclusive verdict), ``status``, ``reason``, ``findings``... A missing
or unreadable path gives label ``inconclusive`` with status ``unreadable``, never a traceback.
Everything printed is redacted (``vllm_runbooks.redact``): log lines can carry tokens.

This module is also the command's fast path: ``vllm-runbooks diagnose-log`` is dispatched here
before the other commands are imported, and the signature database comes from the on-disk cache
(``logs/dbcache.py``), so start-up stays well under the time grep needs to read a large log.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from . import exit_codes

ORDER = 30
COMMAND = "diagnose-log"


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``diagnose-log`` to the top-level CLI's subparsers."""
    p = subparsers.add_parser(
        COMMAND,
        help="classify vLLM / container logs: root-cause label, confidence and the deciding lines",
        description=__doc__.splitlines()[0],
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="log files (plain, gzip, bzip2, xz or zstd); - reads stdin as a stream",
    )
    p.add_argument("--format", choices=["json", "text"], default="text")
    p.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        help="stop after this many (decompressed) bytes per log; stdin, devices and compressed logs "
        "are capped at 4 GiB when not given",
    )
    p.add_argument("--engine", choices=["auto", "hyperscan", "re2", "re"], default="auto")
    p.set_defaults(func=run)
    return p


def _record(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """One log's diagnosis as the plain dict the JSON output lists (not yet redacted)."""
    from ..logs import diagnose_log

    if path == "-":
        d = diagnose_log(sys.stdin.buffer, max_bytes=args.max_bytes, engine=args.engine)
        d.source = "<stdin>"
    else:
        d = diagnose_log(path, max_bytes=args.max_bytes, engine=args.engine)
    out = d.to_dict()
    return {"path": path, **{k: v for k, v in out.items() if k != "source"}}


def _text(r: dict[str, Any]) -> list[str]:
    head = f"{r['path']}: {r['label']} ({r['confidence']})"
    if r["status"] != "ok":
        head += f" [{r['status']}: {r['reason']}]"
    lines = [head]
    for e in r.get("evidence") or []:
        lines.append(f"  line {e['line']:>7}  {e['role']:<15} {e['label']:<28} {str(e['text'])[:160]}")
    if r.get("would_decide"):
        lines.append(f"  would decide: {r['would_decide']}")
    top = next(
        (f for f in r["findings"] if f["label"] == r["label"] and f["severity"] != "info"),
        None,
    )
    if top:
        lines.append(f"  next: {top['advice']}")
    elif (r.get("scorer") or {}).get("advice") and r.get("confidence") == "likely":
        lines.append(f"  next (learned scorer, not a signature): {r['scorer']['advice']}")
    if r.get("candidates"):
        shown = ", ".join(f"{c.get('label')} {float(c.get('score') or 0):.2f}" for c in r["candidates"][:3])
        lines.append(f"  learned scorer's candidates: {shown}")
    if r.get("truncated"):
        lines.append(f"  note: read stopped at {r['bytes_scanned']:,} bytes (cap); the rest was not scanned")
    return lines


def run(args: argparse.Namespace) -> int:
    """Print diagnoses; exit 0 when every log was read (whatever the labels), 2 if one was not."""
    records = [_record(p, args) for p in args.paths]
    from ..redact import redact_obj, redact_text  # after the scan: keeps start-up light

    records = redact_obj(records)
    if args.format == "json":
        json.dump(records, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for r in records:
            for line in _text(r):
                print(redact_text(line))
    return exit_codes.REFUSED if any(r["status"] == "unreadable" for r in records) else exit_codes.OK


def main(argv: Sequence[str]) -> int:
    """Run ``diagnose-log`` alone (the fast path: no other command module is imported)."""
    parser = argparse.ArgumentParser(prog="vllm-runbooks")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args([COMMAND, *argv])
    return int(args.func(args) or 0)
