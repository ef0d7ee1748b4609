#!/usr/bin/env python3
"""Runbook 07 at fleet scale: 1,000 node bundles read, decided and planned (goal: under 10 s).

Generates N bundles (default 1,000) from the sample incidents with varied drivers and GPUs:
driver versions and the CUDA each supports come from the data file's NVIDIA table
(``toolkit_driver_minimums``: a driver at a toolkit's minimum exposes that toolkit's CUDA), GPU
names and compute capabilities from its GPU table; a few nodes are the CPU-only sample. Then:

* full survey — every bundle through ``collect_evidence`` and runbook 02's decision, the table,
  counts and plan (``fleet.run`` in bundle-directory mode, worker processes as configured);
* aggregation + decision — the same from the nodes' evidence already on disk (what a re-plan
  costs): decisions (cache cleared), counts, plan.

Prints wall time and peak memory (this process and the largest worker, ru_maxrss).

Usage: benchmarks/bench_fleet.py [--nodes 1000] [--workers 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from vllm_runbooks.compat import load_facts
from vllm_runbooks.compat.facts import parse_cuda_version
from vllm_runbooks.fleet import Config, run
from vllm_runbooks.fleet import survey as fleet_survey
from vllm_runbooks.fleet.plan import make_plan

ROOT = Path(__file__).resolve().parents[1]
R575 = ROOT / "examples" / "incidents" / "k3-cu130-on-r575"
R580 = ROOT / "examples" / "incidents" / "k3-after-r580-upgrade"
CPU = ROOT / "examples" / "fleet" / "bundles" / "cpu-node-03"
GPU_NAMES = (
    "NVIDIA H200",
    "NVIDIA H100 80GB HBM3",
    "NVIDIA B200",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA L40S",
    "Tesla V100-SXM2-32GB",
)
BASES = {R575: ("575.57.08", "12.9"), R580: ("580.95.05", "13.0")}


def driver_pairs() -> list[tuple[str, str]]:
    """(driver, CUDA it exposes) from the data file: each toolkit's minimum Linux driver."""
    import yaml

    data = yaml.safe_load((ROOT / "lib" / "vllm_runbooks" / "data" / "cuda_compat.yaml").read_text())
    pairs = []
    for entry in data["toolkit_driver_minimums"]["entries"]:
        m = re.search(r"(\d+\.\d+\.\d+|\d+\.\d+)", str(entry.get("linux_x86_64") or ""))
        version, _ = parse_cuda_version(str(entry["cuda"]).split()[0])
        if m and version and version[0] >= 12:
            pairs.append((m.group(1), f"{version[0]}.{version[1]}"))
    return sorted(set(pairs))


def generate(folder: Path, nodes: int, seed: int = 7) -> dict[str, int]:
    """Write ``nodes`` bundle folders; returns how many of each kind."""
    rng = random.Random(seed)
    facts = load_facts()
    pairs = driver_pairs()
    texts = {base: {p.name: p.read_bytes() for p in base.iterdir() if p.is_file()} for base in BASES}
    kinds: dict[str, int] = {}
    for i in range(nodes):
        out = folder / f"node-{i:04d}"
        out.mkdir(parents=True)
        if rng.random() < 0.03:
            shutil.copytree(CPU, out, dirs_exist_ok=True)
            kinds["cpu"] = kinds.get("cpu", 0) + 1
            continue
        base = R575 if rng.random() < 0.5 else R580
        old_driver, old_cuda = BASES[base]
        driver, cuda = rng.choice(pairs)
        gpu = rng.choice(GPU_NAMES)
        cc = facts.gpu(gpu).compute_capability
        for name, data in texts[base].items():
            text = data.decode("utf-8", "replace")
            text = text.replace(old_driver, driver).replace("NVIDIA H200", gpu)
            text = text.replace(f"<cuda_version>{old_cuda}<", f"<cuda_version>{cuda}<")
            text = text.replace(f"CUDA Version: {old_cuda}", f"CUDA Version: {cuda}")
            if name == "nvidia-smi-query.csv":
                text = text.replace(", 9.0, ", f", {cc}, ")
            (out / name).write_text(text, encoding="utf-8")
        kinds[gpu] = kinds.get(gpu, 0) + 1
    return kinds


def cpu_seconds() -> tuple[float, float]:
    """(user, system) CPU seconds of this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


def peak_mib() -> tuple[float, float]:
    """Peak RSS of this process and of the largest finished child (MiB; Linux reports KiB)."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=0, help="bundle-reading processes (0: one per CPU, at most 8)")
    ap.add_argument("--keep", help="write bundles and the run here and keep them (default: a temp dir)")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    try:
        t0 = time.perf_counter()
        kinds = generate(work / "bundles", args.nodes)
        print(f"generated {args.nodes} bundles in {time.perf_counter() - t0:.1f} s: {kinds}")

        t0, cpu0 = time.perf_counter(), cpu_seconds()
        result = run(
            Config(bundles=[str(work / "bundles")], run_dir=str(work / "run"), workers=args.workers, today="2026-11-30")
        )
        full = time.perf_counter() - t0
        cpu = tuple(b - a for a, b in zip(cpu0, cpu_seconds(), strict=True))
        head = result.headline()
        print(f"full survey (bundle -> evidence -> decision -> table/plan): {full:.2f} s")
        # a shared machine's load inflates the wall time far more than these
        print(f"  CPU, this process and its workers: user {cpu[0]:.1f} s, system {cpu[1]:.1f} s")
        print(f"  verdicts: {head.figures['verdicts']}")
        print(f"  actions: {result.action_counts()}; canary: {head.figures['canary']}")
        print(f"  stages: {len(result.plan.stages)} (wave size {result.plan.wave_size})")

        fleet_survey._CACHE.clear()
        t0 = time.perf_counter()
        import datetime as dt

        today = dt.date(2026, 11, 30)
        verdicts = [
            fleet_survey._decide(Path(n.evidence_dir).parent, result.target, today)["verdict"]
            for n in result.nodes
            if n.evidence_dir
        ]
        plan = make_plan(result.nodes, result.target)
        counts = (result.verdict_counts(), result.branch_counts(), result.action_counts())
        agg = time.perf_counter() - t0
        assert len(verdicts) == len(result.answered) and plan.canary and counts
        made = len(fleet_survey._CACHE)
        print(f"aggregation + decision from the nodes' evidence: {agg:.2f} s ({made} decisions made)")
        me, kids = peak_mib()
        print(f"peak RSS: this process {me:.0f} MiB; largest worker {kids:.0f} MiB")
        goal = "met" if full < 10 else "NOT met"
        print(f"goal (< 10 s for the full survey of {args.nodes} bundles): {goal}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
