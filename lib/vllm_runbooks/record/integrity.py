"""The record rests on files; if one changed after its run, the record must not be written.

Why refuse instead of warn: a signed change record that cites a number nobody can reproduce is
worse than none. Every artefact run.json lists (and every line of an evidence ``SHA256SUMS``) is
hashed again; the first mismatch or missing file stops the record, naming the file.
"""

from __future__ import annotations

from pathlib import Path

from ..execution import signing
from ..execution.runjson import RUN_JSON, run_json_edited, sha256_file, signature_status
from .sources import RecordRefused, RunView

#: Files the runner itself may legitimately touch after recording (the lock) are never listed.
SUMS = "evidence/SHA256SUMS"


def verify_run(view: RunView) -> dict[str, str]:
    """Check run.json's signature and every listed artefact; returns the manifest (relative path → sha256).

    The signature first: a manifest edited to match an altered file vouches for nothing.
    """
    if (view.path / RUN_JSON).exists():
        edited = run_json_edited(view.data)
        if edited:
            raise RecordRefused(f"{view.path / RUN_JSON}: {edited}")
    for rel, digest in sorted(view.manifest.items()):
        path = view.path / rel
        if not _inside(view.path, path):
            raise RecordRefused(f"{view.run_id}: run.json lists {rel!r}, outside the run directory")
        if not path.is_file():
            raise RecordRefused(f"{path}: listed in run.json but missing — removed after the run")
        if sha256_file(path) != digest:
            raise RecordRefused(f"{path}: sha256 differs from run.json — altered after the run")
    _verify_sums(view)
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


def _verify_sums(view: RunView) -> None:
    sums = view.path / SUMS
    if not sums.is_file():
        return
    base = sums.parent
    for line in sums.read_text(encoding="utf-8", errors="replace").splitlines()[:100_000]:
        digest, _, name = line.strip().partition("  ")
        if not digest or not name:
            continue
        path = base / name
        if not _inside(view.path, path):
            raise RecordRefused(f"{sums}: lists {name!r}, outside the run directory")
        if not path.is_file():
            raise RecordRefused(f"{path}: listed in {SUMS} but missing — removed after the run")
        if sha256_file(path) != digest:
            raise RecordRefused(f"{path}: sha256 differs from {SUMS} — evidence altered after capture")


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False
