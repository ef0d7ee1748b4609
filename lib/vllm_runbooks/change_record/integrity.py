"""The record rests on files; if one changed after its run, the record must not be written.

Why refuse instead of warn: a signed change record that cites a number nobody can reproduce is
worse than none. Every artefact run.json lists (and every line of an evidence ``SHA256SUMS``) is
checked by the one manifest verifier (``runjson.check_run`` / ``check_files``), each file read
once; the first mismatch or missing file stops the record, naming the file.
"""

from __future__ import annotations

from ..bounded import read_text
from ..execution import signing
from ..execution.runjson import OK, RUN_JSON, check_files, check_run, signature_status
from .sources import RecordRefused, RunView

#: Files the runner itself may legitimately touch after recording (the lock) are never listed.
SUMS = "evidence/SHA256SUMS"
#: runbook 01 writes one line per evidence file; a SHA256SUMS larger than this was not written by it.
SUMS_MAX_BYTES = 16 * 1024 * 1024


def verify_run(view: RunView, hashed: dict[str, str] | None = None) -> dict[str, str]:
    """Check run.json's signature and every listed artefact; returns the manifest (relative path → sha256).

    The signature first: a manifest edited to match an altered file vouches for nothing.
    ``hashed`` (resolved path → sha256) carries what an earlier check of the same verification
    read, so no file is hashed twice (``runs --verify`` then the approvals).
    """
    memo = hashed if hashed is not None else {}
    check = check_run(view.path, view.data, hashed=memo)
    if check.state in ("edited", "unreadable"):
        raise RecordRefused(f"{view.path / RUN_JSON}: {check.why}")
    for bad in check.problems:
        raise RecordRefused(f"{view.path / bad.rel}: {bad.why}")
    _verify_sums(view, memo)
    return dict(view.manifest)


def machine_signature(view: RunView) -> dict[str, str]:
    """What run.json's keyed signature proves here, in words the record prints beside its verdict."""
    if not (view.path / RUN_JSON).exists():
        status, why = "unsigned", "no run.json: nothing has been recorded in this directory"
    else:
        status, why = signature_status(view.data)
    signature = view.data.get("signature") if isinstance(view.data.get("signature"), dict) else {}
    return {
        "status": status,
        "key_id": str(signature.get("key_id") or ""),
        "why": why,
        "proves": signing.PROVES.format(key_id=signature.get("key_id") or "?") if status == "verified" else "nothing",
        "does_not_prove": signing.DOES_NOT_PROVE,
    }


def digest_of(view: RunView, rel: str) -> str:
    """The recorded sha256 of a cited artefact; refuses when it was not part of the run's manifest."""
    if rel not in view.manifest:
        raise RecordRefused(
            f"{view.path / rel}: not in run.json's artefact list — written after the run, cannot be cited"
        )
    return view.manifest[rel]


def _verify_sums(view: RunView, hashed: dict[str, str]) -> None:
    """Evidence's own ``SHA256SUMS`` (``digest  name`` lines), through the same verifier."""
    sums = view.path / SUMS
    if not sums.is_file():
        return
    got = read_text(sums, SUMS_MAX_BYTES)
    if got.cut:
        raise RecordRefused(f"{sums}: larger than {SUMS_MAX_BYTES} bytes — not the list runbook 01 wrote")
    listed: dict[str, str] = {}
    for line in got.text.splitlines():
        digest, _, name = line.strip().partition("  ")
        if digest and name:
            listed[name] = digest
    for bad in check_files(sums.parent, listed, source=SUMS, hashed=hashed):
        if bad.status != OK:
            raise RecordRefused(f"{sums.parent / bad.rel}: {bad.why}")
