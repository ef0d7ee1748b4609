#!/usr/bin/env python3
"""Score the log classifier on the labelled dev corpus and print the report.

Usage: scripts/eval_log_classifier.py [--corpus PATH] [--engine auto|re2|re] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

from vllm_runbooks.logs.evaluate import DEV_CORPUS, evaluate, format_report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV_CORPUS))
    ap.add_argument("--engine", default="auto", choices=["auto", "hyperscan", "re2", "re"])
    ap.add_argument("--json", action="store_true", help="print the full report as JSON")
    args = ap.parse_args(argv)
    rep = evaluate(args.corpus, engine=args.engine)
    print(json.dumps(rep, indent=2) if args.json else format_report(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
