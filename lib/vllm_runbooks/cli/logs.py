"""``vllm-runbooks diagnose-log PATH...``: classify logs from the shell.

JSON output is a list with one object per path (``path``, ``label``, ``status``, ``reason``,
``findings``...), so scripts and CI can consume it; a missing or unreadable path gives an object
with label ``unknown`` and status ``unreadable``, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import exit_codes

ORDER = 30


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``diagnose-log`` to the top-level CLI's subparsers."""
    p = subparsers.add_parser(
        "diagnose-log",
        help="classify vLLM / container logs: root-cause label with line-numbered evidence",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="log files (plain, gzip, xz or bzip2); - for stdin")
    p.add_argument("--format", choices=["json", "text"], default="text")
    p.add_argument("--max-bytes", type=int, default=None, help="stop after this many bytes per log")
    p.add_argument("--engine", choices=["auto", "hyperscan", "re2", "re"], default="auto")
    p.set_defaults(func=run)
    return p


def _record(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """One log's diagnosis as the plain dict the JSON output lists."""
    from ..logs import diagnose_log

    if path == "-":
        d = diagnose_log(sys.stdin.buffer.read(), max_bytes=args.max_bytes, engine=args.engine)
        d.source = "<stdin>"
    else:
        d = diagnose_log(path, max_bytes=args.max_bytes, engine=args.engine)
    out = d.to_dict()
    out = {"path": path, **{k: v for k, v in out.items() if k != "source"}}
    return out


def run(args: argparse.Namespace) -> int:
    """Print diagnoses; exit 0 when every log was read (whatever the labels), 2 if one was not."""
    records = [_record(p, args) for p in args.paths]
    if args.format == "json":
        json.dump(records, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for r in records:
            head = f"{r['path']}: {r['label']}"
            if r["status"] != "ok":
                head += f" [{r['status']}: {r['reason']}]"
            print(head)
            shown = [
                f
                for f in r["findings"]
                if f["severity"] != "info" and (f["label"] != "unrecognized_error" or r["label"] == f["label"])
            ]
            for f in shown[:12]:
                print(f"  line {f['line']:>7}  {f['label']:<28} {f['text'][:160]}")
            top = next((f for f in r["findings"] if f["label"] == r["label"] and f["severity"] != "info"), None)
            if top:
                print(f"  next: {top['advice']}")
    return exit_codes.REFUSED if any(r["status"] == "unreadable" for r in records) else exit_codes.OK
