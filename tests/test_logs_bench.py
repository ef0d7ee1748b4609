"""The throughput benchmark runs end to end and prints both figures (small size: CI-friendly)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("grep") is None, reason="grep not installed")
def test_benchmark_prints_ours_and_grep(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_log_classifier.py"),
            "--size-mb",
            "8",
            "--cache-dir",
            str(tmp_path),
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    ours = re.search(r"^ours .* = +([0-9.]+) MB/s +whole process .*label=nccl_error", r.stdout, re.M)
    grep = re.search(r"^grep .*= +([0-9.]+) MB/s +\(cpu [0-9.]+s; LC_ALL=C; -c -> ([0-9]+) lines\)", r.stdout, re.M)
    start = re.search(r"^start : +([0-9.]+)s whole process on a one-line log", r.stdout, re.M)
    ratio = re.search(r"^ratio : .* = ([0-9.]+)x wall, ([0-9.]+)x cpu", r.stdout, re.M)
    assert ours and grep and start and ratio, r.stdout
    assert float(ours.group(1)) > 0 and int(grep.group(2)) > 0 and float(start.group(1)) > 0
