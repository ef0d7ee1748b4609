#!/usr/bin/env python3
"""The load engine against ``vllm bench serve`` (and other HTTP stacks), side by side in one run.

Against ``benchmarks/stream_server.py`` (a zero-cost vLLM-shaped stream server) pinned to one
core, each client pinned to another core (``--client-core``), in one run:

1. throughput — chat, 16 tokens, ``--requests`` at concurrency ``--concurrency`` (2000 at 64 by
   default): requests/s and client CPU ms per request, for our engine (uvloop and plain asyncio),
   a minimal httpx client, a minimal aiohttp client, and ``vllm bench serve``;
2. timing error — the server injects TTFT (``--ttft-ms``, 50 by default) on an absolute schedule
   and reports how late it actually sent each first chunk; the error of a client is its mean
   measured TTFT minus the injected TTFT, at concurrency 1 and at ``--concurrency``.

Only ratios within one run mean anything: absolute req/s depend on the machine and its load.
Every client times and parses every chunk (JSON per SSE event).

Usage: python benchmarks/bench_load_engine.py [--requests 2000] [--concurrency 64] [--repeat 3] [--quick]
(best of ``--repeat`` tries for requests/s, the median try for timing error: a shared machine's
other work only ever slows a try down.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
BODY = {
    "model": "stream-double",
    "messages": [{"role": "user", "content": "Say something about GPUs."}],
    "max_tokens": 16,
    "stream": True,
    "stream_options": {"include_usage": True},
    "ignore_eos": True,
}


# -- clients (run in a pinned child process) ---------------------------------------------------
def _child_ours(url: str, n: int, c: int, use_uvloop: bool) -> dict:
    from vllm_runbooks.load.engine import LoadSpec, Payload, Target, run_async, run_coroutine

    payload = Payload(dict(BODY))
    spec = LoadSpec(requests=n, concurrency=c, max_seconds=600, request_timeout_s=60)
    run = run_coroutine(lambda: run_async(Target(url), [payload], spec), use_uvloop=use_uvloop)
    ok = [r for r in run.records if r.ok]
    return {
        "completed": len(ok),
        "failed": len(run.records) - len(ok),
        "duration_s": run.duration_s,
        "cpu_s": run.client_cpu_s,
        "ttfts": [r.ttft_s for r in ok],
        "chunks": sum(r.chunks for r in ok),
    }


def _child_httpx(url: str, n: int, c: int) -> dict:
    import httpx

    async def main() -> dict:
        ttfts: list[float] = []
        chunks = 0
        nxt = 0
        limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

            async def worker() -> None:
                nonlocal nxt, chunks
                while nxt < n:
                    nxt += 1
                    t0 = time.perf_counter()
                    first = None
                    async with client.stream("POST", "/v1/chat/completions", json=BODY) as r:
                        async for line in r.aiter_lines():
                            if not line.startswith("data: ") or line == "data: [DONE]":
                                continue
                            obj = json.loads(line[6:])
                            chunks += 1
                            ch = obj.get("choices")
                            if first is None and ch and ch[0].get("delta", {}).get("content"):
                                first = time.perf_counter() - t0
                    ttfts.append(first or 0.0)

            t = time.perf_counter()
            cpu = time.process_time()
            await asyncio.gather(*(worker() for _ in range(c)))
            return {
                "completed": len(ttfts),
                "failed": 0,
                "duration_s": time.perf_counter() - t,
                "cpu_s": time.process_time() - cpu,
                "ttfts": ttfts,
                "chunks": chunks,
            }

    return asyncio.run(main())


def _child_aiohttp(url: str, n: int, c: int) -> dict:
    import aiohttp

    async def main() -> dict:
        ttfts: list[float] = []
        chunks = 0
        nxt = 0
        conn = aiohttp.TCPConnector(limit=c)
        async with aiohttp.ClientSession(url, connector=conn) as session:

            async def worker() -> None:
                nonlocal nxt, chunks
                while nxt < n:
                    nxt += 1
                    t0 = time.perf_counter()
                    first = None
                    async with session.post("/v1/chat/completions", json=BODY) as r:
                        async for raw in r.content:
                            line = raw.strip()
                            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                                continue
                            obj = json.loads(line[6:])
                            chunks += 1
                            ch = obj.get("choices")
                            if first is None and ch and ch[0].get("delta", {}).get("content"):
                                first = time.perf_counter() - t0
                    ttfts.append(first or 0.0)

            t = time.perf_counter()
            cpu = time.process_time()
            await asyncio.gather(*(worker() for _ in range(c)))
            return {
                "completed": len(ttfts),
                "failed": 0,
                "duration_s": time.perf_counter() - t,
                "cpu_s": time.process_time() - cpu,
                "ttfts": ttfts,
                "chunks": chunks,
            }

    return asyncio.run(main())


def child_main(args: argparse.Namespace) -> int:
    if args.child == "ours":
        out = _child_ours(args.url, args.requests, args.concurrency, True)
    elif args.child == "ours-asyncio":
        out = _child_ours(args.url, args.requests, args.concurrency, False)
    elif args.child == "httpx":
        out = _child_httpx(args.url, args.requests, args.concurrency)
    elif args.child == "aiohttp":
        out = _child_aiohttp(args.url, args.requests, args.concurrency)
    else:
        raise SystemExit(f"unknown client {args.child}")
    print(json.dumps(out))
    return 0


# -- orchestration ----------------------------------------------------------------------------
def _pin(core: int | None):
    if core is None:
        return None
    return lambda: os.sched_setaffinity(0, {core})


class Server:
    """The stream server in its own pinned process; ``stats()`` is what it says it emitted."""

    def __init__(self, core: int | None, ttft_ms: float = 0.0) -> None:
        from vllm_runbooks.target.server import free_port

        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "stream_server.py"), "--port", str(self.port), "--ttft-ms", str(ttft_ms)],
            preexec_fn=_pin(core),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.1)  # waiting for the child to listen (bounded)
        raise RuntimeError("stream server did not start")

    def stats(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(self.url + "/stats", timeout=5) as r:
            return json.loads(r.read())

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_child(kind: str, url: str, n: int, c: int, core: int | None) -> dict:
    cmd = [sys.executable, str(Path(__file__)), "--child", kind, "--url", url]
    cmd += ["--requests", str(n), "--concurrency", str(c)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "lib"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_pin(core), env=env, timeout=900)
    if proc.returncode != 0:
        return {"error": proc.stderr[-600:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_bench(url: str, n: int, c: int, core: int | None, tokenizer: str) -> dict:
    """``vllm bench serve`` (the wrapper calls its own entry point) with --save-detailed."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable, str(HERE / "vllm_bench_serve.py"), "--backend", "openai-chat", "--base-url", url,
            "--endpoint", "/v1/chat/completions", "--model", "stream-double", "--tokenizer", tokenizer,
            "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "16",
            "--num-prompts", str(n), "--max-concurrency", str(c), "--ignore-eos", "--disable-tqdm",
            "--ready-check-timeout-sec", "0", "--save-result", "--save-detailed", "--result-dir", tmp,
            "--result-filename", "bench.json",
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_pin(core), timeout=1200)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            return {"error": (proc.stderr or proc.stdout)[-800:]}
        data = json.loads((Path(tmp) / "bench.json").read_text())
    ok = [t for t, e in zip(data["ttfts"], data["errors"], strict=False) if not e]
    return {
        "completed": data["completed"],
        "failed": data.get("failed", 0),
        "duration_s": data["duration"],
        # its process also imports vLLM and tokenizes the prompts: CPU while sending is at most its
        # duration on the one core it is pinned to (it runs that core at 100 %)
        "cpu_s": min(data["duration"], (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)),
        "ttfts": ok,
        "chunks": None,
    }


def summarise(name: str, out: dict, injected_ms: float | None = None) -> dict:
    if "error" in out:
        return {"client": name, "error": out["error"]}
    n = out["completed"]
    row = {
        "client": name,
        "completed": n,
        "failed": out["failed"],
        "req_per_s": round(n / out["duration_s"], 1) if out["duration_s"] else None,
        "cpu_ms_per_req": round(1000 * out["cpu_s"] / n, 3) if n else None,
    }
    if injected_ms is not None and out["ttfts"]:
        ttfts = sorted(out["ttfts"])
        mean = 1000 * sum(ttfts) / len(ttfts)
        row["ttft_mean_ms"] = round(mean, 3)
        row["ttft_p50_ms"] = round(1000 * ttfts[len(ttfts) // 2], 3)
        row["error_ms"] = round(mean - injected_ms, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--timing-requests-c1", type=int, default=200)
    ap.add_argument("--client-core", type=int, default=0)
    ap.add_argument("--server-core", type=int, default=1)
    ap.add_argument("--no-pin", action="store_true", help="do not pin (a one-core machine)")
    ap.add_argument("--clients", default="ours,ours-asyncio,aiohttp,httpx,vllm-bench")
    ap.add_argument("--repeat", type=int, default=3, help="tries per client: best req/s, median timing error")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not figures)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--url", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child_main(args)
    if args.quick:
        args.requests, args.timing_requests_c1, args.repeat = 200, 20, 1
    ccore = None if args.no_pin else args.client_core
    score = None if args.no_pin else args.server_core
    clients = args.clients.split(",")
    tokenizer = ""
    if "vllm-bench" in clients:
        from vllm_runbooks.target import ensure_model

        build = ensure_model()
        if not build.ok:
            print(f"vllm-bench skipped: no tokenizer ({build.error})")
            clients.remove("vllm-bench")
        tokenizer = build.path

    def one(kind: str, url: str, n: int, c: int) -> dict:
        if kind == "vllm-bench":
            return run_bench(url, n, c, ccore, tokenizer)
        return run_child(kind, url, n, c, ccore)

    print(f"# clients pinned to core {ccore}, stream server to core {score}; one run, side by side")
    print(f"## throughput: chat, 16 tokens, {args.requests} requests, concurrency {args.concurrency}")
    rows = []
    for kind in clients:
        tries = []
        for _ in range(max(1, args.repeat)):
            server = Server(score)
            try:
                tries.append(summarise(kind, one(kind, server.url, args.requests, args.concurrency)))
            finally:
                server.close()
        ok = [t for t in tries if t.get("req_per_s")]
        best = max(ok, key=lambda t: t["req_per_s"]) if ok else tries[-1]
        best["tries_req_per_s"] = [t.get("req_per_s") for t in tries]
        rows.append(best)
        print(json.dumps(rows[-1]), flush=True)
    base = next((r for r in rows if r["client"] == "vllm-bench" and r.get("req_per_s")), None)
    ours = next((r for r in rows if r["client"] == "ours" and r.get("req_per_s")), None)
    if base and ours:
        print(f"ours / vllm bench serve requests/s: {ours['req_per_s'] / base['req_per_s']:.2f}x")

    print(f"## timing error against an injected TTFT of {args.ttft_ms:g} ms (server reports its own lateness)")
    errors: dict[tuple[str, int], float] = {}
    for c, n in ((1, args.timing_requests_c1), (args.concurrency, args.requests)):
        for kind in [k for k in clients if k in ("ours", "vllm-bench")]:
            tries = []
            for _ in range(max(1, args.repeat)):
                server = Server(score, args.ttft_ms)
                try:
                    row = summarise(kind, one(kind, server.url, n, c), args.ttft_ms)
                    row["concurrency"] = c
                    row["server_first_chunk_late_ms"] = server.stats()["first_chunk_late_ms"]
                finally:
                    server.close()
                late = row["server_first_chunk_late_ms"].get("mean") or 0.0
                if "error_ms" in row:
                    row["net_error_ms"] = round(row["error_ms"] - late, 3)
                tries.append(row)
            ok = sorted((t for t in tries if "net_error_ms" in t), key=lambda t: t["net_error_ms"])
            row = ok[len(ok) // 2] if ok else tries[-1]  # the median try
            row["tries_net_error_ms"] = [t.get("net_error_ms") for t in tries]
            if "net_error_ms" in row:
                errors[(kind, c)] = row["net_error_ms"]
            print(json.dumps(row), flush=True)
    for c in (1, args.concurrency):
        if ("ours", c) in errors and ("vllm-bench", c) in errors:
            ours_e, bench_e = errors[("ours", c)], errors[("vllm-bench", c)]
            print(
                f"c={c}: TTFT error (net of the server's own lateness) ours {ours_e:+.2f} ms, bench {bench_e:+.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
