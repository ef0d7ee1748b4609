"""Time from a bundle to runbook 02's verdict, and where it goes; prints figures.

What a user does: ``vllm-runbooks run evidence_capture -r source BUNDLE`` then ``vllm-runbooks run
compatibility_decision -r evidence_dir RUN --run-dir RUN``, two fresh processes. The first part
times exactly that (wall per command, the pair, over ``--runs`` repetitions). The second part runs
the same pair in one process with each phase of ``run_runbook`` timed: process start-up and CLI
imports (measured separately), papermill's kernel start + cell execution, the scrub, the full HTML
copy, the approver's report view, run.json. ``check-compat`` alone is timed for reference.

Usage: python benchmarks/bench_time_to_verdict.py [--runs 3] [--bundle examples/incidents/k3-cu130-on-r575]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

CLI = [sys.executable, "-m", "vllm_runbooks.cli"]


def _timed(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv[3:6])} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return wall, proc


def cli_pair(bundle: str, base: Path) -> tuple[float, float]:
    """Wall seconds of the two commands a user types."""
    quiet = ["--no-progress", "--format", "json"]
    t1, proc = _timed([*CLI, "run", "evidence_capture", "-r", "source", bundle, "--runs-dir", str(base), *quiet])
    run_dir = json.loads(proc.stdout)["run_dir"]
    t2, proc = _timed(
        [*CLI, "run", "compatibility_decision", "-r", "evidence_dir", run_dir, "--run-dir", run_dir, *quiet]
    )
    verdict = json.loads(proc.stdout)["headline"]["verdict"]
    assert verdict == "driver_too_old", verdict
    return t1, t2


def phases(bundle: str, base: Path) -> dict[str, float]:
    """Seconds per phase of ``run_runbook`` for the pair, in one process."""
    import papermill

    from vllm_runbooks.execution import runner

    spent: dict[str, float] = defaultdict(float)

    def wrap(owner: object, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: object, **kwargs: object) -> object:
            t0 = time.monotonic()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[label] += time.monotonic() - t0

        setattr(owner, name, timed)

    wrap(papermill, "execute_notebook", "papermill: kernel start + cells")
    for name, label in (
        ("scrub_notebook", "scrub notebook"),
        ("render_html", "full HTML copy"),
        ("render_report_view", "report view HTML"),
        ("record_running", "run.json (running)"),
        ("record_run", "run.json (result)"),
    ):
        wrap(runner, name, label)
    t0 = time.monotonic()
    first = runner.run_runbook("evidence_capture", {"source": bundle}, base / "phases")
    runner.run_runbook("compatibility_decision", {"evidence_dir": first.run_dir}, first.run_dir)
    spent["total in-process"] = time.monotonic() - t0
    return dict(spent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bundle", default="examples/incidents/k3-cu130-on-r575")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-verdict-") as tmp:
        base = Path(tmp)
        startup = [_timed([*CLI, "--version"])[0] for _ in range(3)]
        compat = [
            _timed([*CLI, "check-compat", "--image-cuda", "13.0", "--driver", "575.57.08", "--gpu", "NVIDIA H200"])[0]
            for _ in range(3)
        ]
        pairs = [cli_pair(args.bundle, base) for _ in range(max(1, args.runs))]
        print(f"CLI start-up (--version):           median {statistics.median(startup):.2f} s")
        print(f"check-compat alone:                 median {statistics.median(compat):.2f} s")
        for label, values in (
            ("run evidence_capture", [a for a, _ in pairs]),
            ("run compatibility_decision", [b for _, b in pairs]),
            ("the pair (bundle -> verdict)", [a + b for a, b in pairs]),
        ):
            spread = f"min {min(values):.2f}, max {max(values):.2f}"
            print(f"{label + ':':<36}median {statistics.median(values):.2f} s ({spread})")
        print("phases of the pair, in one process:")
        for label, seconds in sorted(phases(args.bundle, base).items(), key=lambda kv: -kv[1]):
            print(f"  {label:<34}{seconds:6.2f} s")
        sizes = {p.name: p.stat().st_size for p in (base / "phases").glob("*.html")}
        print("HTML sizes: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(sizes.items())))


if __name__ == "__main__":
    main()
