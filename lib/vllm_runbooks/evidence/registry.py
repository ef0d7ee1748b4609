"""The evidence collector registry: what collectors share, and how each is run, bounded.

A collector is ``fn(ctx) -> Item`` in a module of ``evidence/collectors/`` (found by
:func:`discover`, the way canary finds its steps). It reads raw artefacts through
``ctx.read(name)`` (the same call for a local machine and for a bundle), stores them with
``ctx.keep`` (logs with ``ctx.keep_log``), and returns a value or ``Item.unavailable(reason)``.
``run_collectors`` runs them through the one step runner (``vllm_runbooks.steps``): each bounded
by a timeout, any exception turned into ``unavailable``, so one broken tool never stops the
capture; a collector abandoned at its timeout may run on, but its writes are refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import probe, redact, steps
from ..artefacts import write_atomic
from ..probe import Captured, Options
from ..registry import Registry
from .model import OK, Item
from .sources import Source


class WriteRefused(RuntimeError):
    """A collector that was abandoned after its timeout tried to write under ``raw/``."""


class _Gate:
    """Whether the collector running in this thread may still write; closed when it is abandoned.

    ``run_bounded`` opens one per run and closes it on timeout; a gate opened inside another
    collector's thread (a nested ``run_bounded``) is closed with its parent too. Writes take the
    gate's lock, so once ``close`` returns no write from that collector is in flight or to come.
    """

    def __init__(self, what: str, parent: _Gate | None) -> None:
        self.what = what
        self.parent = parent
        # one lock per outermost collector, so closing it also waits for a nested run's write
        self.lock = parent.lock if parent else threading.RLock()
        self.closed = False
        self.refused = 0

    def is_closed(self) -> bool:
        gate: _Gate | None = self
        while gate is not None:
            if gate.closed:
                return True
            gate = gate.parent
        return False

    def close(self) -> None:
        with self.lock:
            self.closed = True


_THREAD = threading.local()


def _current_gate() -> _Gate | None:
    return getattr(_THREAD, "gate", None)


@dataclass
class Context:
    """What collectors share: the source, the parameters, the raw-artefact directory."""

    source: Source
    opts: Options
    out_dir: Path  # <run_dir>/evidence
    collector_timeout_s: float = 60.0
    launch_command: str | None = None  # redacted
    endpoint: str | None = None  # redacted
    #: GPUs this node must show (runbook 01 ``expected_gpu_count``); None: TP × PP × DP of the launch
    expected_gpu_count: int | None = None
    results: dict[str, Item] = field(default_factory=dict)
    _cache: dict[str, Captured] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: sha256 of what ``keep`` wrote, by path relative to ``out_dir``: the manifest then need not
    #: read every artefact back (``hashes_written``)
    _written: dict[str, str] = field(default_factory=dict)
    _dirs: set[Path] = field(default_factory=set)

    def read(self, name: str) -> Captured:
        """Raw artefact by bundle name, cached; stored under raw/ when it has content."""
        with self._lock:
            if name in self._cache:
                return self._cache[name]
        got = self.source.read(name)
        if got.data:
            self.keep(name, got.data)
        with self._lock:
            self._cache[name] = got
        return got

    def text(self, name: str) -> str | None:
        """A raw artefact as text (undecodable bytes replaced), or None."""
        got = self.read(name)
        return got.data.decode("utf-8", "replace") if got.data is not None else None

    def keep(self, name: str, data: bytes) -> str:
        """Write an (already redacted) artefact under raw/ and return its relative path.

        Raises ``WriteRefused`` in a collector that was abandoned after its timeout: the
        capture has moved on (and may have hashed raw/ already), so nothing may land there.
        """
        rel = f"raw/{name}"
        dest = self.out_dir / rel
        digest = hashlib.sha256(data).hexdigest()
        with _write_permit(rel):
            if dest.parent not in self._dirs:
                dest.parent.mkdir(parents=True, exist_ok=True)
                self._dirs.add(dest.parent)
            with self._lock:
                self._written.pop(rel, None)  # never a stale hash while the file changes
            write_atomic(dest, data)  # a killed run leaves no half artefact
            with self._lock:
                self._written[rel] = digest
        return rel

    def hashes_written(self) -> dict[str, str]:
        """sha256 of each artefact ``keep`` wrote (relative path → hex), as last written."""
        with self._lock:
            return dict(self._written)

    def keep_log(self, rel: str, stream: IO[bytes], max_seconds: float | None = None) -> dict[str, Any]:
        """Copy a log through redaction (``probe.store_log``) to ``rel`` under the evidence dir.

        The copy is made in an unnamed file (``O_TMPFILE``) and given its name only while the
        collector may still write, so neither an abandoned collector nor a killed run (SIGTERM,
        SIGKILL) leaves a partial log or a temporary file anywhere. ``max_seconds`` bounds this log.
        """
        dest = self.out_dir / rel
        with _write_permit(rel):
            dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(dest.parent, os.O_TMPFILE | os.O_RDWR, 0o644)
        except (AttributeError, OSError):
            fd = None  # no O_TMPFILE here: a named temporary file beside the destination
        if fd is not None:
            with os.fdopen(fd, "w+b") as handle:
                summary = probe.store_log(stream, handle, max_seconds=max_seconds)
                handle.flush()
                with _write_permit(rel):
                    _link_unnamed(handle, dest)
            return summary
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            summary = probe.store_log(stream, tmp, max_seconds=max_seconds)
            with _write_permit(rel):
                tmp.replace(dest)
            return summary
        finally:
            tmp.unlink(missing_ok=True)

    def artefact(self, name: str) -> list[str]:
        """The raw/ path of an artefact read in this capture, for an item's ``artefacts``."""
        got = self._cache.get(name)
        return [f"raw/{name}"] if got is not None and got.data else []


def _link_unnamed(handle: IO[bytes], dest: Path) -> None:
    """Give an ``O_TMPFILE`` file its name; where linking it is not allowed, copy it instead."""
    root = os.open("/", os.O_RDONLY)
    try:  # linkat(AT_SYMLINK_FOLLOW) on the /proc magic link; os.link uses it only with a dir fd
        os.link(f"/proc/self/fd/{handle.fileno()}", dest, src_dir_fd=root, follow_symlinks=True)
        return
    except OSError:
        pass
    finally:
        os.close(root)
    handle.seek(0)
    with open(dest, "xb") as out:
        shutil.copyfileobj(handle, out)


@contextlib.contextmanager
def _write_permit(rel: str) -> Iterator[None]:
    """Hold the current collector's gate open for one write, or refuse the write."""
    gate = _current_gate()
    if gate is None:  # not inside a collector (the writer itself): always allowed
        yield
        return
    with gate.lock:
        if gate.is_closed():
            gate.refused += 1
            raise WriteRefused(f"{gate.what} timed out earlier; write to {rel} refused")
        yield


CollectorFn = Callable[[Context], Item]


@dataclass
class Collector:
    """One registered collector: its name (the evidence item), title, function and predicate."""

    name: str
    title: str
    fn: CollectorFn
    applies: Callable[[Context], bool] = lambda ctx: True
    order: float = 100.0


def captured_here_or_in_bundle(*files: str) -> Callable[[Context], bool]:
    """A collector's ``applies``: always locally (the probe captures the file), and from a bundle
    only when the bundle holds one of ``files`` (an older bundle has nothing for it to read)."""

    def applies(ctx: Context) -> bool:
        names = getattr(ctx.source, "names", None)
        return ctx.source.kind == "local" or names is None or any(n in names() for n in files)

    return applies


#: Every collector, found in ``evidence/collectors/``; a name is taken once (``registry.DuplicateName``).
COLLECTORS: Registry[Collector] = Registry("evidence collector", "vllm_runbooks.evidence.collectors")


def register(
    name: str, title: str, applies: Callable[[Context], bool] | None = None, *, order: float = 100.0
) -> Callable[[CollectorFn], CollectorFn]:
    """Add a collector. ``order`` is the order of collection and display: a collector may read
    the results of those before it (``ctx.results``), e.g. ``launch`` reads ``container``."""

    def deco(fn: CollectorFn) -> CollectorFn:
        COLLECTORS.add(Collector(name, title, fn, applies or (lambda ctx: True), order))
        return fn

    return deco


def discover() -> dict[str, Collector]:
    """Every collector by name (the modules of ``evidence/collectors/`` imported once)."""
    return COLLECTORS.discover()


def registered_collectors() -> list[Collector]:
    """Every collector, in collection order."""
    return COLLECTORS.ordered()


def _gated(fn: Callable[[], Item], what: str) -> steps.Job[Item]:
    """``fn`` as a job under a fresh gate (nested in the caller's), the gate closed if abandoned."""
    gate = _Gate(what, _current_gate())

    def work() -> Item:
        _THREAD.gate = gate
        return fn()

    return steps.Job(work, cancel=gate.close)


def _finding(what: str, why: steps.Problem) -> Item:
    """A collector that raised or ran past its timeout, as an unavailable item saying so."""
    match why:
        case steps.Raised(e):
            return Item.unavailable(f"{what} failed: {type(e).__name__}: {redact.redact_text(str(e))}")
        case steps.TimedOut(seconds):
            return Item.unavailable(
                f"{what} timed out after {seconds:g}s; abandoned, and its later writes to raw/ are refused"
            )
        case steps.Skipped(reason):
            return Item.unavailable(reason)


def _as_item(item: Any, what: str, seconds: float) -> Item:
    """What a collector returned, as a timed Item (nothing, or another type, is unavailable)."""
    if not item:
        item = Item.unavailable(f"{what} returned nothing")
    elif not isinstance(item, Item):
        item = Item.unavailable(f"{what} returned {type(item).__name__}, not an Item")
    item.duration_s = round(seconds, 3)
    return item


def run_bounded(fn: Callable[[], Item], timeout_s: float, what: str) -> Item:
    """Run ``fn`` in a daemon thread; past ``timeout_s`` it is abandoned and recorded unavailable.

    An abandoned run cannot be stopped, but it can no longer write: its gate is closed, and
    ``Context.keep`` / ``Context.keep_log`` refuse (``WriteRefused``) from then on.
    """
    t0 = time.perf_counter()
    item, _ = steps.bounded(
        _gated(fn, what), timeout_s, lambda why: _finding(what, why), thread_name=f"collector-{what}"
    )
    return _as_item(item, what, time.perf_counter() - t0)


def _applies(col: Collector, ctx: Context) -> bool:
    try:
        return col.applies(ctx)
    except Exception:  # a broken predicate just means "run it"
        return True


def run_collectors(ctx: Context, only: list[str] | None = None) -> dict[str, Item]:
    """Run every registered collector (or those in ``only``) in order, each bounded; never raises.

    Through the one step runner (``vllm_runbooks.steps``). A collector that does not apply here
    is left out; whether it applies is asked just before it would run, after those before it.
    """

    def finish(col: Collector, item: Item, took: steps.Took) -> Item:
        ctx.results[col.name] = item = _as_item(item, col.name, took.seconds)
        _report_progress(col.name, item)
        return item

    steps.run_steps(
        (c for c in registered_collectors() if _applies(c, ctx)),
        start=lambda col: _gated(lambda: col.fn(ctx), col.name),
        finding=lambda col, why: _finding(col.name, why),
        finish=finish,
        timeout_s=ctx.collector_timeout_s,
        only=only,
        thread_prefix="collector",
    )
    return ctx.results


def _report_progress(name: str, item: Item) -> None:
    """One line per collector: the CLI streams the kernel's output, so on-call sees it live."""
    duration = getattr(item, "duration_s", None)
    took = f" ({duration:.1f} s)" if isinstance(duration, int | float) else ""
    reason = f" — {item.reason}" if item.reason and item.status != OK else ""
    print(f"[evidence] {name}: {item.status}{took}{reason}"[:300], flush=True)


def grouped_reasons(parts: dict[str, Captured]) -> list[str]:
    """One line per distinct reason: 'a, b: nvidia-smi not found on PATH'."""
    by_reason: dict[str, list[str]] = {}
    for k, v in parts.items():
        if v.status != OK and v.reason:
            by_reason.setdefault(v.reason, []).append(k)
    return [f"{', '.join(ks)}: {r}" for r, ks in by_reason.items()]


def combine_reasons(parts: dict[str, Captured]) -> str:
    """The grouped reasons of several raw reads as one line (an item's ``reason``)."""
    return "; ".join(grouped_reasons(parts))
