#!/usr/bin/env python3
"""Redaction throughput (MB/s): every byte of a stored log and a bundle passes ``redact.py``.

Three texts, each redacted with ``redact_text`` (whole text), one ``LineRedactor`` call per line,

* (a) a realistic vLLM log with few secrets: the startup log in tests/data, the sample
  incidents' container logs and the labelled corpus' logs, plus request and metrics lines,
  repeated to about 4 MB; one secret in about 2,000 lines;
* (b) a secret-dense text: every secret shape of the tests, one per line, between plain lines;
* (c) the tests' corpus of secret shapes alone (each string of the parametrized redaction tests).

and through ``probe.store_log`` (the evidence capture's copy of a log: read, redact, write).

Times are CPU seconds of this process (the machine is shared; wall time would measure the
neighbours). Each figure is the best of ``--repeat`` runs.

Usage: benchmarks/bench_redact.py [--mb 4] [--repeat 3] [--profile a|b|c]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import json
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

from vllm_runbooks import probe, redact

ROOT = Path(__file__).resolve().parents[1]
SHAPE_TESTS = ("test_redact.py", "test_hardening_redact.py")


def shape_corpus() -> list[str]:
    """Every string argument of the parametrized tests in SHAPE_TESTS (the secret shapes and their neighbours)."""
    out: list[str] = []
    for name in SHAPE_TESTS:
        spec = importlib.util.spec_from_file_location(f"_bench_{name[:-3]}", ROOT / "tests" / name)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for fn in vars(mod).values():
            for mark in getattr(fn, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                for case in mark.args[1]:
                    values = case.values if hasattr(case, "values") else case
                    for v in values if isinstance(values, tuple | list) else (values,):
                        if isinstance(v, str) and len(v) < 4096:
                            out.append(v)
    return out


def realistic_log(mb: float) -> str:
    """A vLLM-style log of about ``mb`` megabytes with one planted secret per ~2,000 lines."""
    lines: list[str] = []
    lines += (ROOT / "tests/data/prefix_cache/startup-default-0.32.0-cpu.log").read_text().splitlines()
    for p in sorted((ROOT / "examples/incidents").glob("*/container-logs.txt")):
        lines += p.read_text().splitlines()
    corpus = Path("/work/shared/corpus/logs_dev.jsonl")
    for p in (corpus, ROOT / "tests/data/logs_heldout.jsonl"):
        if p.is_file():
            for row in p.read_text().splitlines():
                lines += str(json.loads(row).get("log") or "").splitlines()
    for i in range(200):
        lines.append(
            f"(APIServer pid=10605) INFO 11-29 22:03:{i % 60:02d} [logger.py:41] Received request chatcmpl-{i:032x}: "
            f"prompt: 'Summarise the incident report number {i}', params: SamplingParams(n=1, temperature=0.7, "
            "top_p=1.0, max_tokens=256, stop=[], logprobs=None), prompt_token_ids: None, lora_request: None."
        )
        lines.append(
            f"(APIServer pid=10605) INFO 11-29 22:03:{i % 60:02d} [loggers.py:123] Engine 000: Avg prompt throughput:"
            f" {i * 1.5:.1f} tokens/s, Avg generation throughput: {i * 3.1:.1f} tokens/s, Running: 4 reqs, "
            "Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 48.2%"
        )
        lines.append(f'INFO:     127.0.0.1:{40000 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
    secrets = ["export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345", "curl -H 'Authorization: Bearer abcdef123456'"]
    target = int(mb * 1_000_000)
    out: list[str] = []
    size = n = 0
    while size < target:
        line = lines[n % len(lines)]
        if n % 2000 == 1999:
            line = secrets[(n // 2000) % len(secrets)]
        out.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(out)


def dense_text(shapes: list[str], mb: float) -> str:
    """Every shape, one per line, each after a plain log line, repeated to about ``mb`` megabytes."""
    plain = "(APIServer pid=1) INFO 11-29 22:02:15 [core.py:133] loading weights took 1.2 s"
    block = "\n".join(f"{plain}\n{s}" for s in shapes)
    return "\n".join([block] * max(1, int(mb * 1_000_000 / (len(block) + 1))))


def measure(fn: Callable[[str], object], text: str, repeat: int) -> float:
    """Best MB/s (CPU time) of ``repeat`` runs of ``fn(text)``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn(text)
        best = min(best, time.process_time() - t0)
    return len(text.encode()) / 1e6 / max(best, 1e-9)


def by_line(text: str) -> None:
    """What store_log does: one LineRedactor call per line."""
    red = redact.LineRedactor()
    for line in text.split("\n"):
        red(line)


def stored(text: str) -> None:
    """What the evidence capture does with a log: ``probe.store_log`` (read, redact in batches, write)."""
    probe.store_log(io.BytesIO(text.encode()), io.BytesIO(), cap_bytes=64 * 1024 * 1024)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=4.0, help="size of texts (a) and (b)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=("a", "b", "c"), help="print the top costs of one text instead")
    args = ap.parse_args()
    shapes = shape_corpus()
    texts = {
        "a": ("realistic vLLM log, few secrets", realistic_log(args.mb)),
        "b": ("secret-dense text", dense_text(shapes, args.mb / 4)),
        "c": (f"test corpus of secret shapes ({len(shapes)} strings)", "\n".join(shapes)),
    }
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        redact.redact_text(texts[args.profile][1])
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        return 0
    for key, (title, text) in texts.items():
        repeat = args.repeat if key != "c" else args.repeat * 20
        whole = measure(redact.redact_text, text, repeat)
        lines = measure(by_line, text, repeat)
        logs = measure(stored, text, repeat)
        print(
            f"({key}) {title}: {len(text.encode()) / 1e6:.2f} MB, {text.count(chr(10)) + 1} lines: "
            f"redact_text {whole:.2f} MB/s, LineRedactor per line {lines:.2f} MB/s, store_log {logs:.2f} MB/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
