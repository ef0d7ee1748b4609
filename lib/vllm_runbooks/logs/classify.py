"""Streaming log classifier: any size, compressed or not, never the whole file in memory.

The file is read in large byte blocks. A single multi-pattern prefilter finds the few candidate
lines in each block; only those are decoded, stripped of prefixes and attributed to signatures.
The root cause is the highest-priority finding (priorities live in the signature data), so the
generic "engine core initialization failed" never outranks the CUDA error printed above it.
"""

from __future__ import annotations

import os
import re
import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .diagnosis import STATUS_EMPTY, STATUS_OK, STATUS_UNREADABLE, LogDiagnoses, LogDiagnosis, LogFinding
from .matcher import Engine, make_engine
from .normalize import ANSI_BYTES_RE, holds_colour_codes, line_level, normalize_line
from .reader import CHUNK_BYTES, MAX_LINE_BYTES, LogUnreadable, open_log
from .scorer import HEAD_LINES, TAIL_LINES, ScoredLine, default_model
from .signatures import INCONCLUSIVE, Signature, SignatureSet
from .verdict import apply_scores, decide, may_score

__all__ = ["CHUNK_BYTES", "MAX_LINE_BYTES", "diagnose_log", "diagnose_logs", "diagnose_text"]
#: Characters of a matching line kept in a finding (around the match for long lines).
KEEP_CHARS = 1000
MAX_FINDINGS_PER_SIGNATURE = 20
#: After this many "server is up" hits, stop looking for more (they recur every few seconds).
INFO_HITS_ENOUGH = 5
#: Context-marker hits remembered for refinement windows.
CONTEXT_MEMORY = 4096


@dataclass
class _Pending:
    finding: LogFinding
    sig: Signature
    best: tuple[int, str] | None = None  # (distance, context id)
    fallback: str | None = None  # latest phase marker seen anywhere before (no window)


@dataclass
class _Compiled:
    sigset: SignatureSet
    patterns: list[str]
    owners: list[tuple[str, int]]
    full: Engine
    lean: Engine
    span_res: dict[int, re.Pattern[bytes]] = field(default_factory=dict)

    def label_signature(self, label: str) -> Signature | None:
        """The highest-priority decisive signature of a label (codes borrow its rank and advice)."""
        best = None
        for s in self.sigset.signatures:
            if s.label == label and s.decisive and not s.codes and (best is None or s.priority > best.priority):
                best = s
        return best

    def span(self, idx: int, line: bytes) -> tuple[int, int]:
        rx = self.span_res.get(idx)
        if rx is None:
            rx = self.span_res[idx] = re.compile(self.patterns[idx].encode("utf-8"))
        m = rx.search(line)
        return (m.start(), m.end()) if m else (0, 0)


_CACHE: dict[tuple[int, str], _Compiled] = {}


def _compiled(sigset: SignatureSet | None, engine: str) -> _Compiled:
    """The compiled pattern database for a signature set (the packaged one: cached on disk)."""
    if sigset is None:
        from .dbcache import default_compiled

        return default_compiled(engine)
    key = (id(sigset), engine)
    hit = _CACHE.get(key)
    if hit is not None and hit.sigset is sigset:
        return hit
    comp = build_compiled(sigset, engine)
    _CACHE[key] = comp
    return comp


def pattern_owners(sigset: SignatureSet) -> tuple[list[str], list[tuple[str, int]], list[int]]:
    """(all patterns, owner of each, indices of the lean prefilter: no ``info`` patterns)."""
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
    for i, p in enumerate(sigset.scorer_patterns):
        patterns.append(p)
        owners.append(("score", i))
    lean_idx = [
        k for k, (kind, i) in enumerate(owners) if not (kind == "sig" and sigset.signatures[i].severity == "info")
    ]
    return patterns, owners, lean_idx


def prefilter_expressions(
    sigset: SignatureSet, owners: list[tuple[str, int]], patterns: list[str]
) -> list[tuple[int, str]]:
    """(pattern index, prefilter expression) pairs: a signature's ``prefilter`` replaces its patterns."""
    from .matcher import relax

    out: list[tuple[int, str]] = []
    done: set[int] = set()
    for k, (kind, i) in enumerate(owners):
        sig = sigset.signatures[i] if kind == "sig" else None
        if sig is not None and sig.prefilter:
            if i not in done:
                done.add(i)
                out += [(k, p) for p in sig.prefilter]
            continue
        out.append((k, relax(patterns[k])))
    return out


def build_compiled(sigset: SignatureSet, engine: str) -> _Compiled:
    """Compile the prefilters (full and lean) for a signature set; no caching."""
    patterns, owners, lean_idx = pattern_owners(sigset)
    lean = set(lean_idx)
    info = [k for k in range(len(patterns)) if k not in lean]
    pre = prefilter_expressions(sigset, owners, patterns)
    return _Compiled(
        sigset,
        patterns,
        owners,
        make_engine(engine, patterns, single=info, pre=pre),
        make_engine(engine, patterns, lean_idx, pre=[(k, e) for k, e in pre if k in lean]),
    )


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
        self.serving_hits = 0
        self.last_line = 0
        self.last_ctx: dict[str, int] = {}
        self.phase_ids = comp.sigset.phase_contexts  # the markers that refine from anywhere before
        # failure-looking lines for the learned scorer: the first few and the last few (bounded)
        self.scored_head: list[ScoredLine] = []
        self.scored_tail: deque[ScoredLine] = deque(maxlen=TAIL_LINES)
        self.scored_seen = 0

    # -- blocks ----------------------------------------------------------------------------
    def feed(self, data: bytes, start: int, end: int, line_no: int) -> int:
        """Scan complete lines in ``data[start:end]`` whose first line is ``line_no``.

        Returns the number of newlines consumed. Avoids copying the block: only a block with
        colour codes is rewritten (ANSI removed) before matching.
        """
        # the literal "^[[0;36m" form of pasted logs too: patterns must see "| 200 |" (blind batch 24)
        if holds_colour_codes(data, start, end):
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
        score_k: int | None = None
        for k in hits:
            kind, i = comp.owners[k]
            if kind == "sig":
                sig_first.setdefault(i, k)
            elif kind == "ctx":
                self.context_hit(line_no, i)
            elif score_k is None:
                score_k = k
        sigs = comp.sigset.signatures
        failing = [k for i, k in sig_first.items() if sigs[i].severity != "info"]
        if score_k is not None or failing:
            self.keep_scored(raw, line_no, score_k if score_k is not None else failing[0])
        if not sig_first:
            return
        resolved: dict[int, Any] = {}
        for i in [i for i in sig_first if sigs[i].codes]:
            from .codes import resolve

            code = resolve(raw[:4000].decode("utf-8", "replace"))
            if code is None or code.label is None:
                del sig_first[i]
            else:
                resolved[i] = code
        if not sig_first:
            return
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
            if sig.proves == "serving":
                self.serving_hits += 1
                if self.serving_hits >= INFO_HITS_ENOUGH:
                    self.engine = comp.lean
            # An info signature (startup progress, "server is up") proves something once: its
            # first line is the evidence. Hyperscan reports such patterns once per block, so
            # keeping only the first makes every engine give the same findings.
            if n > (1 if sig.severity == "info" else MAX_FINDINGS_PER_SIGNATURE):
                continue
            s, e = comp.span(k, raw)
            label, priority, advice, source, stage = sig.label, sig.priority, sig.advice, sig.source, sig.stage
            code = resolved.get(i)
            if code is not None:
                base = comp.label_signature(code.label)
                label, source = code.label, code.source
                priority = (base.priority - 1) if base is not None else sig.priority
                advice = f"{code.name} ({code.table} code {code.value}). " + (base.advice if base else sig.advice)
                stage = base.stage if base is not None else sig.stage
                sig = base if (base is not None and base.refine) else sig
            f = LogFinding(
                signature=comp.sigset.signatures[i].id,
                label=label,
                stage=stage,
                severity=comp.sigset.signatures[i].severity,
                priority=priority,
                line=line_no,
                text=text if k == min(sig_first.values()) else self.text_of(raw, k)[0],
                match=raw[s:e][:300].decode("utf-8", "replace"),
                advice=advice,
                source=source,
                proves=sig.proves,
            )
            self.findings.append(f)
            if sig.refine:
                self.start_refine(f, sig)

    def keep_scored(self, raw: bytes, line_no: int, k: int) -> None:
        """Remember a failure-looking line for the scorer (first HEAD_LINES, then a rolling tail)."""
        self.scored_seen += 1
        phase = max(self.last_ctx.items(), key=lambda kv: kv[1])[0] if self.last_ctx else None
        item = ScoredLine(line_no, self.text_of(raw, k)[0], phase)
        if len(self.scored_head) < HEAD_LINES:
            self.scored_head.append(item)
        else:
            self.scored_tail.append(item)

    def scored_lines(self) -> list[ScoredLine]:
        """The failure-looking lines kept for the scorer, in line order."""
        return self.scored_head + list(self.scored_tail)

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
        seen = [(ln, cid) for cid, ln in self.last_ctx.items() if cid in wanted & self.phase_ids and ln <= f.line]
        if seen:
            p.fallback = max(seen)[1]
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
        self.last_ctx[self.comp.sigset.contexts[ci].id] = line_no
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
        """Relabel by the nearest phase marker in the window, else by the last phase entered."""
        cid = p.best[1] if p.best is not None else p.fallback
        if cid is None:
            return
        for r in p.sig.refine:
            if r.context == cid:
                p.finding.label = r.label
                p.finding.stage = r.stage
                p.finding.advice = r.advice or p.finding.advice
                p.finding.refined_by = cid if p.best is not None else f"{cid} (last phase before)"
                return

    def finish(self) -> None:
        for p in self.pending:
            self.apply_refine(p)
        self.pending = []


def diagnose_log(
    source: Any,
    *,
    max_bytes: int | None = None,
    engine: str = "auto",
    signatures: SignatureSet | None = None,
    threads: int | None = None,
    scorer: Any = None,
) -> LogDiagnosis:
    """Classify one log and return its root cause with the evidence and a confidence.

    ``source``: a path (str or Path; gzip/xz/bzip2/zstd detected by magic bytes), log text (a str
    with a newline), raw bytes, or a binary stream (``sys.stdin.buffer``). ``max_bytes`` stops
    after that many (decompressed) bytes and sets ``truncated``; streams, devices and compressed
    files are capped by default (:data:`reader.DEFAULT_STREAM_MAX_BYTES`). ``engine``: ``auto``
    (Hyperscan, else RE2, else re), ``hyperscan``, ``re2`` or ``re``. ``threads``: how many
    threads search large blocks (RE2 only; default: up to 4, one per CPU).
    A log is ``healthy`` only with proof that the server answered and nothing failure-looking;
    with neither proof nor failure it is ``inconclusive``. When no signature decides, the learned
    scorer (``logs/scorer.py``) may name a ``likely`` cause from the failure-looking lines
    (``scorer=False`` turns it off; ``scorer=<Model>`` uses another model). Never raises for bad input.
    """
    t0 = time.perf_counter()
    d, lines = signature_diagnosis(source, max_bytes=max_bytes, engine=engine, signatures=signatures, threads=threads)
    # the weights are loaded only for a verdict the scorer may change: a log a signature or proof
    # decided does not pay for reading them
    if scorer is not False and may_score(d, lines):
        model = default_model() if scorer is None or scorer is True else scorer
        d = apply_scores(d, lines, model, sigset=_compiled(signatures, engine).sigset)
    d.elapsed_s = round(time.perf_counter() - t0, 6)
    return d


def signature_diagnosis(
    source: Any,
    *,
    max_bytes: int | None = None,
    engine: str = "auto",
    signatures: SignatureSet | None = None,
    threads: int | None = None,
) -> tuple[LogDiagnosis, list[ScoredLine]]:
    """The signatures' verdict alone, and the failure-looking lines the scorer would read.

    Kept apart so that training (``scripts/train_log_scorer.py``) reads exactly the lines and
    phases prediction reads. See :func:`diagnose_log` for the arguments.
    """
    comp = _compiled(signatures, engine)
    sigset = comp.sigset
    display = "<text>" if isinstance(source, bytes | bytearray | str) and not _is_path_like(source) else None
    try:
        reader = open_log(source, max_bytes=max_bytes, max_line_bytes=MAX_LINE_BYTES)
    except LogUnreadable as exc:
        name = display or str(getattr(source, "name", None) or os.fspath(source))
        return decide(
            LogDiagnosis(
                source=name,
                label=INCONCLUSIVE,
                status=STATUS_UNREADABLE,
                reason=str(exc),
                engine=comp.full.name,
                signatures_version=sigset.schema_version,
            )
        ), []
    if threads is None:
        threads = min(4, os.cpu_count() or 1)
    scan = _Scan(comp, max(1, threads))
    with reader:
        line_no = 1
        for buf, start, end, _first, _continues in reader.blocks(CHUNK_BYTES, count_lines=False):
            n = scan.feed(buf, start, end, line_no)
            scan.last_line = line_no + n - (1 if buf[end - 1 : end] == b"\n" else 0)
            line_no += n
    st = reader.stats
    lines = scan.last_line
    scan.finish()
    unread = list(st.unread)
    if scan.non_utf8:
        unread.append("non-UTF-8 bytes were replaced (U+FFFD) in kept text")
    if scan.nul_bytes and not st.binary_stop:
        unread.append("NUL bytes present: file may be binary or partly corrupt")
    if st.long_lines:
        unread.append(f"{st.long_lines} line(s) longer than {MAX_LINE_BYTES:,} bytes were cut")
    status, reason = STATUS_OK, ""
    if (st.bytes_read == 0 and unread) or (st.binary_stop and not scan.findings):
        status, reason = STATUS_UNREADABLE, unread[0]
    elif not scan.nonblank:
        status = STATUS_EMPTY
        reason = "log is empty" if st.bytes_read == 0 else "log has only blank lines"
        if unread:
            reason += f" ({unread[0]})"
    elif (scan.nul_bytes or st.binary_stop) and not scan.findings:
        reason = "binary data, no log lines recognised"
    scan.findings.sort(key=lambda f: f.line)
    d = LogDiagnosis(
        source=display or st.name,
        label=INCONCLUSIVE,
        status=status,
        reason=reason,
        findings=scan.findings,
        counts=scan.counts,
        lines_scanned=lines,
        bytes_scanned=st.bytes_read,
        file_bytes=st.file_bytes,
        compression=st.compression,
        truncated=st.truncated,
        long_lines=st.long_lines,
        non_utf8=scan.non_utf8,
        unread=unread,
        engine=comp.full.name,
        signatures_version=sigset.schema_version,
    )
    return decide(d), scan.scored_lines()


def _is_path_like(source: Any) -> bool:
    return isinstance(source, str) and "\n" not in source and len(source) <= 4096


def diagnose_text(text: str | bytes, **kwargs: Any) -> LogDiagnosis:
    """Classify log text held in memory (e.g. a notebook cell's captured output)."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return diagnose_log(data, **kwargs)


def diagnose_logs(sources: Iterable[str | os.PathLike[str] | bytes], **kwargs: Any) -> LogDiagnoses:
    """Classify several logs (e.g. one per container or rank); see :func:`diagnose_log`."""
    return LogDiagnoses([diagnose_log(s, **kwargs) for s in sources])
