"""Runbook 07 on a REAL local multi-node Ray cluster: five Ray nodes on this machine.

Each node presents a sample incident's facts through the documented test seam
(``nodeprobe.TEST_SEAM_ENV``, set per node when the test starts it; the answers are marked
``simulated``): the r575 node, the same node after the r580 upgrade, a CPU-only node, a node
killed while its probe runs, and a node that never answers. One cluster for the module: starting
Ray nodes is the slow part on a small machine.
"""

from __future__ import annotations

import json
import re
import tarfile
import threading
import time
from pathlib import Path

import pytest

from ci_rules import need_module
from conftest import R575, R575_PLANTED, R580, REPO_ROOT
from vllm_runbooks.cli import main
from vllm_runbooks.execution import runs
from vllm_runbooks.execution.offline_html import plotlyjs_name
from vllm_runbooks.fleet import Config, run
from vllm_runbooks.fleet.nodeprobe import TEST_SEAM_ENV

need_module("ray", "the fleet extra: make test installs it")
pytestmark = pytest.mark.slow

CPU_NODE = REPO_ROOT / "examples" / "fleet" / "bundles" / "cpu-node-03"
NODE_TIMEOUT_S = 45
MiB = 1024 * 1024
# Ray's own start-up waits (agent ports, raylet registration) are sized for idle machines; a small,
# busy CI machine needs longer before a node counts as failed.
SLOW_MACHINE_ENV = {"RAY_agent_register_timeout_ms": "120000", "RAY_raylet_start_wait_time_s": "120"}


def _node_args(spec: dict) -> dict:
    # Small on purpose: one CPU, the smallest object store Ray accepts, no dashboard.
    return {
        "num_cpus": 1,
        "object_store_memory": 80 * MiB,
        "include_dashboard": False,
        "env_vars": {TEST_SEAM_ENV: json.dumps(spec)},
    }


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory: pytest.TempPathFactory):
    import os

    from ray.cluster_utils import Cluster

    saved = {k: os.environ.get(k) for k in SLOW_MACHINE_ENV}
    os.environ.update(SLOW_MACHINE_ENV)  # inherited by every Ray process the cluster starts
    work = tmp_path_factory.mktemp("ray-fleet")
    started = work / "doomed-started"
    cluster = Cluster(initialize_head=True, head_node_args=_node_args({"bundle": str(R575)}))
    try:
        nodes = {"r575": cluster.head_node}
        nodes["r580"] = cluster.add_node(**_node_args({"bundle": str(R580)}))
        nodes["cpu"] = cluster.add_node(**_node_args({"bundle": str(CPU_NODE)}))
        nodes["doomed"] = cluster.add_node(**_node_args({"bundle": str(R580), "hold_s": 300, "started": str(started)}))
        nodes["stuck"] = cluster.add_node(**_node_args({"bundle": str(R580), "hold_s": 300}))
        cluster.wait_for_nodes()
        killed: list[float] = []

        def kill_doomed_once_its_probe_runs() -> None:
            deadline = time.monotonic() + 120
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.1)  # waiting for an event with a deadline, not synchronising by sleep
            if started.exists():
                cluster.remove_node(nodes["doomed"], allow_graceful=False)
                killed.append(time.monotonic())

        killer = threading.Thread(target=kill_doomed_once_its_probe_runs, daemon=True)
        killer.start()
        run_dir = work / "run"
        t0 = time.monotonic()
        rc = main(
            [
                "fleet",
                "--ray-address",
                cluster.address,
                "--image-cuda",
                "13.0",
                "--profile",
                "kimi_k3",
                "--node-timeout",
                str(NODE_TIMEOUT_S),
                "--run-dir",
                str(run_dir),
                "--no-progress",
            ]
        )
        took = time.monotonic() - t0
        killer.join(timeout=5)
        labels = {k: n.node_id[:8] for k, n in nodes.items()}
        yield {"rc": rc, "run_dir": run_dir, "labels": labels, "killed": killed, "took": took, "work": work}
    finally:
        cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _rows(result) -> dict:
    return {n.node: n for n in result.nodes}


def _row_for(result, node_id8: str):
    found = [n for n in result.nodes if n.node.endswith(node_id8)]
    assert len(found) == 1, [n.node for n in result.nodes]
    return found[0]


def test_every_node_gets_the_verdict_its_facts_call_for(surveyed) -> None:
    assert surveyed["rc"] == 0
    assert surveyed["killed"], "the doomed node's probe never started"
    result = runs.load_result(surveyed["run_dir"], "fleet_survey")
    assert result.mode == "ray" and len(result.nodes) == 5
    ids = surveyed["labels"]
    r575, r580, cpu = (_row_for(result, ids[k]) for k in ("r575", "r580", "cpu"))
    assert (r575.verdict, r575.action, r575.driver_branch) == ("driver_too_old", "upgrade_driver", "r575")
    assert (r580.verdict, r580.action, r580.driver_branch) == ("compatible", "ready", "r580")
    assert cpu.action == "no_gpu" and "nvidia-smi not found" in cpu.reason
    assert {r575.source, r580.source, cpu.source} == {"simulated"}  # the seam is never passed off as real
    assert any("test seam" in n for n in result.notes)


def test_a_killed_node_and_a_silent_node_are_listed_with_why(surveyed) -> None:
    result = runs.load_result(surveyed["run_dir"], "fleet_survey")
    ids = surveyed["labels"]
    doomed, stuck = _row_for(result, ids["doomed"]), _row_for(result, ids["stuck"])
    assert (doomed.action, doomed.why) == ("unanswered", "died"), doomed.reason
    assert (stuck.action, stuck.why) == ("unanswered", "timed_out"), stuck.reason
    assert f"{NODE_TIMEOUT_S}s" in stuck.reason
    # Bounded: the survey waited one node timeout, not the stuck node's 300 s.
    assert surveyed["took"] < NODE_TIMEOUT_S + 120


def test_headline_plan_and_offline_html(surveyed) -> None:
    run_dir = surveyed["run_dir"]
    record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    head = record["runbooks"][0]["headline"]
    assert head["runbook"] == "fleet_survey" and head["verdict"] == "upgrade_needed"
    f = head["figures"]
    assert (f["nodes_surveyed"], f["answered"], f["unanswered"]) == (5, 3, 2)
    assert f["verdicts"] == {"unanswered": 2, "driver_too_old": 1, "compatible": 1, "unknown": 1}
    # Two configurations of one node each: the idle one (r575, its server exited) is the canary.
    assert f["canary"].endswith(surveyed["labels"]["r575"])
    result = runs.load_result(run_dir, "fleet_survey")
    assert [s.kind for s in result.plan.stages][:2] == ["canary", "few_nodes"]
    assert {e["node"] for e in result.plan.excluded} >= {
        n.node for n in result.nodes if n.action in ("unanswered", "no_gpu")
    }
    page = (run_dir / "07_fleet_survey.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*src=[\"']https?://[^\"']*plot", page)
    assert "Plotly.newPlot" in page and len(page) < 1_000_000  # drawn from the run's one plotly.js
    assert f'src="{plotlyjs_name()}"' in page and (run_dir / plotlyjs_name()).is_file()


def test_bundles_came_back_redacted_and_bundle_mode_gives_the_same_table(surveyed, tmp_path: Path) -> None:
    run_dir = surveyed["run_dir"]
    ray_result = runs.load_result(run_dir, "fleet_survey")
    tarballs = sorted((run_dir / "fleet").glob("*/bundle.tar.gz"))
    assert len(tarballs) == 3
    for path in run_dir.rglob("*"):
        if not path.is_file():
            continue
        texts = [path.read_bytes()]
        if path.name.endswith(".tar.gz"):
            with tarfile.open(path) as tf:
                texts = [tf.extractfile(m).read() for m in tf if m.isreg()]
        for data in texts:
            text = data.decode("utf-8", "replace")
            assert not [s for s in R575_PLANTED if s in text], path
    again = run(Config(bundles=[str(run_dir / "fleet")], run_dir=str(tmp_path / "again")))
    answered = {n.node: n.row() for n in ray_result.nodes if n.answered}
    assert {n.node: n.row() for n in again.nodes} == answered
