"""Imports of real ``vllm bench serve`` and GuideLLM results give the figures the tools printed.

The fixtures in tests/data/load were made by running each tool against the embedded vLLM target
(commands in tests/data/load/README.md); their console output is kept beside them, and these tests
read the expected numbers from that output, not from the JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import TESTS_DIR
from vllm_runbooks.load import importers
from vllm_runbooks.load.result import LoadCheckResult
from vllm_runbooks.load.stage import Config, run
from vllm_runbooks.stage import load_result

DATA = TESTS_DIR / "data" / "load"
BENCH = DATA / "vllm_bench_chat_c4.json"
GUIDELLM = DATA / "guidellm_benchmarks.json"


def _printed_bench() -> dict[str, float]:
    """``P95 TTFT (ms): 142.98`` → {"p95_ttft": 142.98}; ``Mean ...`` likewise."""
    out = {}
    for line in (DATA / "vllm_bench_stdout.txt").read_text().splitlines():
        m = re.match(r"(Mean|P50|P95|P99) (TTFT|TPOT|ITL|E2EL) \(ms\):\s+([0-9.]+)", line)
        if m:
            out[f"{m.group(1).lower()}_{m.group(2).lower()}"] = float(m.group(3))
        m = re.match(r"Request throughput \(req/s\):\s+([0-9.]+)", line)
        if m:
            out["rps"] = float(m.group(1))
        m = re.match(r"Successful requests:\s+(\d+)", line)
        if m:
            out["ok"] = float(m.group(1))
    return out


def test_vllm_bench_import_matches_its_printed_percentiles() -> None:
    printed = _printed_bench()
    assert len(printed) >= 18, printed  # the console output really has the figures
    res = run(Config(endpoint=None, results_file=str(BENCH)), quiet=True)
    assert res.verdict == "pass" and res.knee_concurrency == 4
    (level,) = res.ramp_levels()
    s = level.summary
    assert s.completed == printed["ok"] and s.requests_per_s == pytest.approx(printed["rps"], abs=0.01)
    names = {"ttft": s.ttft_ms, "tpot": s.tpot_ms, "itl": s.itl_ms, "e2el": s.e2e_ms}
    for metric, stats in names.items():
        for p in ("mean", "p50", "p95", "p99"):
            assert stats[p] == pytest.approx(printed[f"{p}_{metric}"], abs=0.006), (metric, p)
    assert len(res.records) == 40 and all(r.ok and r.level == 4 for r in res.records)


def _printed_guidellm() -> dict[int, list[float]]:
    """Latency table rows: concurrency → [TTFT mean, TTFT median, TTFT p95, ITL mean, Mdn, p95, TPOT mean, Mdn, p95]."""
    rows = {}
    for line in (DATA / "guidellm_stdout.txt").read_text().splitlines():
        m = re.match(r"\| concurrent@(\d+) \| [0-9.]+ ± [0-9.]+ \|", line)
        if not m:
            continue
        cells = [c.strip().rstrip("*") for c in line.strip("|").split("|")]
        nums = [float(c.split("±")[0]) for c in cells[1:]]
        rows[int(m.group(1))] = nums[3:6] + nums[9:15]
    return rows


def test_guidellm_import_matches_its_printed_table() -> None:
    printed = _printed_guidellm()
    assert set(printed) == {1, 4}
    res = run(Config(endpoint=None, results_file=str(GUIDELLM)), quiet=True)
    assert [lv.concurrency for lv in res.ramp_levels()] == [1, 4]
    for lv in res.ramp_levels():
        s = lv.summary
        ours = [s.ttft_ms["mean"], s.ttft_ms["p50"], s.ttft_ms["p95"]]
        ours += [
            s.itl_ms["mean"],
            s.itl_ms["p50"],
            s.itl_ms["p95"],
            s.tpot_ms["mean"],
            s.tpot_ms["p50"],
            s.tpot_ms["p95"],
        ]
        assert ours == pytest.approx(printed[lv.concurrency], abs=0.051), lv.concurrency
        assert s.completed == 16
    assert len(res.records) == 32 and res.verdict == "pass"


def test_imported_result_saves_and_reads_back(tmp_path: Path) -> None:
    res = run(Config(endpoint=None, results_file=str(BENCH)), quiet=True)
    res.save(tmp_path)
    lines = (tmp_path / "load" / "requests.jsonl").read_text().splitlines()
    assert len(lines) == 40 and json.loads(lines[0])["stage"] == "ramp"
    back = load_result(tmp_path, "load_check")
    assert isinstance(back, LoadCheckResult)
    assert back.headline().to_dict() == res.headline().to_dict()
    res.save(tmp_path)  # a second save never overwrites the first
    assert (tmp_path / "load" / "requests-2.jsonl").exists() and (tmp_path / "load" / "load_check-2.json").exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("not json {", "not readable JSON"),
        ('{"hello": 1}', "not a vllm bench serve"),
        ('{"ttfts": [], "request_throughput": 1}', "--save-detailed"),
        ('{"benchmarks": []}', "no benchmarks"),
        ('{"benchmarks": [{"config": {}}]}', "no 'requests'"),
    ],
)
def test_bad_results_files_are_inconclusive_with_the_reason(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(content)
    res = run(Config(endpoint=None, results_file=str(path)), quiet=True)
    assert res.verdict == "inconclusive" and why in res.reason


def test_oversized_and_missing_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importers, "MAX_FILE_BYTES", 100)
    res = run(Config(endpoint=None, results_file=str(BENCH)), quiet=True)
    assert res.verdict == "inconclusive" and "import cap" in res.reason
    res = run(Config(endpoint=None, results_file=str(tmp_path / "nope.json")), quiet=True)
    assert res.verdict == "inconclusive" and "cannot read" in res.reason


@pytest.mark.parametrize("kind", ["vllm_bench", "guidellm"])
def test_a_deeply_nested_results_file_is_inconclusive_not_a_recursion_error(tmp_path: Path, kind: str) -> None:
    """Issue 22: the importer read JSON without the depth guard, so nesting too deep for the parser
    crashed runbook 05 with RecursionError instead of the promised "inconclusive (with why)"."""
    deep = "[" * 200_000 + "]" * 200_000
    head = '{"ttfts": [0.1], "request_throughput": 1, "errors": ' if kind == "vllm_bench" else '{"benchmarks": '
    path = tmp_path / "results.json"
    path.write_text(head + deep + "}")
    res = run(Config(endpoint=None, results_file=str(path)), quiet=True)
    assert res.verdict == "inconclusive"
    assert "not readable JSON" in res.reason and "nested too deeply" in res.reason


def test_non_utf8_bytes_in_a_results_file_are_replaced_and_said(tmp_path: Path) -> None:
    """The one bounded reader replaces bytes that are not UTF-8 and says so: the import still
    counts the requests instead of refusing the whole file for one byte in a model name."""
    data = json.loads(BENCH.read_text())
    raw = json.dumps({**data, "model_id": "MODEL"}).encode().replace(b"MODEL", b"m\xff")
    path = tmp_path / "odd.json"
    path.write_bytes(raw)
    res = run(Config(endpoint=None, results_file=str(path)), quiet=True)
    assert res.model == "m\ufffd" and res.totals["requests"] == len(data["ttfts"])
    assert any("not UTF-8" in w for w in res.warnings), res.warnings
