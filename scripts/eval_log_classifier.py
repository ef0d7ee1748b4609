#!/usr/bin/env python3
"""Score the log classifier on the labelled dev corpus and print the report.

Usage: scripts/eval_log_classifier.py [--corpus PATH] [--engine auto|re2|re] [--json] [--blind]

``--blind`` scores a batch that must stay unread (docs/LOG_BLIND_BATCHES.md): it prints the
issue's figures over every excerpt and the counts of (expected, predicted) pairs, never a line of
a log, so the figures can be recorded before anyone reads the batch.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from vllm_runbooks.logs.classify import diagnose_text
from vllm_runbooks.logs.evaluate import DEV_CORPUS, evaluate, figures, format_report, load_corpus


def blind_report(path: str, engine: str = "auto") -> dict:
    """The figures and the confusion counts of a batch, with no log text in them."""
    pairs = [(str(r["label"]), diagnose_text(str(r["log"]), engine=engine).label) for r in load_corpus(path)]
    misses = Counter(f"{e} -> {p}" for e, p in pairs if e != p)
    return {"figures": figures(pairs), "misses": dict(misses.most_common())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV_CORPUS))
    ap.add_argument("--engine", default="auto", choices=["auto", "hyperscan", "re2", "re"])
    ap.add_argument("--json", action="store_true", help="print the full report as JSON")
    ap.add_argument("--blind", action="store_true", help="figures and miss counts only, no log lines")
    args = ap.parse_args(argv)
    if args.blind:
        print(json.dumps(blind_report(args.corpus, engine=args.engine), indent=2))
        return 0
    rep = evaluate(args.corpus, engine=args.engine)
    print(json.dumps(rep, indent=2) if args.json else format_report(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
