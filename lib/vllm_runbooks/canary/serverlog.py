"""Startup time and model-load lines from a vLLM server log.

Why: "the model loaded" is only half the answer an approver wants; how long it took and what
vLLM said while loading (weights, KV cache size, engine init) show whether a start was healthy
or limped. vLLM's log lines carry ``INFO MM-DD HH:MM:SS`` stamps; the startup time is the span
from the first stamped line to "Starting vLLM server on ..." (or the API server's route list).
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

MAX_BYTES = 8 * 1024 * 1024
STAMP = re.compile(
    r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(\d\d)-(\d\d)\s+(\d\d):(\d\d):(\d\d)(?:\.\d+)?\b", re.ASCII
)
LOAD_LINE = re.compile(
    r"(non-default args|Starting to load model|Loading weights took|Model loading took|Initializing model took|"
    r"init engine .* took|KV cache size|Maximum concurrency|Memory profiling takes|Starting vLLM (?:API )?server on|"
    r"Application startup complete|Available routes are)",
)
READY = re.compile(r"Starting vLLM (?:API )?server on|Available routes are|Application startup complete")
TOOK = re.compile(r"took ([0-9.]+) ?(s|sec|seconds)\b")


def _stamp(m: re.Match[str], year: int) -> _dt.datetime:
    month, day, hh, mm, ss = (int(g) for g in m.groups())
    return _dt.datetime(year, month, day, hh, mm, ss)


def parse_server_log(path: str | Path, max_lines: int = 20) -> dict[str, Any]:
    """``{"startup_s", "ready", "load_lines", "weights_load_s", "engine_init_s", "error"}``; never raises."""
    out: dict[str, Any] = {
        "path": str(path),
        "startup_s": None,
        "ready": False,
        "load_lines": [],
        "weights_load_s": None,
        "engine_init_s": None,
        "error": None,
    }
    from ..logs.reader import LogUnreadable, open_log  # lazy: only a canary with a server log pays for it

    year = _dt.datetime.now().year
    first: _dt.datetime | None = None
    last: _dt.datetime | None = None
    ready_at: _dt.datetime | None = None
    try:
        reader = open_log(path, max_bytes=MAX_BYTES)
    except LogUnreadable as exc:
        out["error"] = f"cannot read server log: {exc}"
        return out
    with reader:
        for _, raw in reader.lines():
            line = raw.decode("utf-8", errors="replace")
            m = STAMP.search(line)
            if m:
                try:
                    last = _stamp(m, year)
                except ValueError:
                    last = None
                if first is None:
                    first = last
            if LOAD_LINE.search(line) and len(out["load_lines"]) < max_lines:
                out["load_lines"].append(line.strip()[:300])
            if "Loading weights took" in line or "Model loading took" in line:
                t = TOOK.search(line)
                if t and out["weights_load_s"] is None:
                    out["weights_load_s"] = float(t.group(1))
            if re.search(r"init engine .* took", line):
                t = TOOK.search(line)
                if t:
                    out["engine_init_s"] = float(t.group(1))
            if READY.search(line) and ready_at is None:
                out["ready"] = True
                ready_at = last
        if reader.stats.unread:  # a damaged or binary log: what was read is kept, and said
            out["error"] = "server log partly unreadable: " + "; ".join(reader.stats.unread)
    if first and ready_at:
        out["startup_s"] = float((ready_at - first).total_seconds())
    return out
