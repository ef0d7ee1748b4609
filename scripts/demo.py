"""`make demo`: the procedure end to end on the embedded defaults, ending in a change record.

1. Before the change: the suite on the r575 sample incident (runbooks 01, 02 and the record;
   the runbooks that talk to a server are skipped with the reason) — the baseline.
2. After the change: the embedded vLLM CPU target is started and the suite runs on the
   after-upgrade incident (01, 02) plus the target (03, 04, and 05 / 07 when their templates
   exist), then runbook 06 writes the change record against the baseline; the target is stopped.
Then the paths are printed: ``index.html`` (the whole run on one page) and ``change_record.html``
open offline in any browser.
Exit code: 0 when every runbook ran or was skipped with a reason, 1 otherwise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from vllm_runbooks.execution.runner import new_run_dir
from vllm_runbooks.execution.suite import SuiteEntry, SuiteResult, run_suite
from vllm_runbooks.execution.templates import available_runbooks, parameter_defaults

REPO = Path(__file__).resolve().parents[1]
INCIDENTS = REPO / "examples" / "incidents"
BEFORE = INCIDENTS / "k3-cu130-on-r575"
AFTER = INCIDENTS / "k3-after-r580-upgrade"
#: A cell that hangs fails its runbook after this long instead of stalling the demo.
CELL_TIMEOUT_S = 150
#: Runbook 05 on the demo: small and bounded, one restart of the embedded target (restart
#: stability for the record); parameters the template does not declare are dropped.
LOAD_DEMO = {
    "restart_count": 1,
    "restart_target": "demo",
    "max_seconds": 60,
    "stage_seconds": 10,
    "max_concurrency": 4,
    "level_requests": 8,
    "level_seconds": 8,
    "max_requests": 120,
}


def _show(entry: SuiteEntry) -> None:
    verdict = f" verdict={entry.verdict}" if entry.verdict else ""
    reason = f" ({entry.reason})" if entry.reason and entry.status != "ok" else ""
    print(f"    {entry.name:<24} {entry.status}{verdict}{reason}", flush=True)


def _suite(label: str, params: dict, baseline: Path | None = None) -> SuiteResult:
    run_dir = new_run_dir(label=label)
    print(f"demo: suite → {run_dir}", flush=True)
    return run_suite(params, run_dir, baseline, on_entry=_show, cell_timeout_s=CELL_TIMEOUT_S)


def main() -> int:
    t0 = time.monotonic()
    before = _suite("demo-before-r575", {"shared": {"source": str(BEFORE)}})
    books = available_runbooks()
    after: SuiteResult | None = None
    if "canary_validation" in books or "prefix_cache_check" in books:
        from vllm_runbooks.target import start_target, stop_target

        print("demo: starting the embedded vLLM CPU target (about a minute)…", flush=True)
        handle = start_target("demo")
        if not handle.ok:
            print(f"demo: target failed to start: {handle.failure}", file=sys.stderr)
            return 1
        try:
            launch = " ".join(["python", "-m", "vllm.entrypoints.openai.api_server", *handle.args])
            params: dict = {
                "shared": {"source": str(AFTER), "endpoint": handle.base_url, "model": handle.model},
                "canary_validation": {"server_log": handle.log_path},
                "prefix_cache_check": {"log_path": handle.log_path, "launch_command": launch},
            }
            # 05 and 07 once their templates exist; 05 bounded so the demo stays short.
            optional = {"load_check": LOAD_DEMO, "fleet_survey": {}}
            for name, section in optional.items():
                if name in books:
                    declared = parameter_defaults(books[name])
                    params[name] = {k: v for k, v in section.items() if k in declared}
            params = {k: v for k, v in params.items() if k == "shared" or k in books}
            after = _suite("demo-after-r580", params, Path(before.run_dir))
        finally:
            stopped = stop_target("demo")
            print(f"demo: target stopped ({stopped.signal or 'not running'})", flush=True)
    results = [before] + ([after] if after else [])
    final = results[-1]
    record = Path(final.run_dir)
    print(f"\nOpen first (the whole run on one page, offline): {record / 'index.html'}")
    print("Change record (open offline):")
    for name in ("change_record.html", "change_record.md", "06_change_record.report.html"):
        if (record / name).is_file():
            print(f"  {record / name}")
    print("Reports for the approver (no code):")
    for r in results:
        for path in sorted(Path(r.run_dir).glob("*.report.html")):
            print(f"  {path}")
    failed = [e for r in results for e in r.runbooks if e.status not in ("ok", "skipped")]
    for e in failed:
        print(f"demo: {e.name} {e.status}: {e.reason}", file=sys.stderr)
    print(f"demo: {time.monotonic() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
