"""Reading a file a user hands over: bounded in bytes, lines and nesting; non-UTF-8 tolerated.

Why one module: request JSONL, tool schemas, nccl-tests output and the like come from tickets
and schedulers, so each may be huge, binary, one endless line or JSON nested a million deep.
Every reader here states its bound, never holds more than it, and says in plain words when it
cut, so the caller can turn the cut into a finding instead of a crash or a silent partial read.
(Logs, which may be compressed and are streamed through redaction, have their own reader.)
"""

from __future__ import annotations

import functools
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
