"""Reading a file a user hands over: bounded in bytes, lines and nesting; non-UTF-8 tolerated.

Why one module: request JSONL, tool schemas, nccl-tests output and the like come from tickets
and schedulers, so each may be huge, binary, one endless line or JSON nested a million deep.
Every reader here states its bound, never holds more than it, and says in plain words when it
cut, so the caller can turn the cut into a finding instead of a crash or a silent partial read.
One JSON reader (:func:`load_json`: bytes and nesting) serves run.json, saved records and
imported results alike; lines are split by the one line splitter, the log reader
(``logs.reader.LogReader``), which :func:`iter_lines` decodes for a user-handed text file.
"""

from __future__ import annotations

import functools
import json
import os
import stat
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


#: Bytes read per block by :func:`iter_lines` at most (a small line bound reads in small blocks).
LINE_READ_BLOCK = 1024 * 1024


def iter_lines(
    path: str | Path, max_bytes: int, max_line_bytes: int = MAX_LINE_BYTES, notes: list[str] | None = None
) -> Iterator[Line]:
    """Lines of a file as text, each at most ``max_line_bytes``, the whole read at most ``max_bytes``.

    Why through the log reader: one splitter for every line read (plain or compressed, a pipe, one
    endless line); this adds the decoding and the sentences. A longer line is yielded cut
    (``skipped_bytes`` says by how much); reading stops at the byte bound (a last line may be cut
    there). What was cut or not read goes to ``notes``. Opening raises OSError.
    """
    from .logs.reader import LogReader, LogUnreadable

    try:
        reader = LogReader(Path(path), max_bytes=max_bytes, max_line_bytes=max_line_bytes)
    except LogUnreadable as exc:
        raise OSError(f"{path}: {exc}") from None
    with reader:
        block = max(64 * 1024, min(LINE_READ_BLOCK, reader.max_line_bytes))
        for number, raw, skipped in reader.cut_lines(block):
            if skipped and notes is not None:
                notes.append(f"line {number}: longer than {reader.max_line_bytes} bytes, cut")
            text, bad = _decode(raw)
            yield Line(number, text, skipped, bad)
        st = reader.stats
        whole = st.compression is None and st.file_bytes is not None and st.file_bytes <= st.bytes_read
        if notes is not None:
            if st.truncated and not whole:
                notes.append(f"{path} is larger than {max_bytes} bytes: the rest was not read")
            notes.extend(f"{path}: {why}" for why in st.unread)


def loads_json(text: str | bytes, what: str = "JSON") -> Any:
    """``json.loads`` that reports nesting too deep for the parser as ValueError, like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply to read") from None


class TooLarge(ValueError):
    """A file refused whole because it is larger than its bound (the caller words its own cap)."""

    def __init__(self, path: str | Path, max_bytes: int, size: int | None = None) -> None:
        self.path, self.max_bytes, self.size = str(path), max_bytes, size
        super().__init__(f"{path} is larger than {max_bytes} bytes: not read")


def load_json(path: str | Path, max_bytes: int, *, utf8_only: bool = False) -> tuple[Any, list[str]]:
    """A JSON file read with a byte bound: (value, notes). The one bounded JSON reader.

    :class:`TooLarge` (a ValueError) when larger than ``max_bytes`` (a regular file is refused by
    its size, before a byte is read); ValueError when nested too deep for the parser or not JSON
    (a document cut short is not JSON); OSError when it cannot be opened. Bytes that are not UTF-8
    are replaced and said in the notes, or refused (ValueError) with ``utf8_only``: a file only
    this program writes (run.json) that holds them was not written by it.
    """
    with open(path, "rb") as handle:
        st = os.fstat(handle.fileno())
        if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
            raise TooLarge(path, max_bytes, st.st_size)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(path, max_bytes)
    text, bad = _decode(data)
    if bad and utf8_only:
        raise ValueError(f"{path} holds bytes that are not UTF-8: not read")
    notes = [f"{path} holds bytes that are not UTF-8: they were replaced (U+FFFD)"] if bad else []
    return loads_json(text, str(path)), notes


#: Most nodes (scalars, lists, mappings) a user-handed YAML document may hold: a parameters file
#: has tens, the shipped log signatures under a thousand; pure-Python YAML composes ~20k a second.
MAX_YAML_NODES = 20_000
#: Deepest nesting of a user-handed YAML document (PyYAML composes recursively).
MAX_YAML_DEPTH = 64
#: Largest user-handed YAML file read at all.
MAX_YAML_BYTES = 1024 * 1024


class YamlRefused(ValueError):
    """A YAML document refused before it was built: an anchor or alias, too many nodes, too deep."""


@functools.cache
def _bounded_loader() -> type:
    """A SafeLoader that composes no anchor or alias and counts nodes and depth as it goes.

    Why refuse anchors outright: aliases are how 235 bytes expand into millions of nodes (an
    alias bomb); no parameters, rules or signatures file needs them. Built on first use so that
    importing this module does not import yaml.
    """
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        what = "YAML"
        max_nodes = MAX_YAML_NODES
        max_depth = MAX_YAML_DEPTH
        nodes = 0
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            mark = event.start_mark
            at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            if isinstance(event, yaml.AliasEvent):
                raise YamlRefused(
                    f"{self.what}{at}: an alias (*{event.anchor}) is refused: anchors and aliases can "
                    "expand a few bytes into millions of values; write the value out"
                )
            if getattr(event, "anchor", None) is not None:
                raise YamlRefused(
                    f"{self.what}{at}: an anchor (&{event.anchor}) is refused: anchors and aliases can "
                    "expand a few bytes into millions of values; write the value out"
                )
            self.nodes += 1
            if self.nodes > self.max_nodes:
                raise YamlRefused(f"{self.what}{at}: more than {self.max_nodes} nodes; not read further")
            self.depth += 1
            try:
                if self.depth > self.max_depth:
                    raise YamlRefused(f"{self.what}{at}: nested more than {self.max_depth} deep; not read further")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return BoundedLoader


def loads_yaml(
    text: str | bytes, what: str = "YAML", *, max_nodes: int = MAX_YAML_NODES, max_depth: int = MAX_YAML_DEPTH
) -> Any:
    """``yaml.safe_load`` for a user-handed document, bounded: no anchors or aliases, at most
    ``max_nodes`` nodes, ``max_depth`` deep (``YamlRefused``, a ValueError, names the line).
    Bad YAML raises ``yaml.YAMLError`` as ``safe_load`` does; a value the constructor cannot
    build (an integer of 5000 digits) raises ValueError."""
    loader = _bounded_loader()(text)
    loader.what, loader.max_nodes, loader.max_depth = what, max_nodes, max_depth
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml(path: str | Path, max_bytes: int = MAX_YAML_BYTES, **limits: int) -> Any:
    """A user-handed YAML file read with a byte bound and parsed by :func:`loads_yaml`.

    ValueError when larger than ``max_bytes``, not UTF-8 (``UnicodeDecodeError``) or refused;
    ``yaml.YAMLError`` when not YAML; OSError when it cannot be opened.
    """
    with open(path, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise YamlRefused(f"{path} is larger than {max_bytes} bytes: not read")
    return loads_yaml(raw.decode("utf-8"), str(path), **limits)
