"""Approvals of a change record: bound to the evidence they approved, signed by the person, counted by a policy.

Why its own concern: the record is written once by runbook 06 and never rewritten, while people
approve it later, one by one, sometimes at the same time. Each approval is a new file under
``approvals/`` holding the sha256 of the record it approved, of the run's manifest and of every
artefact the record cites, signed with the approver's SSH key (``ssh-keygen -Y sign``, checked
against an allowed-signers file). Editing the record or any cited file afterwards makes every
earlier approval *stale*; an approval file edited or written by hand fails its signature.

What an SSH signature proves: the holder of that private key, listed under that name in the
allowed-signers file, approved exactly these bytes (record, manifest, cited artefacts). It does
not prove that the allowed-signers file itself is the right one (keep it outside the run
directory, under review), nor anything about the evidence beyond what the record says. An
approval without a key is recorded as unsigned: anyone who can write the run directory could
have written it, and the policy says so instead of counting it as a signed approval.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..artefacts import write_artefact
from ..bounded import load_json
from ..execution.runjson import APPROVALS_DIR, MISSING, OK, RUN_JSON, check_files, latest_artefact, signature_status
from ..records import Record, utc_now
from ..redact import redact_obj
from .integrity import verify_run
from .sources import MAX_JSON_BYTES, RecordRefused, RunView

RECORD_FILE = "change_record.json"
NAMESPACE = "vllm-runbooks-approval"
DECISIONS = ("approve", "reject", "conditions")
KEY_ENV = "VLLM_RUNBOOKS_APPROVER_KEY"  # the approver's SSH private key (a path)
SIGNERS_ENV = "VLLM_RUNBOOKS_ALLOWED_SIGNERS"  # ssh-keygen's allowed-signers file (a path)
SIGN_TIMEOUT_S = 30.0
MAX_APPROVALS = 1000
MAX_TEXT = 2000


class ApprovalRefused(Exception):
    """An approval that must not be recorded (the run changed, self-approval, no record); names why."""


class SignedEntry:
    """What an approval and a close share: the bytes their SSH signature covers."""

    def signed_bytes(self) -> bytes:
        """The entry without its signature, canonical JSON."""
        body = {k: v for k, v in self.to_dict().items() if k != "signature"}  # type: ignore[attr-defined]
        return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass
class Approval(SignedEntry, Record):
    """One person's decision on one version of the record, with everything it is bound to."""

    SCHEMA = "change_record_approval"
    approver: str
    decision: str  # approve | reject | conditions
    at: str
    record_file: str
    record_sha256: str
    manifest_sha256: str
    cited: dict[str, str] = field(default_factory=dict)  # artefact (relative to the run) → sha256
    note: str = ""
    role: str = ""
    signature: dict[str, str] = field(default_factory=dict)  # method, namespace, armored, signed_by | why


@dataclass
class ApprovalCheck(Record):
    """An approval as it stands now: valid, stale (what it approved changed), forged, or unsigned."""

    SCHEMA = "change_record_approval_check"
    file: str
    approver: str
    decision: str
    role: str
    at: str
    status: str  # valid | unsigned | stale | forged | unverifiable | unreadable
    why: str
    record_file: str = ""


def manifest_digest(manifest: dict[str, str]) -> str:
    """sha256 of the run's manifest (canonical JSON): an approval is bound to the evidence list as it was."""
    text = json.dumps(dict(sorted(manifest.items())), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _one_line(text: str | None, limit: int = MAX_TEXT) -> str:
    cleaned = " ".join(str(text or "").split())
    return cleaned[:limit]


def current_record(run_dir: Path) -> tuple[dict[str, Any], str]:
    """The newest change record the manifest lists, and its path relative to the run; refuses without one."""
    try:
        found = latest_artefact(run_dir, RECORD_FILE)
    except ValueError as exc:
        raise ApprovalRefused(str(exc)) from exc
    if found is None:
        raise ApprovalRefused(f"{run_dir}: no change record ({RECORD_FILE}) to approve: run runbook 06 first")
    try:
        data = load_json(found, MAX_JSON_BYTES)[0]
    except (OSError, ValueError) as exc:
        raise ApprovalRefused(f"{found}: unreadable ({exc})") from exc
    if not isinstance(data, dict) or data.get("schema") != "change_record":
        raise ApprovalRefused(f"{found}: not a change record")
    return data, found.relative_to(run_dir).as_posix()


def _bindings(
    run_dir: Path, hashed: dict[str, str] | None = None
) -> tuple[dict[str, Any], str, str, str, dict[str, str]]:
    """Verify the run as the record was written from it; the record, its file, its sha256, the
    manifest's digest and the cited artefacts' sha256. Refuses naming the first thing that changed.

    Each file is read once (``runjson.check_files`` with one ``hashed`` memo): the record and a
    cited artefact the manifest lists were hashed by ``verify_run``; only cited files outside the
    manifest (a baseline run's) are read here.
    """
    memo = hashed if hashed is not None else {}
    view = RunView.load(run_dir)
    status, why = signature_status(view.data)
    if status == "edited":
        raise ApprovalRefused(f"{run_dir / RUN_JSON}: {why}")
    try:
        manifest = verify_run(view, memo)
    except RecordRefused as exc:
        raise ApprovalRefused(str(exc)) from exc
    record, rel = current_record(run_dir)
    wanted = {str(name): str(digest) for name, digest in (record.get("artefacts") or {}).items()}
    cited: dict[str, str] = {}
    for check in check_files(run_dir, wanted, source="the record", confined=False, hashed=memo):
        if check.status == MISSING:
            raise ApprovalRefused(f"{run_dir / check.rel}: cited by the record but missing")
        if check.status != OK:
            raise ApprovalRefused(f"{run_dir / check.rel}: changed since the record cited it (sha256 differs)")
        cited[check.rel] = str(check.sha256)
    if rel not in manifest:  # the newest record the manifest lists: run.json changed meanwhile
        raise ApprovalRefused(f"{run_dir / rel}: not in run.json's artefact manifest as it was verified")
    return record, rel, manifest[rel], manifest_digest(manifest), cited  # verified: its sha256 now


def approve(
    run_dir: str | Path,
    approver: str,
    decision: str,
    note: str = "",
    role: str = "",
    key_file: str | None = None,
) -> Path:
    """Record one approval of the run's current change record; returns the approval file written.

    Refuses (``ApprovalRefused``) when the run or anything the record cites changed since it was
    written, when the approver is the requester, or when signing was asked for and failed.
    """
    path = Path(run_dir).resolve()
    who = _one_line(approver, 200)
    if not who:
        raise ApprovalRefused("--as: the approver's name is empty")
    if decision not in DECISIONS:
        raise ApprovalRefused(f"--decision {decision!r}: one of {', '.join(DECISIONS)}")
    record, rel, record_sha, manifest_sha, cited = _bindings(path)
    requester = _one_line(record.get("requester"), 200)
    if requester and requester.casefold() == who.casefold():
        raise ApprovalRefused(f"{who} requested this change: the requester cannot approve it (four eyes)")
    entry = Approval(
        approver=who,
        decision=decision,
        at=utc_now(),
        record_file=rel,
        record_sha256=record_sha,
        manifest_sha256=manifest_sha,
        cited=cited,
        note=_one_line(note),
        role=_one_line(role, 100),
    )
    # Redacted before it is signed: the file written must be the bytes the signature covers.
    entry = Approval.from_dict(redact_obj(entry.to_dict()))
    key = key_file or os.environ.get(KEY_ENV)
    entry.signature = (
        _sign(entry, Path(key).expanduser())
        if key
        else {
            "method": "none",
            # worded without a flag-and-value shape: the redactor reads "--key X" as a secret
            "why": f"unsigned: no SSH key was given (approve's key option, or {KEY_ENV}); anyone who can "
            "write the run directory could have written this entry",
        }
    )
    return write_artefact(path, f"{APPROVALS_DIR}/approval.json", entry)


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if not found:
        raise ApprovalRefused(
            "ssh-keygen not found (package openssh-client): cannot sign; omit --key to record unsigned"
        )
    return found


def _sign(entry: Approval, key: Path) -> dict[str, str]:
    """``ssh-keygen -Y sign`` over the entry's bytes; refuses when it fails (never silently unsigned)."""
    if not key.is_file():
        raise ApprovalRefused(f"SSH key {key} not found")
    with tempfile.TemporaryDirectory(prefix="vr-approve-") as tmp:
        data = Path(tmp) / "approval"
        data.write_bytes(entry.signed_bytes())
        try:
            done = subprocess.run(
                [_ssh_keygen(), "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE, str(data)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=SIGN_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ApprovalRefused(f"ssh-keygen -Y sign did not finish in {SIGN_TIMEOUT_S:.0f} s") from exc
        sig = Path(f"{data}.sig")
        if done.returncode != 0 or not sig.is_file():
            why = _one_line(done.stderr.decode("utf-8", "replace"), 300) or f"exit {done.returncode}"
            raise ApprovalRefused(f"ssh-keygen -Y sign failed ({why}); a key with a passphrase needs ssh-agent")
        armored = sig.read_text(encoding="ascii", errors="replace")
    public = Path(f"{key}.pub")
    signed_by = public.read_text(encoding="utf-8", errors="replace").split("\n")[0][:1000] if public.is_file() else ""
    return {"method": "ssh-keygen -Y sign", "namespace": NAMESPACE, "armored": armored, "signed_by": signed_by}


def _verify_signature(entry: Approval, signers: Path | None) -> tuple[str, str]:
    """(status, why) of the entry's signature: valid, unsigned, forged or unverifiable."""
    sig = entry.signature or {}
    if sig.get("method") != "ssh-keygen -Y sign":
        return "unsigned", str(sig.get("why") or "no signature")
    if signers is None:
        return "unverifiable", f"signed, but no allowed-signers file (--allowed-signers or ${SIGNERS_ENV}) to check it"
    if not signers.is_file():
        return "unverifiable", f"allowed-signers file {signers} not found"
    with tempfile.TemporaryDirectory(prefix="vr-verify-") as tmp:
        sig_file = Path(tmp) / "approval.sig"
        sig_file.write_text(str(sig.get("armored") or ""), encoding="ascii", errors="replace")
        try:
            done = subprocess.run(
                [
                    _ssh_keygen(),
                    "-Y",
                    "verify",
                    "-f",
                    str(signers),
                    "-I",
                    entry.approver,
                    "-n",
                    NAMESPACE,
                    "-s",
                    str(sig_file),
                ],  # fmt: skip
                input=entry.signed_bytes(),
                capture_output=True,
                timeout=SIGN_TIMEOUT_S,
                check=False,
            )
        except (subprocess.TimeoutExpired, ApprovalRefused) as exc:
            return "unverifiable", f"could not run ssh-keygen -Y verify ({exc})"
    if done.returncode == 0:
        return "valid", f"signed by {entry.approver} (allowed signers {signers})"
    why = _one_line((done.stderr or done.stdout).decode("utf-8", "replace"), 300)
    return "forged", f"the signature does not verify for {entry.approver!r} ({why or 'ssh-keygen refused it'})"


def check_approvals(
    run_dir: str | Path, signers: str | Path | None = None, *, hashed: dict[str, str] | None = None
) -> list[ApprovalCheck]:
    """Every approval of the run, checked now: its signature, and whether what it approved changed.

    Never raises for one bad file: an unreadable or hand-made approval is a line saying so.
    ``hashed``: the memo of a verification that already read the run's files (``runs --verify``).
    """
    path = Path(run_dir).resolve()
    folder = path / APPROVALS_DIR
    if not folder.is_dir():
        return []
    signers_file = signers or os.environ.get(SIGNERS_ENV)
    signers_path = Path(signers_file).expanduser() if signers_file else None
    try:
        now = _bindings(path, hashed)
        current: tuple[str, str, str, dict[str, str]] | None = (now[1], now[2], now[3], now[4])
        changed = ""
    except ApprovalRefused as exc:
        current, changed = None, str(exc)
    out = []
    for file in sorted(folder.iterdir(), key=_write_order)[:MAX_APPROVALS]:
        rel = file.relative_to(path).as_posix()
        if file.is_symlink() or not file.is_file() or file.suffix != ".json":
            out.append(ApprovalCheck(rel, "?", "?", "", "", "unreadable", "not an approval file (a link or not JSON)"))
            continue
        try:
            entry = Approval.from_dict(load_json(file, 1024 * 1024)[0])
            if not isinstance(entry.cited, dict) or not isinstance(entry.signature, dict):
                raise ValueError("malformed approval entry")
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            out.append(ApprovalCheck(rel, "?", "?", "", "", "unreadable", f"unreadable approval ({exc})"))
            continue
        status, why = _verify_signature(entry, signers_path)
        if status not in ("forged",):
            stale = _stale(entry, current, changed)
            if stale:
                status, why = "stale", stale
        out.append(ApprovalCheck(rel, entry.approver, entry.decision, entry.role, entry.at, status, why,
                                 entry.record_file))  # fmt: skip
    return out


def _write_order(path: Path) -> tuple[int, str]:
    """approval.json, approval-2.json, approval-3.json… in the order they were written."""
    stem, _, n = path.stem.rpartition("-")
    return (int(n), path.name) if stem and n.isdigit() else (1, path.name)


def _stale(entry: Approval, current: tuple[str, str, str, dict[str, str]] | None, changed: str) -> str:
    """Why what the approval approved is no longer what the run holds, or ""."""
    if current is None:
        return f"the run changed since this approval: {changed}"
    record_file, record_sha, manifest_sha, cited = current
    if entry.record_file != record_file:
        return f"approved {entry.record_file}; the current record is {record_file} (runbook 06 was run again)"
    if entry.record_sha256 != record_sha:
        return f"{record_file} changed since it was approved"
    if entry.manifest_sha256 != manifest_sha:
        return "the run's manifest changed since this approval (files were added or re-recorded)"
    for name, digest in entry.cited.items():
        if cited.get(name) != digest:
            return f"{name}: changed since it was approved"
    return ""


def signer_names(signers: str | Path | None) -> list[str] | None:
    """The people an allowed-signers file lists (its principals, first field, comma-separated);
    None when no file is given or it cannot be read (then nobody can say how many exist)."""
    if not signers:
        return None
    from ..bounded import read_text

    try:
        text = read_text(Path(signers).expanduser(), 1024 * 1024).text
    except OSError:
        return None
    names: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names += [n for n in line.split()[0].split(",") if n and n not in names]
    return names


def reachable(record: dict[str, Any], signers: str | Path | None) -> str:
    """Why the record's policy can never be met by the people the allowed-signers file lists ("" when
    it can, or when no file says who exists): more approvals than people other than the requester."""
    names = signer_names(signers)
    if names is None:
        return ""
    policy = record.get("approval_policy") if isinstance(record.get("approval_policy"), dict) else {}
    required = int(policy.get("approvals_required") or 1)
    requester = str(record.get("requester") or "").casefold()
    others = [n for n in names if n.casefold() != requester]
    if required > len(others):
        return (
            f"the policy asks for {required} approval(s) but the allowed-signers file lists {len(others)} "
            f"person(s) other than the requester: it can never be met as signed approvals"
        )
    return ""


def policy_status(record: dict[str, Any], checks: list[ApprovalCheck]) -> tuple[str, str]:
    """``rejected`` / ``approved`` / ``approved_with_conditions`` / ``pending`` and why, by the record's policy.

    Reject wins. Only valid signed approvals count when any is signed; unsigned ones count only
    where nothing is signed, and the status then says "unsigned". One vote per approver (the last).
    """
    policy = record.get("approval_policy") if isinstance(record.get("approval_policy"), dict) else {}
    required = int(policy.get("approvals_required") or 1)
    roles = [str(r) for r in policy.get("roles") or []]
    live = [c for c in checks if c.status in ("valid", "unsigned")]
    signed = [c for c in live if c.status == "valid"]
    counted = signed or live
    last: dict[str, ApprovalCheck] = {}
    for c in sorted(counted, key=lambda c: c.at):
        last[c.approver.casefold()] = c
    votes = list(last.values())
    if any(v.decision == "reject" for v in votes):
        who = ", ".join(v.approver for v in votes if v.decision == "reject")
        return "rejected", f"rejected by {who}"
    yes = [v for v in votes if v.decision in ("approve", "conditions")]
    missing_roles = [r for r in roles if not any(v.role == r for v in yes)]
    unsigned = (
        " (unsigned approvals: anyone who can write the run directory could have written them)"
        if (yes and not signed)
        else ""
    )
    if len(yes) >= required and not missing_roles:
        word = "approved_with_conditions" if any(v.decision == "conditions" for v in yes) else "approved"
        return word, f"{len(yes)} of {required} approval(s){unsigned}"
    need = f"{len(yes)} of {required} approval(s)" + (f"; roles still to approve: {', '.join(missing_roles)}"
                                                       if missing_roles else "")  # fmt: skip
    return "pending", need + unsigned


def default_requester() -> str:
    """The OS user running runbook 06: who asked for the change unless a parameter says otherwise."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
