"""Multi-pattern matching engines: an RE2 single-pass prefilter, and a pure-``re`` fallback.

The scanner asks two questions: "where is the next line in this big byte block that any pattern
could match?" (prefilter, run over megabytes at a time) and "which patterns match this one line?"
(run only on candidate lines). RE2 answers the first with one DFA pass over all patterns at
once, which is what lets us keep up with ``grep -E -f``. Without RE2 the same interface is served
by Python's ``re`` (slower, same results; tested against each other). Both work on bytes with
one-byte-per-character semantics so that the prefilter and the per-line check always agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

try:  # google-re2
    import re2 as _re2  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - exercised by forcing engine="re"
    _re2 = None
try:  # Hyperscan (optional; x86-64 Linux wheels)
    import hyperscan as _hs  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover
    _hs = None

#: DFA memory for the combined prefilter; the default (8 MiB) can overflow with ~200 patterns,
#: and RE2 then falls back to its much slower NFA.
_RE2_MAX_MEM = 256 << 20


def re2_available() -> bool:
    return _re2 is not None


def hyperscan_available() -> bool:
    return _hs is not None


ENGINES: tuple[str, ...] = ("auto", "hyperscan", "re2", "re")


def _combined(patterns: Sequence[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


class Engine(Protocol):
    name: str

    def find(self, block: bytes, pos: int, endpos: int) -> int:
        """Offset of the start of the next match in ``block[pos:endpos]``, or -1."""
        ...

    def which(self, line: bytes) -> list[int]:
        """Indices (into the pattern list) of every pattern that matches ``line`` (UTF-8 bytes)."""
        ...

    def candidates(self, data: bytes, start: int, end: int) -> list[tuple[int, int]]:
        """(line start, line end) of every line in ``data[start:end]`` the prefilter hits."""
        ...


def _find_loop(find, data: bytes, start: int, end: int) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """Candidate lines by repeated leftmost search (RE2 / re)."""
    out: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        j = find(data, pos, end)
        if j < 0:
            break
        ls = data.rfind(b"\n", start, j) + 1
        if ls < start:
            ls = start
        le = data.find(b"\n", j, end)
        if le < 0:
            le = end
        out.append((ls, le))
        pos = le + 1
    return out


class Re2Engine:
    """RE2 prefilter (Latin-1, one alternation) and an RE2 Set for per-line attribution."""

    name = "re2"

    def __init__(self, patterns: Sequence[str], prefilter: Sequence[int] | None = None) -> None:
        if _re2 is None:
            raise RuntimeError("google-re2 is not installed")
        opts = _re2.Options()
        opts.encoding = _re2.Options.Encoding.LATIN1
        opts.max_mem = _RE2_MAX_MEM
        opts.never_capture = True
        idx = list(range(len(patterns))) if prefilter is None else list(prefilter)
        self._pre = _re2.compile(_combined([patterns[i] for i in idx]).encode("utf-8"), opts)
        self._set = _re2.Set.SearchSet(opts)
        for p in patterns:
            self._set.Add(p.encode("utf-8"))
        self._set.Compile()

    def find(self, block: bytes, pos: int, endpos: int) -> int:
        m = self._pre.search(block, pos, endpos)
        return -1 if m is None else m.start()

    def which(self, line: bytes) -> list[int]:
        return sorted(self._set.Match(line) or ())

    def candidates(self, data: bytes, start: int, end: int) -> list[tuple[int, int]]:
        return _find_loop(self.find, data, start, end)


class ReEngine:
    """Pure-Python fallback with the same behaviour (slower on large files)."""

    name = "re"

    def __init__(self, patterns: Sequence[str], prefilter: Sequence[int] | None = None) -> None:
        idx = list(range(len(patterns))) if prefilter is None else list(prefilter)
        self._pre = re.compile(_combined([patterns[i] for i in idx]).encode("utf-8"))
        self._each = [re.compile(p.encode("utf-8")) for p in patterns]

    def find(self, block: bytes, pos: int, endpos: int) -> int:
        m = self._pre.search(block, pos, endpos)
        return -1 if m is None else m.start()

    def which(self, line: bytes) -> list[int]:
        return [i for i, rx in enumerate(self._each) if rx.search(line)]

    def candidates(self, data: bytes, start: int, end: int) -> list[tuple[int, int]]:
        return _find_loop(self.find, data, start, end)


class HyperscanEngine:
    """Hyperscan prefilter (SIMD multi-pattern, several GB/s); attribution by RE2 Set or re.

    Hyperscan reports match *ends*; each end is mapped to its line. Lines are then verified
    with the same per-line matcher as the other engines, so results are identical.
    """

    name = "hyperscan"

    def __init__(self, patterns: Sequence[str], prefilter: Sequence[int] | None = None) -> None:
        if _hs is None:
            raise RuntimeError("hyperscan is not installed")
        idx = list(range(len(patterns))) if prefilter is None else list(prefilter)
        self._db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        self._db.compile(
            expressions=[patterns[i].encode("utf-8") for i in idx],
            ids=list(range(len(idx))),
            elements=len(idx),
            flags=[0] * len(idx),
        )
        self._line = Re2Engine(patterns, []) if _re2 is not None else ReEngine(patterns, [])

    def find(self, block: bytes, pos: int, endpos: int) -> int:
        spans = self.candidates(block, pos, endpos)
        return spans[0][0] if spans else -1

    def which(self, line: bytes) -> list[int]:
        return self._line.which(line)

    def candidates(self, data: bytes, start: int, end: int) -> list[tuple[int, int]]:
        ends: list[int] = []

        def on_match(_id: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            ends.append(to)

        view = data if (start == 0 and end == len(data)) else memoryview(data)[start:end]
        self._db.scan(view, match_event_handler=on_match)
        out: list[tuple[int, int]] = []
        last_end = -1
        for to in sorted(ends):
            j = start + max(to - 1, 0)
            if j <= last_end:
                continue
            ls = data.rfind(b"\n", start, j) + 1
            if ls < start:
                ls = start
            if j < end and data[j] == 0x0A:  # empty match at a line end: belongs to that line
                le = j
            else:
                le = data.find(b"\n", j, end)
                if le < 0:
                    le = end
            out.append((ls, le))
            last_end = le
        return out


def make_engine(name: str, patterns: Sequence[str], prefilter: Sequence[int] | None = None) -> Engine:
    """``name``: ``auto`` (Hyperscan, else RE2, else re), ``hyperscan``, ``re2`` or ``re``."""
    if name == "auto":
        name = "hyperscan" if _hs is not None else "re2" if _re2 is not None else "re"
        if name == "hyperscan":
            try:
                return HyperscanEngine(patterns, prefilter)
            except Exception:  # noqa: BLE001 - a pattern Hyperscan rejects: RE2 serves instead
                name = "re2" if _re2 is not None else "re"
    if name == "hyperscan":
        return HyperscanEngine(patterns, prefilter)
    if name == "re2":
        return Re2Engine(patterns, prefilter)
    if name == "re":
        return ReEngine(patterns, prefilter)
    raise ValueError(f"unknown engine {name!r} (one of {ENGINES})")
