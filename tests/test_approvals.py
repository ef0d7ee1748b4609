"""Approvals of a change record: bound to what they approved, signed with SSH keys, counted by a policy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from run_factory import write_run
from vllm_runbooks.change_record import build_record, to_markdown
from vllm_runbooks.change_record.approvals import (
    NAMESPACE,
    ApprovalRefused,
    approve,
    check_approvals,
    current_record,
    policy_status,
)
from vllm_runbooks.change_record.options import RecordOptions
from vllm_runbooks.change_record.render import save_record
from vllm_runbooks.cli import main
from vllm_runbooks.execution import runjson, runner
from vllm_runbooks.execution.runs import summarise_run

CANARY = {"schema": "canary_report", "verdict": "pass", "steps": [{"step": "model_load", "status": "pass"}]}


def recorded_run(tmp_path: Path, requester: str = "alice", required: int = 1) -> Path:
    """A run whose runbook 06 has written its record, recorded in run.json as the runner does."""
    run_dir = tmp_path / "run"
    entry = {"name": "canary_validation", "status": "ok", "headline": {"verdict": "pass", "figures": {}}}
    write_run(run_dir, [entry], {"canary/canary_report.json": CANARY})
    nb = run_dir / "06_change_record.ipynb"
    nb.write_text("{}")
    runjson.record_running(run_dir, "change_record", nb, {}, "e6")
    record = build_record(run_dir, options=RecordOptions(requester=requester, approvals_required=required))
    save_record(record, run_dir)
    result = runner.RunbookResult("change_record", str(nb), None, "ok", "t0", "t1", 1.0, {})
    runjson.record_run(run_dir, result, "e6")
    return run_dir


def _status(run_dir: Path, signers: Path | None = None) -> tuple[str, str]:
    record, _ = current_record(run_dir)
    return policy_status(record, check_approvals(run_dir, signers))


def test_the_requester_cannot_approve_and_another_person_can(tmp_path: Path, capsys) -> None:
    run_dir = recorded_run(tmp_path)
    assert json.loads((run_dir / "change_record.json").read_text())["requester"] == "alice"
    assert main(["approve", str(run_dir), "--as", "Alice", "--decision", "approve"]) == 2
    assert "requester cannot approve" in capsys.readouterr().err
    assert not (run_dir / "approvals").exists()
    assert main(["approve", str(run_dir), "--as", "bob", "--decision", "approve"]) == 0
    out = capsys.readouterr().out
    assert "approved" in out and "unsigned" in out  # counted, and said to be unsigned
    assert "<redacted" not in out  # the reason is readable, not mistaken for a secret
    assert summarise_run(run_dir, verify=True).tampered == []  # approvals are not unlisted files
    # the next runbook into the run is not refused because of the approvals folder
    assert runjson.unlisted_files(run_dir, runjson.load_run(run_dir)) == []


def test_no_record_and_a_changed_artefact_are_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    write_run(bare, [], {})
    with pytest.raises(ApprovalRefused, match="no change record"):
        approve(bare, "bob", "approve")
    run_dir = recorded_run(tmp_path)
    (run_dir / "canary" / "canary_report.json").write_text('{"schema": "canary_report", "verdict": "fail"}')
    with pytest.raises(ApprovalRefused, match=r"canary_report\.json"):
        approve(run_dir, "bob", "approve")


def test_editing_a_cited_artefact_after_approval_makes_the_approval_stale(tmp_path: Path, capsys) -> None:
    run_dir = recorded_run(tmp_path)
    approve(run_dir, "bob", "approve")
    assert _status(run_dir)[0] == "approved"
    (run_dir / "canary" / "canary_report.json").write_text('{"schema": "canary_report", "verdict": "pass "}')
    assert _status(run_dir)[0] == "pending"
    tampered = summarise_run(run_dir, verify=True).tampered
    assert any(t.startswith("approvals/approval.json (approval by bob: stale") for t in tampered), tampered
    assert main(["runs", "--runs-dir", str(tmp_path), "--verify"]) == 1
    assert "approval by bob: stale" in capsys.readouterr().out


def test_a_reject_wins_a_policy_counts_and_one_vote_per_person(tmp_path: Path) -> None:
    run_dir = recorded_run(tmp_path, required=2)
    approve(run_dir, "bob", "approve")
    assert _status(run_dir) == ("pending", "1 of 2 approval(s) (unsigned approvals: anyone who can write the run "
                                           "directory could have written them)")  # fmt: skip
    approve(run_dir, "BOB", "conditions", note="only after the weekend")
    assert _status(run_dir)[0] == "pending"  # bob twice is still one approver
    approve(run_dir, "carol", "approve")
    assert _status(run_dir)[0] == "approved_with_conditions"
    approve(run_dir, "dave", "reject", note="no rollback tested")
    assert _status(run_dir) == ("rejected", "rejected by dave")


def test_two_approvers_at_once_both_keep_their_approval(tmp_path: Path) -> None:
    run_dir = recorded_run(tmp_path, required=2)
    errors: list[BaseException] = []

    def one(name: str) -> None:
        try:
            approve(run_dir, name, "approve")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in ("bob", "carol")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(c.approver for c in check_approvals(run_dir)) == ["bob", "carol"]
    assert _status(run_dir)[0] == "approved"


def test_markup_in_names_and_notes_stays_text_in_the_record(tmp_path: Path) -> None:
    run_dir = recorded_run(tmp_path)
    approve(run_dir, "<script>alert(1)</script>\r## Approved", "approve", note="[x](https://evil.example) |a|")
    # runbook 06 run again: the earlier approvals are shown, checked, and do not carry over
    record = build_record(run_dir, options=RecordOptions(requester="alice"))
    assert record.prior_approvals and record.prior_approvals[0]["status"] == "unsigned"
    text = to_markdown(record)
    assert "<script>" not in text and "\r" not in text and "](https://evil" not in text
    assert not any(line.startswith("## Approved") for line in text.splitlines())


@pytest.fixture
def ssh_keys(tmp_path: Path) -> dict[str, Path]:
    if not shutil.which("ssh-keygen"):
        if os.environ.get("CI") == "true":
            pytest.fail("ssh-keygen (openssh-client) must be present in CI")
        pytest.skip("ssh-keygen not installed (package openssh-client)")
    keys = tmp_path / "keys"
    keys.mkdir()
    found = {}
    for who in ("bob", "mallory"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", str(keys / who)], check=True)
        found[who] = keys / who
    signers = keys / "allowed_signers"
    pub = (keys / "bob.pub").read_text().strip()
    signers.write_text(f'bob namespaces="{NAMESPACE}" {pub}\n')
    found["signers"] = signers
    return found


def test_a_signed_approval_verifies_and_an_edited_or_foreign_one_does_not(tmp_path: Path, ssh_keys) -> None:
    run_dir = recorded_run(tmp_path)
    written = approve(run_dir, "bob", "approve", key_file=str(ssh_keys["bob"]))
    checks = check_approvals(run_dir, ssh_keys["signers"])
    assert [c.status for c in checks] == ["valid"], checks
    assert _status(run_dir, ssh_keys["signers"]) == ("approved", "1 of 1 approval(s)")
    # without the allowed-signers file the signature cannot be checked: said, not counted as valid
    assert check_approvals(run_dir)[0].status == "unverifiable"
    # mallory signs with her own key under bob's name: the allowed-signers file does not list it
    approve(run_dir, "bob", "reject", key_file=str(ssh_keys["mallory"]))
    statuses = sorted(c.status for c in check_approvals(run_dir, ssh_keys["signers"]))
    assert statuses == ["forged", "valid"]
    assert _status(run_dir, ssh_keys["signers"])[0] == "approved"  # the forged reject does not count
    # the approval file edited by hand: its signature no longer covers it
    data = json.loads(written.read_text())
    data["decision"] = "conditions"
    written.write_text(json.dumps(data))
    edited = next(c for c in check_approvals(run_dir, ssh_keys["signers"]) if c.file.endswith(written.name))
    assert edited.status == "forged"


def test_signing_asked_for_and_failing_is_refused_not_recorded_unsigned(tmp_path: Path, ssh_keys) -> None:
    run_dir = recorded_run(tmp_path)
    bad = tmp_path / "not-a-key"
    bad.write_text("garbage")
    with pytest.raises(ApprovalRefused, match="ssh-keygen -Y sign failed"):
        approve(run_dir, "bob", "approve", key_file=str(bad))
    assert check_approvals(run_dir) == []


def test_runs_verify_with_approvals_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The approvals' check rides on the verification ``runs --verify`` already did (one memo):
    before, it hashed the whole manifest again, then every cited artefact and the record a third time."""
    run_dir = recorded_run(tmp_path)
    approve(run_dir, "bob", "approve")
    manifest = runjson.load_run(run_dir)["artefacts"]
    read: list[str] = []
    real_open = Path.open

    def counting_open(self: Path, mode: str = "r", *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if "b" in mode and self.name != "run.json":
            read.append(self.relative_to(run_dir).as_posix())
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    summary = summarise_run(run_dir, verify=True)
    monkeypatch.undo()
    assert summary.tampered == []
    assert sorted(read) == sorted(manifest)
    (run_dir / "canary" / "canary_report.json").write_text('{"schema": "canary_report", "verdict": "fail"}')
    tampered = summarise_run(run_dir, verify=True).tampered
    assert tampered[0] == "canary/canary_report.json" and "stale" in tampered[1]


def test_a_policy_asking_more_approvers_than_the_signers_file_lists_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vllm_runbooks.change_record.approvals import reachable, signer_names

    run_dir = recorded_run(tmp_path)
    signers = tmp_path / "allowed_signers"
    signers.write_text('# team\nalice,bob ssh-ed25519 AAAAC3 x\ncarol namespaces="x" ssh-ed25519 AAAAC3 y\n')
    assert signer_names(signers) == ["alice", "bob", "carol"]
    record = json.loads((run_dir / "change_record.json").read_text())
    assert reachable(record, signers) == ""  # 1 required, bob and carol besides the requester alice
    record["approval_policy"]["approvals_required"] = 3
    assert "asks for 3 approval(s)" in reachable(record, signers) and "2 person(s) other than the requester" in (
        reachable(record, signers)
    )
    assert reachable(record, None) == "" and reachable(record, tmp_path / "missing") == ""
    three = recorded_run(tmp_path / "three", required=3)
    assert main(["approvals", str(three), "--allowed-signers", str(signers)]) == 1
    assert "unreachable" in capsys.readouterr().out
    assert main(["approvals", str(run_dir), "--allowed-signers", str(signers)]) == 1  # pending, reachable
    assert "unreachable" not in capsys.readouterr().out
