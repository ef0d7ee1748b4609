"""The load-engine benchmark runs end to end and prints its figures (small size: CI-friendly).

The figures themselves (ours vs ``vllm bench serve``) come from a full run on a quiet machine and
are reported with the change, not asserted here: a timed unit test would only measure CI's load.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT


@pytest.mark.slow
def test_benchmark_prints_both_sections() -> None:
    cmd = [sys.executable, "benchmarks/bench_load_engine.py", "--quick", "--no-pin", "--clients", "ours,aiohttp"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    throughput = {r["client"]: r for r in rows if "concurrency" not in r}
    assert set(throughput) == {"ours", "aiohttp"}
    assert all(r["completed"] == 200 and r["req_per_s"] > 0 and r["cpu_ms_per_req"] > 0 for r in throughput.values())
    timing = [r for r in rows if "concurrency" in r]
    assert {r["concurrency"] for r in timing} == {1, 64}
    for r in timing:  # the injected 50 ms is seen, never less
        assert r["ttft_mean_ms"] >= 50.0 and r["server_first_chunk_late_ms"]["p50"] is not None
