"""Multi-GPU communication: an nccl-tests output parser and a bounded NCCL / Gloo all-reduce.

Why both: a site that already runs NVIDIA's nccl-tests hands over its ``all_reduce_perf``
output (bus bandwidth per size, ``#wrong`` per row, the out-of-bounds summary); otherwise the
canary runs its own small all-reduce across the local GPUs with torch.distributed. Either way a
hang is the typical failure (P2P, SHM or IB misconfiguration), so the check runs in a
subprocess with a hard timeout and records the hang as a fail, never blocks the runbook.
"""

from __future__ import annotations

import re
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import Record
from .gpu_probe import run_json

_NUM = r"(?:[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|N/A)"
# size count type redop [root] | time algbw busbw #wrong | time algbw busbw #wrong
ROW = re.compile(
    rf"(?:^|\s)(\d+)\s+(\d+)\s+([a-z0-9_]+)\s+([a-z]+)\s+(?:(-?\d+)\s+)?"
    rf"({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s*$",
    re.I,
)
OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)", re.I)
AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.]+(?:e[+-]?\d+)?)", re.I)
HEADER = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
DEVICE = re.compile(
    r"#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.+?)\s*$"
)
CONCLUDED = re.compile(r"#\s*Collective test concluded:\s*(\S+)")
ERROR = re.compile(r"NCCL WARN|Test NCCL failure|Test CUDA failure|NCCL error|unhandled (?:system|cuda) error", re.I)


def _num(text: str) -> float | None:
    return None if text.upper() == "N/A" else float(text)


@dataclass
class NcclRow(Record):
    """One message size of an nccl-tests run: bandwidths and the #wrong count that matters most."""

    SCHEMA = "nccl_tests_row"
    size_bytes: int
    count: int
    dtype: str
    redop: str
    oop_time_us: float | None
    oop_algbw: float | None
    oop_busbw: float | None
    oop_wrong: float | None
    ip_time_us: float | None
    ip_algbw: float | None
    ip_busbw: float | None
    ip_wrong: float | None


@dataclass
class NcclTestsResult(Record):
    """What an nccl-tests run says: rows, wrong counts, out-of-bounds summary and bus bandwidth."""

    SCHEMA = "nccl_tests_result"
    source: str = ""
    test: str | None = None
    n_gpus: int | None = None
    ranks: int = 0
    hosts: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    wrong_total: int = 0
    wrong_rows: int = 0
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    avg_busbw_gbps: float | None = None
    max_busbw_gbps: float | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when rows were found and the run reached its summary line (it did not die midway)."""
        return bool(self.rows) and self.out_of_bounds is not None

    def problems(self, min_busbw_gbps: float | None = None) -> list[str]:
        """Why this result does not pass: no rows, wrong results, bandwidth below the floor."""
        out = []
        if not self.rows:
            out.append("no result rows found (not an nccl-tests output, or the test died before its first size)")
        if self.wrong_total:
            out.append(f"#wrong = {self.wrong_total} across {self.wrong_rows} rows")
        if self.out_of_bounds_ok is False:
            out.append(f"Out of bounds values : {self.out_of_bounds} FAILED")
        if self.rows and self.out_of_bounds is None:
            out.append("no 'Out of bounds values' summary: the run did not finish")
        if self.errors:
            out.append(f"errors in output: {self.errors[0]}")
        if min_busbw_gbps is not None and (self.avg_busbw_gbps or 0.0) < min_busbw_gbps:
            out.append(f"average bus bandwidth {self.avg_busbw_gbps} GB/s below {min_busbw_gbps} GB/s")
        return out


def parse_nccl_tests(text: str, source: str = "") -> NcclTestsResult:
    """Parse nccl-tests (``all_reduce_perf`` and siblings) output; NCCL INFO lines are ignored."""
    res = NcclTestsResult(source=source)
    for raw in text.splitlines():
        line = raw.rstrip()
        if m := HEADER.search(line):
            res.n_gpus = int(m.group(2))
        if m := DEVICE.search(line):
            res.ranks += 1
            if m.group(2) not in res.hosts:
                res.hosts.append(m.group(2))
            res.devices.append(m.group(4))
            continue
        if m := OOB.search(line):
            res.out_of_bounds, res.out_of_bounds_ok = int(m.group(1)), m.group(2).upper() == "OK"
            continue
        if m := AVG.search(line):
            res.avg_busbw_gbps = float(m.group(1))
            continue
        if m := CONCLUDED.search(line):
            res.test = m.group(1)
            continue
        if ERROR.search(line) and len(res.errors) < 10:
            res.errors.append(line.strip()[:300])
            continue
        if line.lstrip().startswith("#"):
            continue
        if m := ROW.search(line):
            g = m.groups()
            row = NcclRow(int(g[0]), int(g[1]), g[2], g[3], *(_num(x) for x in g[5:13]))
            res.rows.append(row)
            wrong = sum(int(w) for w in (row.oop_wrong, row.ip_wrong) if w)
            if wrong:
                res.wrong_total += wrong
                res.wrong_rows += 1
    bws = [b for r in res.rows for b in (r.oop_busbw, r.ip_busbw) if b is not None]
    res.max_busbw_gbps = max(bws) if bws else None
    if res.test is None and "all_reduce" in text:
        res.test = "all_reduce_perf"
    return res


def load_nccl_tests(path: str | Path) -> NcclTestsResult:
    """Read an nccl-tests output file, bounded; an unreadable file is a result saying so."""
    p = Path(path)
    return parse_nccl_tests(p.read_text(encoding="utf-8", errors="replace"), str(p))


ALLREDUCE_SCRIPT = r"""
import datetime, json, os, sys, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

def worker(rank, world, backend, port, q, timeout_s, numel):
    try:
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
        dev = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(rank)
        x = torch.full((numel,), float(rank + 1), device=dev)
        dist.all_reduce(x)  # warm-up
        x.fill_(float(rank + 1))
        if backend == "nccl":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        if backend == "nccl":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        expect = world * (world + 1) / 2
        ok = bool(torch.allclose(x, torch.full_like(x, expect)))
        q.put({"rank": rank, "ok": ok, "seconds": dt, "value": float(x[0].item()), "expect": expect})
        dist.destroy_process_group()
    except Exception as exc:
        q.put({"rank": rank, "ok": False, "error": f"{type(exc).__name__}: {exc}"})

if __name__ == "__main__":
    backend, world, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    timeout_s, numel = float(sys.argv[4]), int(sys.argv[5])
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, backend, port, q, timeout_s, numel)) for r in range(world)]
    for p in procs:
        p.start()
    results = [q.get(timeout=timeout_s + 30) for _ in range(world)]
    for p in procs:
        p.join(timeout=10)
    ok = all(r.get("ok") for r in results)
    secs = max((r.get("seconds") or 0.0) for r in results)
    nbytes = numel * 4
    busbw = (2 * (world - 1) / world) * nbytes / secs / 1e9 if ok and secs > 0 else None
    print(json.dumps({"backend": backend, "world": world, "ok": ok, "seconds": secs, "bytes": nbytes,
                      "busbw_gbps": busbw, "ranks": sorted(results, key=lambda r: r["rank"])}))
"""


def allreduce_check(
    backend: str, world: int, timeout_s: float, numel: int = 16 * 1024 * 1024, python: str | None = None
) -> dict[str, Any]:
    """One all-reduce across ``world`` local ranks; a hang past ``timeout_s`` is an error, not a block.

    The script is written to a temporary file: spawned ranks re-import ``__main__`` by path.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    with tempfile.TemporaryDirectory(prefix="canary-allreduce-") as tmp:
        script = Path(tmp) / "allreduce.py"
        script.write_text(ALLREDUCE_SCRIPT, encoding="utf-8")
        argv = [python or sys.executable, str(script), backend, str(world), str(port), str(timeout_s * 0.8), str(numel)]
        out = run_json(argv, timeout_s)
    out.setdefault("backend", backend)
    out.setdefault("world", world)
    out.setdefault("ok", False)
    return out
