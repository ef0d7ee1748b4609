"""Line normalisation: colour codes and transport prefixes off, log level read.

Logs reach us through docker (``--timestamps``, compose service prefixes), kubectl
(``--timestamps``, ``--prefix``), containerd/CRI files and journald. Those prefixes carry no
evidence and would hide the message start, so they are removed before a finding is recorded and
before the line's log level is read.
"""

from __future__ import annotations

import re

#: ANSI CSI / OSC escape sequences, plus the literal "^[[0;36m" form seen in pasted logs.
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\^\[\[[0-9;]*m")
ANSI_BYTES_RE = re.compile(
    rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\^\[\[[0-9;]*m"
)


def holds_colour_codes(data: bytes, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` may hold colour codes, as escape bytes or written out ("^[[0;36m").

    Cheap enough for every block of a 400 MB log: one-byte finds are memchr; "^[[" is searched for only
    after a "^", because a search for a needle ending in "[" stops at every "[" (0.25 s on 400 MB).
    """
    if data.find(b"\x1b", start, end) >= 0:
        return True
    caret = data.find(b"^", start, end)
    return caret >= 0 and data.find(b"^[[", caret, end) >= 0


_PREFIXES: tuple[re.Pattern[str], ...] = (
    # docker --timestamps / kubectl --timestamps / CRI: RFC 3339 timestamp (+ CRI stream and tag)
    re.compile(
        r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+"
        r"(?:(?:stdout|stderr)\s+[FP]\s+)?"
    ),
    # kubectl logs --prefix: [pod/name/container]
    re.compile(r"^\[pod/[^\]\s]+\]\s+"),
    # docker compose: "service_1  | " / "service-1  | "
    re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s"),
    # journald short / short-iso: "Aug 18 14:15:04 host ident[pid]: " (any month spelling)
    re.compile(
        r"^(?:\S{3,5}\.? {1,2}\d{1,2} \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
        r"(?:[+-]\d{2}:?\d{2}|Z)?) \S+ [^\s:\[]+(?:\[\d+\])?: "
    ),
    # process prefixes added by vLLM / Ray / torchrun: "(EngineCore_DP0 pid=1) ", "[rank0]: "
    re.compile(r"^\((?:\w+(?: rank=\d+)? pid=\d+(?:, ip=[^)]*)?)\)\s+"),
    re.compile(r"^\[rank\d+\]:\s*"),
    # FastChat / LLaVA re-log their own stderr and stdout through a logger at ERROR / INFO:
    # "2023-09-03 13:06:49 | ERROR | stderr | INFO:     Uvicorn running on ..." (blind batch 16): the
    # wrapped line carries its own level
    re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \| (?:ERROR|INFO) +\| std(?:err|out) \| "),
)

_LEVELS: tuple[tuple[re.Pattern[str], int], ...] = (
    # vLLM: "INFO 07-21 04:58:42 [...]"
    (re.compile(r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d{2}-\d{2} "), 1),
    # uvicorn / python default: "INFO:     127.0.0.1", "ERROR:root:"
    (re.compile(r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL):"), 1),
    # python logging / Ray: "2023-09-21 09:59:38,239\tWARNING services.py"
    (re.compile(r"^\d{4}-\d{2}-\d{2}[ T][\d:.,]+\s+(?:\|\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b"), 1),
    # loguru-style "... | ERROR | ..."
    (re.compile(r"\|\s+(DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\|"), 1),
)


def strip_ansi(text: str) -> str:
    """Remove terminal colour/control sequences."""
    return ANSI_RE.sub("", text) if ("\x1b" in text or "^[[" in text) else text


def strip_prefixes(line: str) -> str:
    """Remove transport and process prefixes (repeatedly: they stack, e.g. kubectl + compose)."""
    for _ in range(4):
        before = line
        for pat in _PREFIXES:
            line = pat.sub("", line, count=1)
        if line == before:
            break
    return line


def normalize_line(line: str) -> str:
    """The message part of a raw log line: no colour codes, no prefixes, no trailing CR/space."""
    return strip_prefixes(strip_ansi(line).rstrip("\r\n ")).lstrip()


def line_level(message: str) -> str | None:
    """Log level of a normalised line (``INFO``, ``WARNING``, ...), or None when not stated."""
    for pat, group in _LEVELS:
        m = pat.search(message)
        if m:
            lvl = m.group(group)
            return "WARNING" if lvl == "WARN" else lvl
    if "UserWarning:" in message or "DeprecationWarning:" in message or "FutureWarning:" in message:
        return "WARNING"
    return None
