"""Writing a runbook's own artefacts into a run directory: redacted, and never over another file.

Every JSON or text file a runbook leaves beside its notebook goes through here, so the two
promises of a run directory — no secrets, nothing overwritten — hold in one place.
"""

from __future__ import annotations

import json
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
    for n in range(1, 1000):
        candidate = target if n == 1 else target.with_name(f"{target.stem}-{n}{target.suffix}")
        try:
            with candidate.open("x", encoding="utf-8") as handle:
                handle.write(payload)
            return candidate
        except FileExistsError:
            continue
    raise FileExistsError(f"{target}: too many artefacts of that name")
