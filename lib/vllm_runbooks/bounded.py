"""Reading a file a user hands over: bounded in bytes, lines and nesting; non-UTF-8 tolerated.

Why one module: request JSONL, tool schemas, nccl-tests output and the like come from tickets
and schedulers, so each may be huge, binary, one endless line or JSON nested a million deep.
Every reader here states its bound, never holds more than it, and says in plain words when it
cut, so the caller can turn the cut into a finding instead of a crash or a silent partial read.
(Logs, which may be compressed and are streamed through redaction, have their own reader.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Longest line handed to a caller; the rest of a longer line is skipped and reported.
MAX_LINE_BYTES = 4 * 1024 * 1024


@dataclass
class BoundedText:
    """The text read from a file, and whether it was cut or held bytes that are not UTF-8."""

    text: str
    path: str
    max_bytes: int
    cut: bool = False
    non_utf8: bool = False

    def notes(self) -> list[str]:
        """Plain-words findings about this read (empty when the file was read whole and clean)."""
        out = []
        if self.cut:
            out.append(f"{self.path} is larger than {self.max_bytes} bytes: only the first {self.max_bytes} were read")
        if self.non_utf8:
            out.append(f"{self.path} holds bytes that are not UTF-8: they were replaced (U+FFFD)")
        return out


def _decode(data: bytes) -> tuple[str, bool]:
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True


def read_text(path: str | Path, max_bytes: int) -> BoundedText:
    """At most ``max_bytes`` of a file as text (OSError when it cannot be opened)."""
    with open(path, "rb") as handle:
        data = handle.read(max_bytes + 1)
    cut = len(data) > max_bytes
    text, bad = _decode(data[:max_bytes])
    return BoundedText(text, str(path), max_bytes, cut=cut, non_utf8=bad)


@dataclass
class Line:
    """One line of a bounded line read: its number, its text, and how many bytes were skipped."""

    number: int
    text: str
    skipped_bytes: int = 0  # > 0: the line was longer than the line bound and is cut
    non_utf8: bool = False


def iter_lines(
    path: str | Path, max_bytes: int, max_line_bytes: int = MAX_LINE_BYTES, notes: list[str] | None = None
) -> Iterator[Line]:
    """Lines of a file, each at most ``max_line_bytes``, the whole read at most ``max_bytes``.

    A longer line is yielded cut (``skipped_bytes`` says by how much); reading stops at the byte
    bound. What was cut goes to ``notes`` as a sentence. Opening raises OSError.
    """
    total = 0
    with open(path, "rb") as handle:
        number = 0
        while True:
            if total >= max_bytes:
                if handle.read(1) and notes is not None:
                    notes.append(f"{path} is larger than {max_bytes} bytes: the rest was not read")
                return
            raw = handle.readline(max_line_bytes + 1)  # the byte bound is passed by one line at most
            if not raw:
                return
            number += 1
            total += len(raw)
            skipped = 0
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                raw = raw[:max_line_bytes]
                while more := handle.readline(1024 * 1024):
                    skipped += len(more)
                    total += len(more)
                    if more.endswith(b"\n") or total >= max_bytes:
                        break
                if notes is not None:
                    notes.append(f"line {number}: longer than {max_line_bytes} bytes, cut")
            text, bad = _decode(raw)
            yield Line(number, text.rstrip("\r\n"), skipped, bad)


def loads_json(text: str | bytes, what: str = "JSON") -> Any:
    """``json.loads`` that reports nesting too deep for the parser as ValueError, like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply to read") from None


def load_json(path: str | Path, max_bytes: int) -> tuple[Any, list[str]]:
    """A JSON file read with a byte bound: (value, notes). ValueError when too big, too deep or not
    JSON (a JSON document cut short is not JSON); OSError when it cannot be opened."""
    got = read_text(path, max_bytes)
    if got.cut:
        raise ValueError(f"{path} is larger than {max_bytes} bytes: not read")
    return loads_json(got.text, str(path)), got.notes()
