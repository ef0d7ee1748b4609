"""Memory and time on the unbounded-input cases of issue 8; prints figures (goal: < 300 MB RSS).

1. a bundle tarball with a 1 GiB log member that has no newline;
2. a directory bundle with a 1 GiB log (many lines) beside the real one;
3. ``vllm-runbooks probe`` wall time (captures run concurrently).

Each case runs in its own process so its peak RSS is its own. Big files go to a temp dir.
Usage: python benchmarks/bench_hostile_inputs.py [--size-mib 1024]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
R575 = REPO / "examples" / "incidents" / "k3-cu130-on-r575"

CHILD = """
import json, resource, sys, time
from vllm_runbooks.evidence import collect_evidence
t0 = time.monotonic()
ev = collect_evidence(sys.argv[1], run_dir=sys.argv[2], only=["logs"], collector_timeout_s=60)
item = ev.items["logs"]
print(json.dumps({"seconds": round(time.monotonic() - t0, 1), "status": item.status,
                  "reason": (item.reason or "")[:300],
                  "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def _child(source: Path, run: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(source), str(run)], capture_output=True, text=True)
    if out.returncode:
        return {"error": out.stderr[-500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


class _Zeros:
    def __init__(self, n: int) -> None:
        self.left = n

    def read(self, k: int = -1) -> bytes:
        k = self.left if k < 0 else min(k, self.left)
        self.left -= k
        return b"a" * k


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    size = ap.parse_args().size_mib * 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        tmpdir = Path(tmp)
        tar = tmpdir / "bundle.tar"
        with tarfile.open(tar, "w") as tf:
            for p in sorted(R575.iterdir()):
                if p.is_file():
                    tf.add(p, arcname=p.name)
            info = tarfile.TarInfo("logs/one-line.log")
            info.size = size
            tf.addfile(info, _Zeros(size))
        print("1 GiB tar member without newline:", _child(tar, tmpdir / "run1"))
        tar.unlink()

        bundle = tmpdir / "bundle"
        shutil.copytree(R575, bundle)
        (bundle / "logs").mkdir()
        line = b"INFO 11-29 20:40:01 [core.py:1] a filler line of an over-chatty server, nothing wrong here\n"
        with (bundle / "logs" / "huge.log").open("wb") as f:
            block = line * (1024 * 1024 // len(line))
            for _ in range(size // len(block)):
                f.write(block)
        print("1 GiB log beside the real one:   ", _child(bundle, tmpdir / "run2"))

        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "vllm_runbooks.cli", "probe", "--out", str(tmpdir / "probe")],
            capture_output=True,
            check=False,
        )
        meta = json.loads((tmpdir / "probe" / "probe.json").read_text())
        slowest = max(meta["captures"].items(), key=lambda kv: kv[1]["duration_s"])
        print(
            f"probe wall time: {time.monotonic() - t0:.1f} s; slowest capture {slowest[0]} "
            f"{slowest[1]['duration_s']:.1f} s; sum of captures "
            f"{sum(c['duration_s'] for c in meta['captures'].values()):.1f} s"
        )
    print(f"(bench process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
