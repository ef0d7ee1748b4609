"""How much one change-record build reads: run.json parses, file hashes, result reads and wall time.

Runbook 06 must read each runbook's result once, typed, through ``runs.load_results`` (issue 20
item 5). This counts, for one ``build_record`` over a real run directory (and optionally its
baseline): how often run.json was parsed (``runjson.read_run_json``), how many files were hashed
(``runjson.sha256_file``), how many result files were decoded (``runjson.read_checked_json``), and
the median wall time over a few builds.

Usage: python benchmarks/bench_record_reads.py RUN_DIR [--baseline DIR] [--runs 5]
(``make demo`` leaves a before/after pair under ``runs/``.)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm_runbooks.change_record import build_record
from vllm_runbooks.execution import runjson

COUNTED = ("read_run_json", "sha256_file", "read_checked_json")


def _counting(calls: Counter, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return fn(*args, **kwargs)

    return counted


def count_one_build(run_dir: Path, baseline: Path | None) -> Counter:
    """The calls of one build, each counted wherever it is called from (the module attribute is wrapped)."""
    import importlib

    calls: Counter = Counter()
    patched: list[tuple[Any, str, Any]] = []
    modules = [runjson] + [
        importlib.import_module(m)
        for m in (
            "vllm_runbooks.stage",
            "vllm_runbooks.execution.runs",
            "vllm_runbooks.change_record.sources",
            "vllm_runbooks.change_record.integrity",
            "vllm_runbooks.change_record.approvals",
            "vllm_runbooks.evidence.model",
        )
    ]
    for module in modules:
        for name in COUNTED:
            if hasattr(module, name):
                original = getattr(module, name)
                patched.append((module, name, original))
                setattr(module, name, _counting(calls, name, original))
    try:
        build_record(run_dir, baseline)
    finally:
        for module, name, original in patched:
            setattr(module, name, original)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    calls = count_one_build(args.run_dir, args.baseline)
    times = []
    for _ in range(max(1, args.runs)):
        t0 = time.perf_counter()
        build_record(args.run_dir, args.baseline)
        times.append(time.perf_counter() - t0)
    files = sum(1 for p in args.run_dir.rglob("*") if p.is_file())
    print(f"run {args.run_dir.name}: {files} files" + (f", baseline {args.baseline.name}" if args.baseline else ""))
    print(f"run.json parses: {calls['read_run_json']}")
    print(f"file hashes:     {calls['sha256_file']}")
    print(f"result reads:    {calls['read_checked_json']} (+ runbook 01's evidence, which reads itself)")
    print(f"build wall time: median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
