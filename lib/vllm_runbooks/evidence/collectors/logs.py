"""Logs: every log the source offers, copied through redaction (huge logs keep head and tail)."""

from __future__ import annotations

from pathlib import Path

from ... import probe, redact
from ..model import OK, PARTIAL, Item
from ..registry import Context, register

#: Seconds one log may take to store, and how many logs one capture stores.
LOG_SECONDS = 20.0
MAX_LOGS = 64


@register("logs", "Logs", order=60)
def collect_logs(ctx: Context) -> Item:
    """Store every log redacted under ``raw/logs/``, with line counts and first errors."""
    logs = ctx.source.logs()
    if not logs:
        why = "no log paths given and no container" if ctx.source.kind == "local" else "no logs in bundle"
        return Item.unavailable(why, {"files": []})
    files, problems, arts = [], [], []
    used: set[str] = set()
    if len(logs) > MAX_LOGS:
        problems.append(f"{len(logs)} logs: only the first {MAX_LOGS} are stored")
        logs = logs[:MAX_LOGS]
    # Each log has its own time bound, so one huge log cannot use up the whole collector's.
    per_log_s = max(1.0, min(LOG_SECONDS, 0.8 * ctx.collector_timeout_s / max(1, len(logs))))
    for name, opener in logs:
        stored = probe.safe_log_name(name)
        while stored in used:
            stored = "_" + stored
        used.add(stored)
        rel = f"raw/logs/{stored}"
        try:
            with opener() as stream:
                summary = ctx.keep_log(rel, stream, max_seconds=per_log_s)
        except (OSError, EOFError, ValueError) as e:
            problems.append(f"{redact.redact_text(name)}: {redact.redact_text(str(e))}")
            continue
        arts.append(rel)
        files.append({"name": redact.redact_text(Path(name).name), "stored_as": rel, **summary})
    if not files:
        return Item.unavailable("; ".join(problems), {"files": []})
    notes = problems + [
        f"{f['name']}: stored head and tail only ({f['omitted_lines']} lines omitted"
        + (f", {f['stopped']}" if f.get("stopped") else "")
        + ")"
        for f in files
        if f["truncated"]
    ]
    return Item(PARTIAL if problems else OK, "; ".join(notes) or None, {"files": files}, arts)
