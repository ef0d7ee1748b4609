"""The change-board fields of runbook 06's record (issue 20 item 2): each derived from the run or a
parameter with its reason, and bad parameters said, never guessed."""

from __future__ import annotations

from pathlib import Path

from run_factory import write_run
from vllm_runbooks.change_record import build_record, to_markdown
from vllm_runbooks.change_record.approvals import approve
from vllm_runbooks.change_record.options import RecordOptions
from vllm_runbooks.change_record.render import save_record

TIMES = [("2026-12-02T01:00:00Z", "2026-12-02T01:05:00Z"), ("2026-12-02T01:06:00Z", "2026-12-02T01:20:30Z")]


def _compat(path: str = "upgrade_driver", profile: str = "kimi_k3") -> dict:
    return {
        "schema": "compat_result",
        "report": {"decision": {"verdict": "driver_too_old", "profile": profile}, "remediation": {"path": path}},
    }


def _entries(endpoint: str = "http://svc-user:hunter2hunter2@k3-node-07:8000", *others: str) -> list[dict]:
    """Runbooks 02 and 03 finished (with their times), and ``others`` finished without times."""
    names = ["compatibility_decision", "canary_validation"]
    out = [{"name": name, "status": "ok"} for name in others]
    for name, (start, end) in zip(names, TIMES, strict=True):
        out.append(
            {
                "name": name,
                "status": "ok",
                "started_at": start,
                "ended_at": end,
                "parameters": {"endpoint": endpoint} if name == "canary_validation" else {},
                "headline": {"runbook": name, "verdict": "x", "figures": {}},
            }
        )
    return out


def _fleet(n: int) -> dict:
    nodes = [{"node": f"gpu-{i:03d}", "action": "upgrade_driver", "configuration": "c"} for i in range(n)]
    stages = [
        {"name": "canary", "kind": "canary", "nodes": nodes[:1], "checks": ["runbook 03 on the canary"]},
        {"name": "wave 1", "kind": "wave", "nodes": nodes[1:], "checks": ["runbook 05 within limits"]},
    ]
    held = [{"node": "gpu-bad", "hardware": "faulty", "reason": "Xid 79 on GPU 0"}]
    plan = {"canary": "gpu-000", "stages": stages, "held_back": held}
    return {"schema": "fleet_survey", "nodes": nodes, "plan": plan}


def test_fields_are_derived_and_say_where_from(tmp_path: Path) -> None:
    run = tmp_path / "after"
    write_run(run, _entries(), {"compat/decision.json": _compat()})
    opts = RecordOptions(planned_start="2026-12-02T00:30:00Z", planned_end="2026-12-02T04:00:00+00:00",
                         affected_services=["chat-api", "<b>batch</b>"])  # fmt: skip
    board = build_record(run, options=opts).board
    assert board is not None
    assert (board.change_type, board.risk, board.profile) == ("normal", "high", "kimi_k3")
    assert board.risk_why.startswith("path upgrade_driver: high")
    assert board.actual_window == {
        "start": "2026-12-02T01:00:00+00:00",
        "end": "2026-12-02T01:20:30+00:00",
        "from": "run.json: 2 runbook(s) started, 2 finished",
    }
    assert board.planned_window["start"] == "2026-12-02T00:30:00+00:00"
    assert board.affected_endpoints == ["http://<redacted:url-credentials>@k3-node-07:8000"]
    assert "hunter2hunter2" not in str(board.to_dict())
    assert board.plan_from.startswith("the procedure's expansion order") and len(board.implementation_plan) == 3
    assert board.backout_exercised.startswith("not exercised")
    md = to_markdown(build_record(run, options=opts))
    assert "## Change request" in md and "chat-api, \\<b\\>batch\\</b\\>" in md and "<b>" not in md


def test_the_fleet_plan_gives_nodes_impact_and_the_implementation_plan(tmp_path: Path) -> None:
    run = tmp_path / "after"
    files = {"compat/decision.json": _compat(), "fleet/result.json": _fleet(12)}
    write_run(run, _entries("http://k3-node-07:8000", "fleet_survey"), files)
    board = build_record(run).board
    assert board.affected_nodes[:2] == ["gpu-000", "gpu-001"] and len(board.affected_nodes) == 12
    assert board.impact == "high" and board.impact_why.startswith("12 node(s) of 12 surveyed")
    assert "gpu-bad" not in board.affected_nodes and "out of this change: gpu-bad" in board.affected_nodes_from
    assert [s["step"] for s in board.implementation_plan] == ["canary", "wave 1"]
    assert board.implementation_plan[1]["nodes"][-1] == "gpu-011"


def test_overrides_need_a_reason_and_bad_values_are_said(tmp_path: Path) -> None:
    run = tmp_path / "after"
    write_run(run, _entries(), {"compat/decision.json": _compat("no_driver_change")})
    bare = build_record(run, options=RecordOptions(risk="high", impact="severe", change_type="urgent")).board
    # no_driver_change is low; nothing verified (no canary in this run) raises it one level
    assert bare.risk == "medium" and "one higher" in bare.risk_why and "risk_reason is required" in bare.risk_why
    assert (
        bare.impact == "unknown"
        and "no affected node on record" in bare.impact_why
        and "ignored: one of low, medium, high" in bare.impact_why
    )
    assert bare.change_type == "normal" and "'urgent' ignored" in bare.change_type_why
    opts = RecordOptions(risk="high", risk_reason="first driver change on this cluster", change_type="emergency")
    reasoned = build_record(run, options=opts).board
    assert reasoned.risk == "high" and reasoned.risk_why == "set by hand: first driver change on this cluster"
    assert reasoned.risk_derived.startswith("medium (path no_driver_change: low;")
    assert reasoned.change_type == "emergency"
    for start, end, said in (
        ("tomorrow", None, "'tomorrow' is not an ISO-8601 time"),
        ("2026-12-02T10:00:00", "2026-12-02T12:00:00Z", "planned_start '2026-12-02T10:00:00' is not"),  # no zone
        ("2026-12-02T12:00:00Z", "2026-12-02T10:00:00Z", "is not after planned_start"),
    ):
        window = build_record(run, options=RecordOptions(planned_start=start, planned_end=end)).board.planned_window
        assert window["start"] is None and said in window["why"], window


def test_a_path_approved_before_for_the_profile_is_offered_as_standard(tmp_path: Path) -> None:
    earlier = tmp_path / "runs" / "earlier"
    write_run(earlier, _entries(), {"compat/decision.json": _compat()})
    save_record(build_record(earlier, options=RecordOptions(requester="rita")), earlier)
    write_run(earlier, _entries(), {"compat/decision.json": _compat()},
              on_disk=("change_record.json", "change_record.md", "change_record.html"))  # fmt: skip
    run = tmp_path / "runs" / "after"
    write_run(run, _entries(), {"compat/decision.json": _compat()})
    assert build_record(run).board.standard_offer == ""  # not approved yet: nothing to offer
    approve(earlier, "alice", "approve")
    offer = build_record(run).board.standard_offer
    assert "approved before in run earlier" in offer and "standard change" in offer
    other = tmp_path / "runs" / "other-profile"
    write_run(other, _entries(), {"compat/decision.json": _compat(profile="llama")})
    assert build_record(other).board.standard_offer == ""


def test_a_record_from_before_the_board_still_reads_and_renders(tmp_path: Path) -> None:
    run = tmp_path / "after"
    write_run(run, _entries(), {"compat/decision.json": _compat()})
    record = build_record(run)
    data = record.to_dict()
    data.pop("board")
    old = type(record).from_dict(data)
    assert old.board is None and "Written before the change-board fields existed" in to_markdown(old)
    again = type(record).from_dict(record.to_dict())
    assert again.board == record.board


def test_a_baseline_of_another_profile_or_host_is_said_and_not_compared(tmp_path: Path) -> None:
    from test_record_hardware import _quiet_bundle
    from vllm_runbooks.evidence import collect_evidence

    def run_of(name: str, profile: str) -> Path:
        run = tmp_path / name
        bundle = _quiet_bundle(tmp_path, f"bundle-{name}")
        collect_evidence(bundle, run_dir=run)
        entries = _entries("http://k3-node-07:8000", "evidence_capture")
        write_run(run, entries, {"compat/decision.json": _compat(profile=profile)}, on_disk=("evidence",))
        return run

    after = run_of("after", "kimi_k3")
    other = build_record(after, run_of("before-llama", "llama"))
    assert other.baseline_not_used == ["model profile: baseline 'llama', this run 'kimi_k3'"]
    assert other.comparison == [] and other.baseline_run == "before-llama"
    assert all(not b.present for b in other.baseline if b.item != "rollback")
    md = to_markdown(other)
    assert "**Baseline not used**" in md and "set aside" in md and "No usable baseline: nothing compared" in md
    same = build_record(after, run_of("before", "kimi_k3"))
    assert same.baseline_not_used == [] and any(b.present for b in same.baseline)
