"""`make demo`: the procedure end to end on the embedded defaults.

1. Runbooks 01 → 02 on each constructed sample incident (one run directory per incident).
2. Runbook 01 on this machine (no GPU here: it completes and records the driver as unavailable).
3. The embedded vLLM CPU target is started; runbooks 03 and 04 run against it; it is stopped.
Then every HTML copy is listed. Exit code: 0 when every runbook ran (a verdict of
"driver_too_old" is a correct result, not a failure), 1 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vllm_runbooks.runner import RunbookResult, available_runbooks, new_run_dir, run_runbook

REPO = Path(__file__).resolve().parents[1]
INCIDENTS = REPO / "examples" / "incidents"


def _run(name: str, params: dict, run_dir: Path, results: list[RunbookResult]) -> RunbookResult | None:
    if name not in available_runbooks():
        print(f"demo: runbook {name} is not in runbooks/ yet; skipped")
        return None
    print(f"demo: {name} → {run_dir}", flush=True)
    result = run_runbook(name, params, run_dir, progress=False)
    print("   ", result.summary_line(), flush=True)
    results.append(result)
    return result


def main() -> int:
    results: list[RunbookResult] = []
    for incident in sorted(p for p in INCIDENTS.iterdir() if p.is_dir()):
        run_dir = new_run_dir(label=f"demo-{incident.name}")
        _run("evidence_capture", {"source": str(incident)}, run_dir, results)
        _run("compatibility_decision", {"evidence_dir": str(run_dir)}, run_dir, results)

    local_dir = new_run_dir(label="demo-local")
    _run("evidence_capture", {"source": "local"}, local_dir, results)

    target_books = [n for n in ("canary_validation", "prefix_cache_check") if n in available_runbooks()]
    if target_books:
        from vllm_runbooks.target import start_target, stop_target

        print("demo: starting the embedded vLLM CPU target (about a minute)…", flush=True)
        handle = start_target("demo")
        if not handle.ok:
            print(f"demo: target failed to start: {handle.failure}", file=sys.stderr)
            return 1
        try:
            target_dir = new_run_dir(label="demo-target")
            endpoint = {"endpoint": handle.base_url, "model": handle.model}
            launch = " ".join(["python", "-m", "vllm.entrypoints.openai.api_server", *handle.args])
            extra = {
                "canary_validation": {"server_log": handle.log_path},
                "prefix_cache_check": {"log_path": handle.log_path, "launch_command": launch},
            }
            for name in target_books:
                _run(name, {**endpoint, **extra.get(name, {})}, target_dir, results)
        finally:
            stopped = stop_target("demo")
            print(f"demo: target stopped ({stopped.signal or 'not running'})")

    print("\nHTML evidence:")
    for r in results:
        print(f"  {r.html}")
    failed = [r for r in results if r.status != "ok"]
    for r in failed:
        print(f"demo: {r.name} failed: {r.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
