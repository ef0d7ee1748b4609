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
from typing import Any, Protocol

# Engines are imported on first use (start-up time of the command line matters).
_MODS: dict[str, Any] = {}


def _mod(name: str) -> Any:
    if name not in _MODS:
        try:
            _MODS[name] = __import__(name)
        except ImportError:  # pragma: no cover - optional engines
            _MODS[name] = None
    return _MODS[name]


def __getattr__(attr: str) -> Any:  # _re2 / _hs for callers and tests that look them up
    if attr == "_re2":
        return _mod("re2")
    if attr == "_hs":
        return _mod("hyperscan")
    raise AttributeError(attr)


#: DFA memory for the combined prefilter; the default (8 MiB) can overflow with ~200 patterns,
#: and RE2 then falls back to its much slower NFA.
_RE2_MAX_MEM = 256 << 20


def re2_available() -> bool:
    """Whether google-re2 can be imported (the RE2 engine and the pattern check use it)."""
    return _mod("re2") is not None


def hyperscan_available() -> bool:
    """Whether Hyperscan can be imported (the fastest engine; x86-64 Linux wheels only)."""
    return _mod("hyperscan") is not None


ENGINES: tuple[str, ...] = ("auto", "hyperscan", "re2", "re")


_BOUNDED = re.compile(r"(\.|\[\^[^]]*\])\{0,[0-9]+\}")


def relax(pattern: str) -> str:
    """A superset of ``pattern`` that Hyperscan scans faster: ``.{0,80}`` becomes ``.*``.

    Lines hold no newline, so the relaxed pattern can only match more within the same line; the
    exact pattern then decides on that line. Bounded gaps halve Hyperscan's throughput.
    """
    return _BOUNDED.sub(".*", pattern)


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
        _re2 = _mod("re2")
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
    """Hyperscan prefilter (SIMD multi-pattern, several GB/s); attribution by the same database.

    Hyperscan reports match *ends*; each end is mapped to its line. A candidate line is scanned
    again with the full database to learn which patterns match it (pattern ids are the indices),
    so no second regex engine is compiled at start-up. The compiled database serialises
    (:meth:`dump` / :meth:`from_bytes`), which is what makes the on-disk cache possible.
    """

    name = "hyperscan"

    def __init__(
        self,
        patterns: Sequence[str] | None,
        prefilter: Sequence[int] | None = None,
        *,
        db: Any = None,
        exact: Any = None,
        single: Sequence[int] = (),
        pre: Sequence[tuple[int, str]] | None = None,
    ) -> None:
        if _mod("hyperscan") is None:
            raise RuntimeError("hyperscan is not installed")
        self._patterns = list(patterns) if patterns is not None else None
        self._exact = exact
        if db is not None:
            self._db = db
            return
        assert patterns is not None
        if pre is None:
            idx = list(range(len(patterns))) if prefilter is None else list(prefilter)
            pre = [(i, relax(patterns[i])) for i in idx]
        self._db = _compile([e for _, e in pre], [k for k, _ in pre], set(single))

    def dump(self) -> tuple[bytes, bytes | None]:
        """The compiled prefilter and exact databases as bytes (for the cache)."""
        hs = _mod("hyperscan")
        return hs.dumpb(self._db), (hs.dumpb(self._exact) if self._exact is not None else None)

    def ensure_exact(self) -> None:
        """Compile the exact per-line database now (before :meth:`dump`)."""
        if self._exact is None:
            assert self._patterns is not None
            self._exact = _compile(self._patterns, list(range(len(self._patterns))))

    @classmethod
    def from_bytes(cls, data: tuple[bytes, bytes | None]) -> HyperscanEngine:
        """Rebuild from :meth:`dump` output without compiling."""
        pre, exact = data
        return cls(None, db=_load(pre), exact=_load(exact) if exact is not None else None)

    def find(self, block: bytes, pos: int, endpos: int) -> int:
        spans = self.candidates(block, pos, endpos)
        return spans[0][0] if spans else -1

    def which(self, line: bytes) -> list[int]:
        hit: set[int] = set()

        def on_match(pid: int, _frm: int, _to: int, _flags: int, _ctx: object) -> None:
            hit.add(pid)

        self.ensure_exact()
        self._exact.scan(line, match_event_handler=on_match)
        return sorted(hit)

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


def _compile(expressions: Sequence[str], ids: Sequence[int], single: set[int] | frozenset[int] = frozenset()) -> Any:
    """A block-mode database; patterns whose id is in ``single`` report one match per scan."""
    hs = _mod("hyperscan")
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    db.compile(
        expressions=[e.encode("utf-8") for e in expressions],
        ids=list(ids),
        elements=len(ids),
        flags=[hs.HS_FLAG_SINGLEMATCH if i in single else 0 for i in ids],
    )
    return db


def _load(data: bytes) -> Any:
    hs = _mod("hyperscan")
    db = hs.loadb(data, hs.HS_MODE_BLOCK)
    db.scratch = hs.Scratch(db)  # a loaded database has no scratch space yet
    return db


def make_engine(
    name: str,
    patterns: Sequence[str],
    prefilter: Sequence[int] | None = None,
    single: Sequence[int] = (),
    pre: Sequence[tuple[int, str]] | None = None,
) -> Engine:
    """``name``: ``auto`` (Hyperscan, else RE2, else re), ``hyperscan``, ``re2`` or ``re``.

    ``single``: pattern indices that may report only their first match per block (Hyperscan
    only): the frequent "server is up" lines, which would otherwise make every line a candidate.
    ``pre``: (pattern index, expression) pairs for the Hyperscan prefilter (superset patterns);
    the other engines use the exact patterns.
    """
    if name == "auto":
        name = "hyperscan" if hyperscan_available() else "re2" if re2_available() else "re"
        if name == "hyperscan":
            try:
                return HyperscanEngine(patterns, prefilter, single=single, pre=pre)
            except Exception:  # noqa: BLE001 - a pattern Hyperscan rejects: RE2 serves instead
                name = "re2" if re2_available() else "re"
    if name == "hyperscan":
        return HyperscanEngine(patterns, prefilter, single=single, pre=pre)
    if name == "re2":
        return Re2Engine(patterns, prefilter)
    if name == "re":
        return ReEngine(patterns, prefilter)
    raise ValueError(f"unknown engine {name!r} (one of {ENGINES})")
