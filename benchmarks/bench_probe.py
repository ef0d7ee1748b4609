"""Wall time of ``vllm-runbooks probe`` (goal: under 2 s without docker); prints figures.

Runs the probe as a user would (a fresh process each time) with the default captures, where
vLLM/torch versions come from python-env.json (no torch import), and with ``--collect-env``, the
old behaviour that waits on ``python -m vllm.collect_env``. Reports the median and spread of the
wall time and the slowest captures from probe.json.

Also times the kernel-log scan (``probe.scan_filtered``) over a synthetic 1 GiB journal (a fake
``journalctl`` streaming noise after one Xid 79 line): it must stop at its byte bound, keep the Xid,
and take seconds, not minutes.

Usage: python benchmarks/bench_probe.py [--runs 3] [--no-collect-env] [--python PATH] [--kernel-log-gib 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _probe(extra: list[str], out: Path) -> tuple[float, dict]:
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", "probe", "--out", str(out), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    if res.returncode:
        raise SystemExit(f"probe failed ({res.returncode}): {res.stderr[-500:]}")
    return wall, json.loads((out / "probe.json").read_text())


def _report(label: str, walls: list[float], meta: dict) -> None:
    caps = sorted(meta["captures"].items(), key=lambda kv: -kv[1]["duration_s"])[:3]
    slow = ", ".join(f"{k} {v['duration_s']:.2f} s ({v['status']})" for k, v in caps)
    spread = f"{min(walls):.2f}-{max(walls):.2f}" if len(walls) > 1 else f"{walls[0]:.2f}"
    print(f"{label:<28} median {statistics.median(walls):6.2f} s  (runs {len(walls)}, {spread} s); slowest: {slow}")
    env = meta["captures"].get("python-env.json")
    if env:
        print(f"{'':<28} python-env.json: {env['status']} in {env['duration_s']:.3f} s")


def _bench_kernel_log(gib: float) -> None:
    """The Xid scan over ``gib`` GiB of journal output: bytes read, lines, kept lines, wall time."""
    import os

    from vllm_runbooks import probe

    with tempfile.TemporaryDirectory(prefix="bench-klog-") as tmp:
        fake = Path(tmp) / "journalctl"
        noise = "2026-11-29T20:41:02+0000 node kernel: " + "x" * 200
        fake.write_text(
            "#!/bin/sh\necho 'kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.'\n"
            f"yes '{noise}' | head -c {int(gib * 2**30)}\n"
        )
        fake.chmod(0o755)
        old = os.environ["PATH"]
        os.environ["PATH"] = f"{tmp}:{old}"
        try:
            t0 = time.monotonic()
            kept, stats = probe.scan_filtered(["journalctl"], timeout_s=120)
            wall = time.monotonic() - t0
        finally:
            os.environ["PATH"] = old
    print(
        f"{'kernel-log scan':<28} {gib:g} GiB offered: read {stats['bytes'] / 2**20:.0f} MiB "
        f"({stats['lines']} lines) in {wall:.2f} s, kept {len(kept)}, stopped: {stats['stopped'] or 'end of output'}"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-collect-env", action="store_true", help="skip the slow --collect-env comparison")
    ap.add_argument("--python", help="target Python passed to the probe (--python)")
    ap.add_argument("--kernel-log-gib", type=float, default=1.0, help="size of the synthetic journal (0: skip)")
    args = ap.parse_args()
    extra = ["--python", args.python] if args.python else []
    cases = [("default (python-env.json)", extra)]
    if not args.no_collect_env:
        cases.append(("--collect-env (old default)", [*extra, "--collect-env"]))
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp:
        for label, flags in cases:
            walls, meta = [], {}
            for i in range(args.runs):
                wall, meta = _probe(flags, Path(tmp) / f"{len(walls)}-{label[:7].strip('-')}-{i}")
                walls.append(wall)
            _report(label, walls, meta)
    if args.kernel_log_gib:
        _bench_kernel_log(args.kernel_log_gib)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
