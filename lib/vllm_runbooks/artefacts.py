"""Writing a runbook's own artefacts into a run directory: redacted, and never over another file.

Every JSON or text file a runbook leaves beside its notebook goes through here, so the two
promises of a run directory — no secrets, nothing overwritten — hold in one place.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from .records import to_jsonable
from .redact import redact_obj, redact_text


def write_artefact(run_dir: str | Path, relpath: str | Path, data: Any) -> Path:
    """Redact ``data`` and write it to a NEW file under ``run_dir``; returns the path written.

    Dicts, lists and records are written as JSON; strings as text. When the name is taken (a
    cell executed twice in one session), ``name-2.json``, ``name-3.json``… is used instead.
    """
    target = Path(run_dir) / relpath
    if target.resolve().parent != Path(run_dir).resolve() / Path(relpath).parent:
        raise ValueError(f"artefact path {relpath!r} leaves the run directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        payload = redact_text(data)
    else:
        payload = json.dumps(redact_obj(to_jsonable(data)), indent=2, ensure_ascii=False) + "\n"
    # Written whole under a temporary name, then linked to the first free name: a reader never
    # sees half an artefact, a crash leaves at most the hidden temporary, and os.link never
    # replaces an existing file (two writers racing for one name both keep their artefact).
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8", errors="replace") as handle:
            handle.write(payload)
        for n in range(1, 1000):
            candidate = target if n == 1 else target.with_name(f"{target.stem}-{n}{target.suffix}")
            try:
                os.link(tmp, candidate)
                return candidate
            except FileExistsError:
                continue
    finally:
        tmp.unlink(missing_ok=True)
    raise FileExistsError(f"{target}: too many artefacts of that name")


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Replace ``path`` whole through a hidden temporary file and a rename: a killed run never
    leaves a half-written artefact (for files a run owns and rewrites, such as evidence.json)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        with tmp.open("xb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
