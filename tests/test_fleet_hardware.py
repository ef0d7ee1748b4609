"""Runbook 07, hardware before blame: every node's hardware verdict, VBIOS and fit, and the plan's rule.

A node whose GPU fell off the bus (a real ``NVRM: Xid ... 79`` line in its kernel log) is faulty:
never the canary, never in the few, never in a wave, and held back with the finding and NVIDIA's
action. A node whose GPUs run two VBIOS versions is degraded: never the canary, allowed in a wave.
The bundles are the committed sample incident changed the way ``tests/test_gpu_health_e2e.py``
changes it (its helper and its Xid line, not a copy); the evidence package and runbook 02's decision
are real. The saved result from before these fields existed is ``tests/data/fleet_hw/``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import INCIDENTS, REPO_ROOT
from run_factory import write_run
from test_gpu_health_e2e import SAMPLE, XID79, faulty_bundle
from vllm_runbooks.evidence.model import Evidence, Item
from vllm_runbooks.execution import runs
from vllm_runbooks.fleet import Config, FleetResult, NodeRow, TargetImage, make_plan, run
from vllm_runbooks.fleet import survey as fleet_survey
from vllm_runbooks.fleet.model import TABLE_COLUMNS
from vllm_runbooks.records import rebuild

CPU_BUNDLES = REPO_ROOT / "examples" / "fleet" / "bundles"
OLD_RESULT = Path(__file__).parent / "data" / "fleet_hw" / "result_before_hardware.json"
SAMPLE_VBIOS = "96.00.A5.00.01"
OTHER_VBIOS = "96.00.A5.00.7F"  # a second version on GPU 1 only: same model, not uniform


def _mixed_vbios(dest: Path) -> Path:
    """The sample with GPU 1 on another VBIOS than the other seven (GPU 0's block comes first)."""
    shutil.copytree(SAMPLE, dest)
    xml = (dest / "nvidia-smi-q.xml").read_text()
    tag = f"<vbios_version>{SAMPLE_VBIOS}</vbios_version>"
    second = xml.index(tag, xml.index(tag) + 1)
    (dest / "nvidia-smi-q.xml").write_text(
        xml[:second] + f"<vbios_version>{OTHER_VBIOS}</vbios_version>" + xml[second + len(tag) :]
    )
    return dest


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[FleetResult, Path]:
    """Six nodes of one configuration (the r580 sample, serving: none idle), so only hardware separates
    them. Names sort the faulty node first and the degraded one second: a plan that ignored hardware
    would pick them (same configuration, same idleness, then by name)."""
    root = tmp_path_factory.mktemp("fleet-hw")
    folder = root / "bundles"
    folder.mkdir()
    shutil.move(str(faulty_bundle(root / "work")), str(folder / "k3-a-faulty"))
    _mixed_vbios(folder / "k3-b-mixed-vbios")
    for name in ("k3-c-healthy", "k3-d-healthy", "k3-e-healthy", "k3-f-healthy"):
        shutil.copytree(SAMPLE, folder / name)
    fleet_survey._CACHE.clear()
    run_dir = root / "run"
    result = run(Config(bundles=[str(folder)], run_dir=str(run_dir), today="2026-12-01", few_nodes=1, wave_size=1))
    result.save(run_dir)
    return result, run_dir


def _nodes(result: FleetResult) -> dict[str, NodeRow]:
    return {n.node: n for n in result.nodes}


def _planned(result: FleetResult) -> dict[str, str]:
    return {n.node: s.kind for s in result.plan.stages for n in s.nodes}


def test_the_xid79_node_is_faulty_with_its_finding(fleet) -> None:
    result, _ = fleet
    row = _nodes(result)["k3-a-faulty"]
    assert row.hardware == "faulty" and row.xids == [79] and row.faulty_gpus == [0]
    assert row.hardware_summary.startswith("Xid 79; faulty GPU 0; Xid 79 (")
    checks = [f["check"] for f in row.hardware_findings if f["severity"] == "faulty"]
    assert checks == ["kernel_log.xid", "memory.row_remap_pending"]
    assert "GPU has fallen off the bus" in row.hardware_findings[0]["text"]
    # the compatibility verdict stays about compatibility; runbook 02's path is the hardware line
    assert (row.verdict, row.action, row.remediation) == ("compatible", "ready", "drain_and_reboot")
    assert row.row()["hardware"] == "faulty" and "Xid 79" in row.row()["hardware_summary"]


def test_the_faulty_node_is_held_back_never_planned(fleet) -> None:
    result, _ = fleet
    planned = _planned(result)
    assert "k3-a-faulty" not in planned and result.plan.canary != "k3-a-faulty"
    assert "k3-a-faulty" not in {e["node"] for e in result.plan.excluded}  # held back, not "cannot take it"
    (held,) = result.held_back
    assert held["node"] == "k3-a-faulty" and held["hardware"] == "faulty" and held["action"] == "ready"
    assert held["reason"].startswith("hardware faulty: Xid 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS")
    assert "row remap" in held["reason"]
    # NVIDIA's action for Xid 79 (the catalog's RESTART_BM bucket) and runbook 02's path for the node
    assert "drain the node and reboot it (bare-metal restart)" in held["what_to_do"]
    assert "Hardware line: drain the node and reboot it" in held["what_to_do"]
    assert any("held back" in n for n in result.plan.notes)
    html = result.held_back_view()._repr_html_()
    assert "k3-a-faulty" in html and "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS" in html
    assert "k3-a-faulty" in result.plan._repr_html_()


def test_mixed_vbios_is_degraded_kept_from_the_canary_but_in_a_wave(fleet) -> None:
    result, _ = fleet
    row = _nodes(result)["k3-b-mixed-vbios"]
    assert row.hardware == "degraded" and row.vbios == [SAMPLE_VBIOS, OTHER_VBIOS] and row.vbios_uniform is False
    assert row.row()["vbios"] == f"{SAMPLE_VBIOS}, {OTHER_VBIOS} (mixed)" and "VBIOS" in row.hardware_summary
    planned = _planned(result)
    assert result.plan.canary == "k3-c-healthy"  # the first healthy node by name, not the degraded one
    assert planned["k3-b-mixed-vbios"] == "wave" and planned["k3-d-healthy"] == "few_nodes"
    waves = [n.node for s in result.plan.stages if s.kind == "wave" for n in s.nodes]
    assert waves == ["k3-e-healthy", "k3-f-healthy", "k3-b-mixed-vbios"]  # healthy first
    assert "degraded nodes are never the canary" in result.plan.stages[0].why
    assert "degraded hardware allowed in a wave" in result.plan.stages[-1].why
    assert set(planned) == {n.node for n in result.nodes} - {"k3-a-faulty"}


def test_counts_per_hardware_verdict_and_vbios(fleet) -> None:
    result, _ = fleet
    assert result.hardware_counts() == {"healthy": 4, "degraded": 1, "faulty": 1}
    assert result.vbios_counts() == {SAMPLE_VBIOS: 6, OTHER_VBIOS: 1}
    head = result.headline()
    assert head.figures["hardware"] == {"healthy": 4, "degraded": 1, "faulty": 1}
    assert head.figures["vbios"] == {SAMPLE_VBIOS: 6, OTHER_VBIOS: 1} and head.figures["held_back"] == 1
    # every node is compatible, but one is held back: the fleet is not ready
    assert head.verdict == "incomplete" and head.figures["ready"] == 6
    scraps = result.scraps()
    assert scraps["fleet_counts"]["hardware"] == head.figures["hardware"]
    assert scraps["fleet_counts"]["vbios"] == head.figures["vbios"]
    assert [h["node"] for h in scraps["fleet_held_back"]] == ["k3-a-faulty"]
    json.dumps(scraps)
    html = result.hardware_view()._repr_html_()
    assert OTHER_VBIOS in html and "k3-b-mixed-vbios" in html and "k3-c-healthy" not in html
    hw_bar = next(t for t in result.figure("counts").figure.data if t.name == "hardware")
    assert dict(zip(hw_bar.x, hw_bar.y, strict=True)) == {"healthy": 4, "degraded": 1, "faulty": 1}


def test_decisions_still_shared_across_a_configuration(fleet) -> None:
    """Six nodes, one configuration: two decisions (the faulty node's remediation differs), not six, and
    the healthy nodes do not inherit the faulty node's path."""
    result, _ = fleet
    assert len(fleet_survey._CACHE) == 2
    paths = {n.node: n.remediation for n in result.nodes}
    assert paths.pop("k3-a-faulty") == "drain_and_reboot"
    assert set(paths.values()) == {"no_driver_change"}


def test_saved_result_and_csv_keep_the_hardware_columns(fleet) -> None:
    result, run_dir = fleet
    again = runs.load_result(run_dir, "fleet_survey")
    assert [n.row() for n in again.nodes] == [n.row() for n in result.nodes]
    assert again.held_back == result.held_back and again.plan.notes == result.plan.notes
    assert {n.node: n.hardware for n in again.plan.stages[0].nodes} == {"k3-c-healthy": "healthy"}
    header = (run_dir / "fleet" / "nodes.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[: len(TABLE_COLUMNS)] == list(TABLE_COLUMNS)
    assert {"hardware", "hardware_summary", "vbios", "fit"} <= set(header)


def test_the_untouched_sample_fleet_has_no_faulty_node(tmp_path: Path) -> None:
    result = run(Config(bundles=[str(INCIDENTS), str(CPU_BUNDLES)], run_dir=str(tmp_path), today="2026-11-30"))
    rows = _nodes(result)
    assert {n: r.hardware for n, r in rows.items()} == {
        "k3-cu130-on-r575": "healthy",
        "k3-after-r580-upgrade": "healthy",
        "cpu-node-03": "unknown",  # no GPU facts: not judged, not healthy
    }
    assert result.held_back == [] and result.headline().figures["held_back"] == 0
    assert result.vbios_counts() == {SAMPLE_VBIOS: 2, "no GPU": 1}
    # the samples carry no kernel-log.txt: 'healthy' says what it could not see
    assert "no kernel-log.txt" in rows["k3-cu130-on-r575"].hardware_summary
    assert rows["k3-cu130-on-r575"].fit == "pass" and rows["cpu-node-03"].fit == "unknown"
    assert result.plan.canary == "k3-cu130-on-r575" and result.headline().verdict == "upgrade_needed"


def test_a_bare_xid79_line_alone_holds_the_node_back(tmp_path: Path) -> None:
    """Only the kernel log changed (no row remap): the Xid alone makes the node faulty and held back."""
    folder = tmp_path / "bundles"
    shutil.copytree(SAMPLE, folder / "k3-xid-only")
    (folder / "k3-xid-only" / "kernel-log.txt").write_text(XID79 + "\n")
    shutil.copytree(SAMPLE, folder / "k3-zz-healthy")
    result = run(Config(bundles=[str(folder)], run_dir=str(tmp_path / "run"), today="2026-12-01"))
    row = _nodes(result)["k3-xid-only"]
    assert row.hardware == "faulty" and row.xids == [79]
    assert [h["node"] for h in result.held_back] == ["k3-xid-only"]
    assert result.plan.canary == "k3-zz-healthy" and set(_planned(result)) == {"k3-zz-healthy"}


# -- the plan's rule on rows (fit, unknown, degraded-only) --------------------------------------------
def _row(name: str, hardware: str = "healthy", idle: bool | None = None, **kw) -> NodeRow:
    return NodeRow(
        node=name,
        gpu_name="NVIDIA H200",
        gpu_count=8,
        driver_branch="r580",
        toolkit="1.17.8",
        action="ready",
        verdict="compatible",
        reason="r",
        hardware=hardware,
        idle=idle,
        **kw,
    )


def test_a_failed_fit_is_held_back_with_its_words() -> None:
    failed = "GPU 0: 4096 MiB free < 127872 MiB needed (0.9 × 142080 MiB): vLLM refuses to start"
    rows = [
        _row("a-fit", idle=True, fit="fail", fit_failed=[failed], remediation="free_gpu_memory"),
        _row("b-slow", fit="fail", fit_failed=["ready timeout: VLLM_ENGINE_READY_TIMEOUT_S=600 < expected 3600 s"]),
        _row("c-ok", fit="pass"),
    ]
    plan = make_plan(rows, TargetImage())
    assert plan.canary == "c-ok" and [s.kind for s in plan.stages] == ["canary"]
    held = {h["node"]: h for h in plan.held_back}
    assert set(held) == {"a-fit", "b-slow"}
    assert held["a-fit"]["reason"] == f"start-up fit failed: {failed}"
    assert "Fit: free the GPU memory other processes hold" in held["a-fit"]["what_to_do"]
    assert "raise VLLM_ENGINE_READY_TIMEOUT_S" in held["b-slow"]["what_to_do"]


def test_unknown_hardware_is_not_faulty_but_healthy_comes_first() -> None:
    plan = make_plan([_row("a-unknown", "unknown", idle=True), _row("b-healthy", idle=False)], TargetImage())
    assert plan.canary == "b-healthy" and not plan.held_back
    assert [n.node for s in plan.stages for n in s.nodes] == ["b-healthy", "a-unknown"]
    assert any("unknown is not faulty" in n for n in plan.notes)
    alone = make_plan([_row("a-unknown", "unknown")], TargetImage())
    assert alone.canary == "a-unknown" and "not faulty" in alone.stages[0].why


def test_the_few_take_a_degraded_node_only_for_a_configuration_without_another() -> None:
    rows = [_row(n) for n in ("a", "b", "c")] + [_row("0-degraded", "degraded")]
    rows.append(dataclasses.replace(_row("z-b200", "degraded"), gpu_name="NVIDIA B200"))
    plan = make_plan(rows, TargetImage(), few=4, wave_size=10)
    stages = {s.kind: [n.node for n in s.nodes] for s in plan.stages}
    assert stages["canary"] == ["a"]
    # the B200 configuration has only a degraded node: it stands in; the filler stays healthy, even short of 4
    assert stages["few_nodes"] == ["z-b200", "b", "c"]
    assert stages["wave"] == ["0-degraded"]


def test_when_the_largest_configuration_is_all_degraded_the_next_largest_gives_the_canary() -> None:
    rows = [_row(f"h200-{i}", "degraded", idle=True) for i in range(3)]
    rows += [
        dataclasses.replace(_row(n, hw), gpu_name="NVIDIA B200") for n, hw in (("b-1", "unknown"), ("b-2", "healthy"))
    ]
    rows.append(dataclasses.replace(_row("l40s", "healthy", idle=True), gpu_name="NVIDIA L40S"))
    plan = make_plan(rows, TargetImage(), few=0, wave_size=10)
    assert plan.canary == "b-2"  # the next largest configuration, its healthy node; not the smaller idle L40S
    assert "largest configuration with a node that is not degraded" in plan.stages[0].why
    assert {n.node for s in plan.stages if s.kind == "wave" for n in s.nodes} >= {"h200-0", "h200-1", "h200-2"}


def test_only_degraded_nodes_means_no_canary_and_says_why() -> None:
    plan = make_plan([_row("a", "degraded"), _row("b", "degraded")], TargetImage())
    assert plan.canary is None and plan.stages == [] and not plan.held_back
    assert any(n.startswith("No canary: every node that can take the image has degraded") for n in plan.notes)


def test_row_columns_from_the_evidence_items() -> None:
    """The fleet reads the items' values; a missing fit item is None, a missing hardware item unknown."""
    ev = Evidence(
        source="bundle",
        collected_at="t",
        items={
            "hardware": Item.ok(
                {
                    "verdict": "faulty",
                    "xids": [79],
                    "faulty_gpus": [3],
                    "findings": [
                        {"check": "kernel_log.xid", "severity": "faulty", "text": "x" * 5000, "action": "drain"},
                        {"check": "kernel_log", "severity": "info", "text": "Xid history incomplete", "action": "-"},
                    ],
                }
            ),
            "fit": Item.ok({"status": "fail", "failed": ["disk: 10 GB free < 1500 GB of weights"]}),
            "gpu_health": Item.ok({"vbios": {"versions": {"NVIDIA H200": ["A", "B"]}, "uniform": False}}),
        },
    )
    got = fleet_survey._hardware(ev)
    assert got["hardware"] == "faulty" and got["xids"] == [79] and got["faulty_gpus"] == [3]
    assert len(got["hardware_findings"]) == 1 and len(got["hardware_findings"][0]["text"]) == 300
    assert (
        len(got["hardware_summary"]) <= fleet_survey.MAX_SUMMARY and "Xid 79; faulty GPU 3" in got["hardware_summary"]
    )
    assert (got["fit"], got["fit_failed"]) == ("fail", ["disk: 10 GB free < 1500 GB of weights"])
    assert (got["vbios"], got["vbios_uniform"]) == (["A", "B"], False)
    bare = fleet_survey._hardware(Evidence(source="bundle", collected_at="t", items={}))
    assert bare["hardware"] == "unknown" and bare["fit"] is None and bare["hardware_summary"]


# -- a result saved before the hardware columns existed --------------------------------------------------
def _old_result() -> dict:
    return json.loads(OLD_RESULT.read_text(encoding="utf-8"))


def test_an_old_saved_result_without_the_new_fields_loads() -> None:
    data = _old_result()
    assert "hardware" not in data["nodes"][0] and "held_back" not in data["plan"]  # really the old shape
    for loaded in (FleetResult.from_dict(data), rebuild(FleetResult, data)):
        assert [n.node for n in loaded.nodes] == ["cpu-node-03", "k3-after-r580-upgrade", "k3-cu130-on-r575"]
        assert {n.hardware for n in loaded.nodes} == {"unknown"}  # never read back as healthy
        assert all(n.fit is None and n.vbios == [] for n in loaded.nodes)
        assert loaded.plan.canary == "k3-cu130-on-r575" and loaded.held_back == []
        assert loaded.hardware_counts() == {"unknown": 3}
        head = loaded.headline()
        assert head.verdict == "upgrade_needed" and head.figures["held_back"] == 0
        assert "k3-cu130-on-r575" in loaded._repr_html_() and loaded.hardware_view()._repr_html_()
        json.dumps(loaded.scraps())


def test_an_old_saved_result_loads_through_the_run_reader(tmp_path: Path) -> None:
    write_run(
        tmp_path,
        [{"name": "fleet_survey", "status": "ok", "headline": {"verdict": "upgrade_needed"}}],
        {"fleet/result.json": _old_result()},
    )
    loaded = runs.load_result(tmp_path, "fleet_survey")
    assert isinstance(loaded, FleetResult) and loaded.plan.stages[0].nodes[0].hardware == "unknown"
    assert loaded.headline().figures["canary"] == "k3-cu130-on-r575"
