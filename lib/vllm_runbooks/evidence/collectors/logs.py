"""Logs: every log the source offers, copied through redaction (huge logs keep head and tail)."""

from __future__ import annotations

from pathlib import Path

from ... import probe, redact
from ..model import OK, PARTIAL, Item
from ..registry import Context, register


@register("logs", "Logs", order=60)
def collect_logs(ctx: Context) -> Item:
    """Store every log redacted under ``raw/logs/``, with line counts and first errors."""
    logs = ctx.source.logs()
    if not logs:
        why = "no log paths given and no container" if ctx.source.kind == "local" else "no logs in bundle"
        return Item.unavailable(why, {"files": []})
    files, problems, arts = [], [], []
    used: set[str] = set()
    for name, opener in logs:
        stored = probe.safe_log_name(name)
        while stored in used:
            stored = "_" + stored
        used.add(stored)
        rel = f"raw/logs/{stored}"
        try:
            with opener() as stream:
                summary = ctx.keep_log(rel, stream)
        except (OSError, EOFError, ValueError) as e:
            problems.append(f"{redact.redact_text(name)}: {redact.redact_text(str(e))}")
            continue
        arts.append(rel)
        files.append({"name": redact.redact_text(Path(name).name), "stored_as": rel, **summary})
    if not files:
        return Item.unavailable("; ".join(problems), {"files": []})
    notes = problems + [
        f"{f['name']}: stored head and tail only ({f['omitted_lines']} lines omitted)" for f in files if f["truncated"]
    ]
    return Item(PARTIAL if problems else OK, "; ".join(notes) or None, {"files": files}, arts)
