"""Runbook 05 end to end on the real embedded vLLM target, with small caps and one restart.

What it proves: every stage runs or skips with a reason against a real vLLM, the ramp finds a knee,
the verdict and headline land in run.json, the per-request records are saved as redacted JSONL,
the HTML opens offline (plotly inlined, no script fetched from a network), and the restart-stability
step restarts the target through its own stop/start and times its return to healthy.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vllm_runbooks.execution.offline_html import plotlyjs_name
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.target import TargetHandle

#: the demo's caps (scripts/demo.py uses the same; see the issue-11 report).
DEMO_PARAMETERS = dict(
    max_concurrency=32,  # past the target's max_num_seqs=16: the ramp finds a real knee
    level_requests=32,
    level_seconds=10.0,
    stage_seconds=20.0,
    max_requests=300,
    max_seconds=80.0,
    same_prefix_requests=3,
    same_prefix_tokens=256,
    image_tools_requests=2,
    request_timeout_s=30.0,
    metrics_interval_s=0.5,
)


@pytest.mark.server
@pytest.mark.slow
def test_runbook_05_on_the_real_target_with_a_restart(target: TargetHandle, tmp_path: Path) -> None:
    params = {
        "endpoint": target.base_url,
        "model": target.model,
        "server_log": target.log_path,
        "restart_count": 1,
        "restart_target": target.name,
        "restart_target_root": str(Path(target.state_dir).parent),
        **DEMO_PARAMETERS,
    }
    run_dir = tmp_path / "run"
    result = run_runbook("load_check", params, run_dir)
    assert result.status == "ok", result.error
    head = result.headline
    assert head["runbook"] == "load_check" and head["verdict"] in ("pass", "degraded"), head
    figures = head["figures"]
    assert figures["knee_concurrency"] and figures["goodput_per_s"] > 0 and figures["p95_ttft_ms_at_knee"] > 0
    assert set(figures["stages"]) == {
        "health",
        "single_short",
        "single_long",
        "same_prefix",
        "ramp",
        "image_tools",
        "multi_node",
    }
    run_json = json.loads((run_dir / "run.json").read_text())
    assert run_json["runbooks"][0]["headline"]["verdict"] == head["verdict"]

    saved = json.loads((run_dir / "load" / "load_check.json").read_text())
    stages = {s["stage"]: s for s in saved["stages"]}
    assert all(s["reason"] for s in stages.values())  # every stage says why
    assert stages["multi_node"]["status"] == "skip"  # no GPUs here, and it says so
    restarts = stages["health"]["details"]["restarts"]
    assert len(restarts) == 1 and restarts[0]["ok"] and restarts[0]["seconds_to_healthy"] > 0
    assert stages["single_long"]["status"] == "pass"
    assert stages["ramp"]["levels"] and saved["metrics"], "no /metrics samples taken"

    rows = (run_dir / "load" / "requests.jsonl").read_text().splitlines()
    assert len(rows) == figures["requests"] and all(json.loads(r)["stage"] for r in rows)

    html = (run_dir / "05_load_check.html").read_text()
    assert "Latency vs concurrency" in html and "Errors by class and stage" in html
    # the figures are drawn from the run directory's one plotly.js, never fetched from elsewhere
    assert "Plotly.newPlot" in html and not re.search(r"<script[^>]+src=[\"']https?://", html)
    assert f'src="{plotlyjs_name()}"' in html
