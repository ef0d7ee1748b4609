"""The machine key that signs run.json: an HMAC whose key never lives in a run directory.

Why a key: a sha256 of run.json's own content catches a careless edit, but anyone who can write
the run directory can recompute it, invent results and get a "ready" record. An HMAC with a key
kept elsewhere (the user's config directory, or a secret the CI job provides) cannot be
recomputed without that key.

What it proves: run.json was last written by a process that held this key (key id recorded), and
nothing in it changed since. What it does not prove: that the key was not read by someone else
(anyone who can read the key file, the same OS user included, can forge), that the runbooks'
results are true, or who ran them. Signed approvals by people are a separate matter.

The key comes from ``$VLLM_RUNBOOKS_SIGNING_KEY`` (the secret itself, at least 32 characters:
CI), else the file ``$VLLM_RUNBOOKS_SIGNING_KEY_FILE``, else
``$XDG_CONFIG_HOME/vllm-runbooks/signing.key`` (``~/.config/…``), created with mode 0600 the
first time a run is written. A key file readable or writable by others is not used.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

KEY_ENV = "VLLM_RUNBOOKS_SIGNING_KEY"
KEY_FILE_ENV = "VLLM_RUNBOOKS_SIGNING_KEY_FILE"
MIN_KEY_CHARS = 32
MAX_KEY_BYTES = 4096

VERIFIED = "verified"  # HMAC matches, with the key this machine holds
UNVERIFIABLE = "unverifiable"  # signed with a key this machine does not hold
UNSIGNED = "unsigned"  # no HMAC (no key when written, or an older version)
MISMATCH = "mismatch"  # HMAC present, key held, and it does not match: edited

PROVES = (
    "run.json was last written by a vllm-runbooks process holding signing key {key_id}, and nothing in it "
    "(entries, verdicts, the sha256 of every listed artefact) changed since"
)
DOES_NOT_PROVE = (
    "that nobody else could read that key (anyone able to read the key file, the same OS user included, can "
    "forge), that the results are true, or who ran the runbooks; approvals by people are separate"
)


@dataclass(frozen=True)
class SigningKey:
    """The secret, its public id (recorded in run.json) and where it came from."""

    secret: bytes
    key_id: str
    source: str


def key_id_of(secret: bytes) -> str:
    """A short public name of a key: which key signed, without revealing it."""
    return hashlib.sha256(b"vllm-runbooks signing key id:" + secret).hexdigest()[:16]


def default_key_file() -> Path:
    """Where this user's key lives when neither environment variable names one."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vllm-runbooks" / "signing.key"


def signing_key(create: bool = False, outside: Path | None = None) -> tuple[SigningKey | None, str]:
    """The key to sign or verify with, and why there is none when there is none.

    ``create``: make the default key file when it does not exist (writers do; verifiers never).
    ``outside``: a run directory the key must not lie in (a key inside it proves nothing).
    """
    value = os.environ.get(KEY_ENV)
    if value:
        if len(value) < MIN_KEY_CHARS:
            return None, f"${KEY_ENV} is shorter than {MIN_KEY_CHARS} characters: not used"
        secret = value.encode("utf-8", "surrogateescape")
        return SigningKey(secret, key_id_of(secret), f"${KEY_ENV}"), ""
    named = os.environ.get(KEY_FILE_ENV)
    path = Path(named).expanduser() if named else default_key_file()
    if outside is not None and _inside(path, outside):
        return None, f"key file {path} lies inside the run directory: not used"
    if create and not path.exists():
        _create_key_file(path)
    return _read_key_file(path)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (OSError, ValueError):
        return False


def _create_key_file(path: Path) -> None:
    """32 random bytes, hex, mode 0600, in a 0700 folder; exclusive (two first runs keep one key)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return
    except OSError:
        return  # read-only home: runs are written unsigned, and say why
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32) + "\n")


def _read_key_file(path: Path) -> tuple[SigningKey | None, str]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None, f"no signing key ({path} does not exist)"
    except OSError as exc:
        return None, f"signing key {path} unreadable ({exc.strerror or exc})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, f"signing key {path} is not a regular file: not used"
        if info.st_uid != os.getuid():
            return None, f"signing key {path} belongs to another user: not used"
        if info.st_mode & 0o077:
            mode = f"{info.st_mode & 0o777:o}"
            return None, f"signing key {path} is readable or writable by others (mode {mode}): not used"
        secret = handle.read(MAX_KEY_BYTES + 1).strip()
    if len(secret) < MIN_KEY_CHARS or len(secret) > MAX_KEY_BYTES:
        return None, f"signing key {path} is not {MIN_KEY_CHARS}–{MAX_KEY_BYTES} bytes: not used"
    return SigningKey(secret, key_id_of(secret), str(path)), ""


def mac(key: SigningKey, digest: str) -> str:
    """The HMAC-SHA256 of run.json's canonical digest."""
    return hmac.new(key.secret, digest.encode("ascii"), hashlib.sha256).hexdigest()


def check(signature: object, digest: str, key: SigningKey | None) -> tuple[str, str]:
    """One of :data:`VERIFIED`, :data:`UNVERIFIABLE`, :data:`UNSIGNED`, :data:`MISMATCH`, and why."""
    if not isinstance(signature, dict) or not isinstance(signature.get("hmac_sha256"), str):
        return UNSIGNED, "run.json carries no keyed signature (written without a signing key, or by an older version)"
    key_id = str(signature.get("key_id") or "?")
    if key is None or key.key_id != key_id:
        held = f"this machine holds key {key.key_id}" if key else "this machine holds no key"
        return UNVERIFIABLE, f"signed with key {key_id}; {held}: set ${KEY_ENV} to that key to verify it"
    if not hmac.compare_digest(signature["hmac_sha256"], mac(key, digest)):
        return MISMATCH, f"run.json was edited after it was signed (its HMAC with key {key_id} does not match)"
    return VERIFIED, PROVES.format(key_id=key_id)
