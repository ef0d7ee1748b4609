"""Streaming log classifier: any size, compressed or not, never the whole file in memory.

The file is read in large byte blocks. A single multi-pattern prefilter finds the few candidate
lines in each block; only those are decoded, stripped of prefixes and attributed to signatures.
The root cause is the highest-priority finding (priorities live in the signature data), so the
generic "engine core initialization failed" never outranks the CUDA error printed above it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import time
import zlib
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .diagnosis import STATUS_EMPTY, STATUS_OK, STATUS_UNREADABLE, LogDiagnoses, LogDiagnosis, LogFinding
from .matcher import Engine, make_engine
from .normalize import ANSI_BYTES_RE, line_level, normalize_line
from .signatures import DECISIVE, UNKNOWN, Signature, SignatureSet, load_signatures

CHUNK_BYTES = 8 << 20
#: A line longer than this is cut (and counted in ``long_lines``); text after the cut is still
#: scanned, as a continuation of the same line number.
MAX_LINE_BYTES = 4 << 20
#: Characters of a matching line kept in a finding (around the match for long lines).
KEEP_CHARS = 1000
MAX_FINDINGS_PER_SIGNATURE = 20
#: After this many "server is up" hits, stop looking for more (they recur every few seconds).
INFO_HITS_ENOUGH = 5
#: Context-marker hits remembered for refinement windows.
CONTEXT_MEMORY = 4096

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


class _Unreadable(Exception):
    """Raised internally when a source cannot be opened; becomes status ``unreadable``."""


@dataclass
class _Pending:
    finding: LogFinding
    sig: Signature
    best: tuple[int, str] | None = None  # (distance, context id)


@dataclass
class _Compiled:
    sigset: SignatureSet
    patterns: list[str]
    owners: list[tuple[str, int]]
    full: Engine
    lean: Engine
    span_res: dict[int, re.Pattern[bytes]] = field(default_factory=dict)

    def span(self, idx: int, line: bytes) -> tuple[int, int]:
        rx = self.span_res.get(idx)
        if rx is None:
            rx = self.span_res[idx] = re.compile(self.patterns[idx].encode("utf-8"))
        m = rx.search(line)
        return (m.start(), m.end()) if m else (0, 0)


_CACHE: dict[tuple[int, str], _Compiled] = {}


def _compiled(sigset: SignatureSet, engine: str) -> _Compiled:
    key = (id(sigset), engine)
    hit = _CACHE.get(key)
    if hit is not None and hit.sigset is sigset:
        return hit
    patterns: list[str] = []
    owners: list[tuple[str, int]] = []
    for i, s in enumerate(sigset.signatures):
        for p in s.patterns:
            patterns.append(p)
            owners.append(("sig", i))
    for i, c in enumerate(sigset.contexts):
        for p in c.patterns:
            patterns.append(p)
            owners.append(("ctx", i))
    lean_idx = [
        k for k, (kind, i) in enumerate(owners) if not (kind == "sig" and sigset.signatures[i].severity == "info")
    ]
    comp = _Compiled(sigset, patterns, owners, make_engine(engine, patterns), make_engine(engine, patterns, lean_idx))
    _CACHE[key] = comp
    return comp


_NONBLANK = re.compile(rb"\S")
#: Blocks at least this large are searched by several threads (RE2 releases the GIL).
PARALLEL_MIN_BYTES = 1 << 20
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(n: int) -> ThreadPoolExecutor:
    pool = _POOLS.get(n)
    if pool is None:
        pool = _POOLS[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="logscan")
    return pool


def _split(data: bytes, start: int, end: int, n: int) -> list[tuple[int, int]]:
    """Cut ``data[start:end]`` into ``n`` ranges at line boundaries."""
    cuts = [start]
    step = (end - start) // n
    for k in range(1, n):
        nl = data.find(b"\n", start + k * step, end)
        cut = end if nl < 0 else nl + 1
        cuts.append(max(cut, cuts[-1]))
    cuts.append(end)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


class _Scan:
    """State of one classification run."""

    def __init__(self, comp: _Compiled, threads: int = 1) -> None:
        self.comp = comp
        self.engine = comp.full
        self.findings: list[LogFinding] = []
        self.counts: dict[str, int] = {}
        self.info_hits = 0
        self.contexts: deque[tuple[int, int]] = deque(maxlen=CONTEXT_MEMORY)
        self.pending: list[_Pending] = []
        self.non_utf8 = False
        self.checked_encoding = False
        self.nul_bytes = False
        self.nonblank = False
        self.threads = threads

    # -- blocks ----------------------------------------------------------------------------
    def feed(self, data: bytes, start: int, end: int, line_no: int) -> int:
        """Scan complete lines in ``data[start:end]`` whose first line is ``line_no``.

        Returns the number of newlines consumed. Avoids copying the block: only a block with
        colour codes is rewritten (ANSI removed) before matching.
        """
        # (the literal "^[[0;36m" form of pasted logs is removed per line, in normalize_line)
        if data.find(b"\x1b", start, end) >= 0:
            data = ANSI_BYTES_RE.sub(b"", data[start:end])
            start, end = 0, len(data)
        if not self.nonblank and _NONBLANK.search(data, start, end):
            self.nonblank = True
        if not self.checked_encoding:
            self.checked_encoding = True
            self.check_utf8(data[start : min(end, start + (1 << 20))])
        if not self.nul_bytes and data.find(b"\x00", start, end) >= 0:
            self.nul_bytes = True
        engine = self.engine
        if self.threads > 1 and end - start >= PARALLEL_MIN_BYTES and engine.name == "re2":
            parts = _split(data, start, end, self.threads)
            pool = _pool(self.threads)
            futures = [pool.submit(engine.candidates, data, a, b) for a, b in parts]
            spans = [sp for fut in futures for sp in fut.result()]
        else:
            spans = engine.candidates(data, start, end)
        cur_pos, cur_line = start, line_no
        for ls, le in spans:
            cur_line += data.count(b"\n", cur_pos, ls)
            cur_pos = ls
            raw = data[ls:le]
            if not self.non_utf8 and not raw.isascii():
                self.check_utf8(raw)
            self.line(raw, cur_line)
            if self.engine is not engine and le + 1 < end:
                # enough "server is up" evidence: rescan the rest with the lean prefilter
                done = cur_line - line_no + data.count(b"\n", cur_pos, le + 1)
                return done + self.feed(data, le + 1, end, cur_line + 1)
        return cur_line - line_no + data.count(b"\n", cur_pos, end)

    def check_utf8(self, chunk: bytes) -> None:
        if not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                # a cut at the very end of the sample may split a character: not evidence
                if exc.start < len(chunk) - 4:
                    self.non_utf8 = True

    # -- one candidate line ----------------------------------------------------------------
    def line(self, raw: bytes, line_no: int) -> None:
        comp = self.comp
        hits = self.engine_which(raw)
        if not hits:
            return
        sig_first: dict[int, int] = {}
        for k in hits:
            kind, i = comp.owners[k]
            if kind == "sig":
                sig_first.setdefault(i, k)
            else:
                self.context_hit(line_no, i)
        if not sig_first:
            return
        sigs = comp.sigset.signatures
        if len(sig_first) > 1:
            # One finding per line for the catch-alls, and none when a real signature explains it.
            generic = [i for i in sig_first if sigs[i].label == "unrecognized_error"]
            specific = [i for i in sig_first if i not in generic and sigs[i].decisive]
            drop = generic if specific else sorted(generic, key=lambda i: -sigs[i].priority)[1:]
            for i in drop:
                del sig_first[i]
        text, message = self.text_of(raw, min(sig_first.values()))
        level = line_level(message)
        for i, k in sig_first.items():
            sig = comp.sigset.signatures[i]
            if level is not None and level in sig.ignore_levels:
                continue
            n = self.counts.get(sig.id, 0) + 1
            self.counts[sig.id] = n
            if sig.severity == "info":
                self.info_hits += 1
                if self.info_hits >= INFO_HITS_ENOUGH:
                    self.engine = comp.lean
            if n > MAX_FINDINGS_PER_SIGNATURE:
                continue
            s, e = comp.span(k, raw)
            f = LogFinding(
                signature=sig.id,
                label=sig.label,
                stage=sig.stage,
                severity=sig.severity,
                priority=sig.priority,
                line=line_no,
                text=text if k == min(sig_first.values()) else self.text_of(raw, k)[0],
                match=raw[s:e][:300].decode("utf-8", "replace"),
                advice=sig.advice,
                source=sig.source,
            )
            self.findings.append(f)
            if sig.refine:
                self.start_refine(f, sig)

    def engine_which(self, raw: bytes) -> list[int]:
        return self.comp.full.which(raw)

    def text_of(self, raw: bytes, k: int) -> tuple[str, str]:
        """(kept text, normalised message) for a line; long lines keep a window around the match."""
        if len(raw) > KEEP_CHARS * 4:
            s, e = self.comp.span(k, raw)
            lo = max(0, s - KEEP_CHARS // 2)
            piece = raw[lo : max(e, lo + KEEP_CHARS)][: KEEP_CHARS * 4]
            msg = normalize_line(piece.decode("utf-8", "replace"))
            head = normalize_line(raw[:200].decode("utf-8", "replace"))
            text = ("…" if lo > 0 else "") + msg[:KEEP_CHARS] + "…"
            return text, head if lo > 0 else msg
        msg = normalize_line(raw.decode("utf-8", "replace"))
        return (msg[:KEEP_CHARS] + ("…" if len(msg) > KEEP_CHARS else "")), msg

    # -- refinement by nearest context marker ----------------------------------------------
    def start_refine(self, f: LogFinding, sig: Signature) -> None:
        wanted = {r.context for r in sig.refine}
        p = _Pending(f, sig)
        for line_no, ci in reversed(self.contexts):
            dist = f.line - line_no
            if dist > sig.window_before:
                break
            cid = self.comp.sigset.contexts[ci].id
            if cid in wanted and (p.best is None or dist < p.best[0]):
                p.best = (dist, cid)
                break
        self.pending.append(p)

    def context_hit(self, line_no: int, ci: int) -> None:
        self.contexts.append((line_no, ci))
        if not self.pending:
            return
        cid = self.comp.sigset.contexts[ci].id
        keep: list[_Pending] = []
        for p in self.pending:
            dist = line_no - p.finding.line
            if dist > p.sig.window_after:
                self.apply_refine(p)
                continue
            if dist > 0 and cid in {r.context for r in p.sig.refine} and (p.best is None or dist < p.best[0]):
                p.best = (dist, cid)
            keep.append(p)
        self.pending = keep

    def apply_refine(self, p: _Pending) -> None:
        if p.best is None:
            return
        for r in p.sig.refine:
            if r.context == p.best[1]:
                p.finding.label = r.label
                p.finding.stage = r.stage
                p.finding.refined_by = r.context
                return

    def finish(self) -> None:
        for p in self.pending:
            self.apply_refine(p)
        self.pending = []


def _open_source(source: Any) -> tuple[IO[bytes], str, str | None, int | None]:
    """(binary stream, display name, compression, on-disk size); raises _Unreadable."""
    if isinstance(source, bytes | bytearray):
        raw: IO[bytes] = io.BufferedReader(io.BytesIO(bytes(source)))  # type: ignore[arg-type]
        name, size = "<text>", len(source)
    else:
        path = Path(os.fspath(source))
        name = str(path)
        try:
            if path.is_dir():
                raise _Unreadable("is a directory")
            raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
            size = os.fstat(raw.fileno()).st_size
        except _Unreadable:
            raise
        except FileNotFoundError:
            raise _Unreadable("no such file") from None
        except PermissionError:
            raise _Unreadable("permission denied") from None
        except OSError as exc:
            raise _Unreadable(f"cannot open: {exc.strerror or exc}") from None
    try:
        head = raw.peek(16)[:16]  # type: ignore[attr-defined]
    except OSError as exc:
        raw.close()
        raise _Unreadable(f"cannot read: {exc.strerror or exc}") from None
    compression = None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            compression = kind
    if compression is None and re.match(rb"BZh[1-9]1AY&SY", head):
        compression = "bzip2"
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb"), name, compression, size
    if compression == "xz":
        return lzma.LZMAFile(raw), name, compression, size  # type: ignore[return-value]
    if compression == "bzip2":
        return bz2.BZ2File(raw), name, compression, size  # type: ignore[return-value]
    if compression == "zstd":
        raw.close()
        raise _Unreadable("zstd-compressed log: decompress it first (zstd -d)")
    return raw, name, None, size


def _read_block(stream: IO[bytes], want: int, compressed: bool) -> tuple[bytes, BaseException | None]:
    """Up to ``want`` bytes, and the error that stopped reading (data before it is kept).

    Compressed streams are read piecewise (``read1``) so that a truncated or corrupt archive
    still yields everything decompressed before the damage.
    """
    if not compressed:
        try:
            return stream.read(want), None
        except OSError as exc:
            return b"", exc
    parts: list[bytes] = []
    got = 0
    while got < want:
        try:
            piece = stream.read1(want - got)  # type: ignore[attr-defined]
        except (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
            return b"".join(parts), exc
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts), None


def _is_text_source(source: Any) -> bool:
    """A str is log text (not a path) when it has a newline or is too long to be a path."""
    return isinstance(source, str) and ("\n" in source or len(source) > 4096)


def diagnose_log(
    source: str | os.PathLike[str] | bytes,
    *,
    max_bytes: int | None = None,
    engine: str = "auto",
    signatures: SignatureSet | None = None,
    threads: int | None = None,
) -> LogDiagnosis:
    """Classify one log and return its root cause with the evidence.

    ``source``: a path (str or Path; gzip/xz/bzip2 detected by magic bytes), log text (a str
    with a newline) or raw bytes. ``max_bytes`` stops after that many (decompressed) bytes and
    sets ``truncated``. ``engine``: ``auto`` (Hyperscan, else RE2, else re), ``hyperscan``, ``re2``
    or ``re``. ``threads``:
    how many threads search large blocks (RE2 only; default: up to 4, one per CPU).
    Never raises for bad input: missing/unreadable sources give status ``unreadable``.
    """
    sigset = signatures or load_signatures()
    if _is_text_source(source):
        source = str(source).encode("utf-8", "surrogateescape")
    t0 = time.perf_counter()
    comp = _compiled(sigset, engine)
    display = "<text>" if isinstance(source, bytes | bytearray) else os.fspath(source)  # type: ignore[arg-type]
    try:
        stream, display, compression, size = _open_source(source)
    except _Unreadable as exc:
        return LogDiagnosis(
            source=str(display),
            label=UNKNOWN,
            status=STATUS_UNREADABLE,
            reason=str(exc),
            engine=comp.full.name,
            signatures_version=sigset.schema_version,
        )
    if threads is None:
        threads = min(4, os.cpu_count() or 1)
    scan = _Scan(comp, max(1, threads))
    unread: list[str] = []
    bytes_read = lines = long_lines = 0
    truncated = False
    carry = b""
    line_no = 1
    in_long = False
    with stream:
        while True:
            want = CHUNK_BYTES
            if max_bytes is not None:
                if bytes_read >= max_bytes:
                    truncated = True
                    break
                want = min(want, max_bytes - bytes_read)
            data, err = _read_block(stream, want, compression is not None)
            if err is not None:
                unread.append(
                    f"{compression or 'file'} stream unreadable after {bytes_read + len(data):,} bytes: {err}"
                )
            if not data:
                break
            bytes_read += len(data)
            first = data.find(b"\n")
            if first < 0:
                carry += data
                if err is not None:
                    break
                if len(carry) >= MAX_LINE_BYTES:
                    scan.feed(carry, 0, len(carry), line_no)
                    if not in_long:
                        long_lines += 1
                        in_long = True
                    carry = b""
                continue
            if carry:
                head = carry + data[: first + 1]
                line_no += scan.feed(head, 0, len(head), line_no)
                carry = b""
            else:
                line_no += scan.feed(data, 0, first + 1, line_no)
            if in_long:
                in_long = False
            last = data.rfind(b"\n")
            if last > first:
                line_no += scan.feed(data, first + 1, last + 1, line_no)
            carry = data[last + 1 :]
            if err is not None:
                break
            if len(carry) >= MAX_LINE_BYTES:  # only possible with very large chunks
                scan.feed(carry, 0, len(carry), line_no)
                long_lines += 1
                in_long = True
                carry = b""
        if carry:
            scan.feed(carry, 0, len(carry), line_no)
            line_no += 1
    lines = line_no - 1
    scan.finish()
    if scan.non_utf8:
        unread.append("non-UTF-8 bytes were replaced (U+FFFD) in kept text")
    if scan.nul_bytes:
        unread.append("NUL bytes present: file may be binary or partly corrupt")
    if long_lines:
        unread.append(f"{long_lines} line(s) longer than {MAX_LINE_BYTES:,} bytes were cut")

    decisive = [f for f in scan.findings if f.severity in DECISIVE]
    ranked: dict[str, tuple[int, int]] = {}
    for f in decisive:
        key = (-f.priority, f.line)
        if f.label not in ranked or key < ranked[f.label]:
            ranked[f.label] = key
    labels = sorted(ranked, key=lambda lab: ranked[lab])
    status, reason = STATUS_OK, ""
    if labels:
        label = labels[0]
    elif bytes_read == 0 and unread:
        label, status, reason = UNKNOWN, STATUS_UNREADABLE, unread[0]
    elif not scan.nonblank:
        label, status = UNKNOWN, STATUS_EMPTY
        reason = "log is empty" if bytes_read == 0 else "log has only blank lines"
        if unread:
            reason += f" ({unread[0]})"
    elif scan.nul_bytes and not scan.findings:
        label, status, reason = UNKNOWN, STATUS_OK, "binary data, no log lines recognised"
    else:
        label = "healthy"
    # Findings of the decided label first (earliest first), then the rest by line.
    scan.findings.sort(key=lambda f: f.line)
    return LogDiagnosis(
        source=str(display),
        label=label,
        status=status,
        reason=reason,
        labels=labels,
        findings=scan.findings,
        counts=scan.counts,
        lines_scanned=lines,
        bytes_scanned=bytes_read,
        file_bytes=size,
        compression=compression,
        truncated=truncated,
        long_lines=long_lines,
        non_utf8=scan.non_utf8,
        unread=unread,
        engine=comp.full.name,
        elapsed_s=round(time.perf_counter() - t0, 6),
        signatures_version=sigset.schema_version,
    )


def diagnose_text(text: str | bytes, **kwargs: Any) -> LogDiagnosis:
    """Classify log text held in memory (e.g. a notebook cell's captured output)."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return diagnose_log(data, **kwargs)


def diagnose_logs(sources: Iterable[str | os.PathLike[str] | bytes], **kwargs: Any) -> LogDiagnoses:
    """Classify several logs (e.g. one per container or rank); see :func:`diagnose_log`."""
    return LogDiagnoses([diagnose_log(s, **kwargs) for s in sources])
