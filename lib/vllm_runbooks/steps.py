"""The one bounded step runner: evidence collectors, canary steps and load stages all run through it.

Why one runner: each of the three had its own loop for the same job — keep the parts asked for
(``only``), skip a part that cannot run now, run it bounded in time, turn its exception into a
finding, time it — each with its own thread, ``except`` and clock. Here that job is done once;
what differs stays with the package as callables: how a part is prepared (``start``), how a
:data:`Problem` reads in the package's outcome type (``finding``), and what is recorded and
reported of each part (``finish``).

A part never raises to the runner and never holds it past its timeout: its work runs in a daemon
thread that is abandoned at ``timeout_s``, and its :class:`Job`'s ``cancel`` is called (a canary
step's requests are stopped, an evidence collector's writes refused). ``timeout_s=None`` runs the
work in the caller's thread, for parts that bound themselves (a load stage is held by the run's
request and seconds budget, and an abandoned one could not be stopped from sending).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .records import utc_now

S = TypeVar("S")  # a part: a collector, a step, a stage (anything with a ``name``)
Out = TypeVar("Out")  # the package's outcome of one part (Item, Outcome, StageOutcome)
R = TypeVar("R")  # what the run returns for a part (the outcome, or a result built from it)


@dataclass(frozen=True)
class Skipped:
    """The part was not run: ``skip`` gave this reason (no endpoint, the budget is spent)."""

    reason: str


@dataclass(frozen=True)
class Raised:
    """The part raised ``error`` (handed over to the caller's thread)."""

    error: BaseException


@dataclass(frozen=True)
class TimedOut:
    """The part was still running at ``timeout_s``: abandoned, and its job cancelled."""

    timeout_s: float


#: Why a part has no outcome of its own; ``finding`` turns it into one.
Problem = Skipped | Raised | TimedOut


@dataclass(frozen=True)
class Job(Generic[Out]):
    """A part made ready in the caller's thread: the work to run bounded, and how to stop it.

    ``cancel`` is called, in the caller's thread, when the work is abandoned at its timeout; the
    work itself cannot be killed, so ``cancel`` is how it is made harmless (stop its requests,
    refuse its writes).
    """

    work: Callable[[], Out]
    cancel: Callable[[], None] | None = None


@dataclass(frozen=True)
class Took:
    """When a part started (UTC, and ``time.perf_counter``), when its run ended, and its problem."""

    started_at: str
    start: float  # before ``skip``
    end: float  # after its work returned, raised or was abandoned (before ``finish``)
    problem: Problem | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def ran(self) -> bool:
        """False for a skipped part: ``start`` was never called for it."""
        return not isinstance(self.problem, Skipped)

    @property
    def timed_out(self) -> bool:
        return isinstance(self.problem, TimedOut)


def bounded(
    job: Job[Out], timeout_s: float | None, finding: Callable[[Problem], Out], *, thread_name: str = "step"
) -> tuple[Out, Problem | None]:
    """Run one job bounded by ``timeout_s``: (its outcome, its problem or None). Never raises for the job.

    In a daemon thread named ``thread_name``, joined for ``timeout_s``: still running then, the job
    is cancelled and abandoned (whatever it returns later is dropped) and ``finding(TimedOut)`` is
    the outcome. Anything the work raises becomes ``finding(Raised(exc))``, in the caller's
    thread. With ``timeout_s=None`` the work runs in the caller's thread, and only an ``Exception``
    becomes a finding (``KeyboardInterrupt`` still stops the run).
    """
    if timeout_s is None:
        try:
            return job.work(), None
        except Exception as exc:  # a bug in a part is evidence, not a crashed runbook
            raised = Raised(exc)
            return finding(raised), raised
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["out"] = job.work()
        except BaseException as exc:  # handed to the caller's thread: nothing escapes a worker
            box["error"] = exc

    worker = threading.Thread(target=work, name=thread_name, daemon=True)
    worker.start()
    worker.join(timeout_s)
    problem: Problem
    if worker.is_alive():
        if job.cancel is not None:
            job.cancel()
        problem = TimedOut(timeout_s)
    elif "error" in box:
        problem = Raised(box["error"])
    else:
        return box.get("out"), None  # type: ignore[return-value]
    return finding(problem), problem


def run_steps(
    parts: Iterable[S],
    *,
    start: Callable[[S], Job[Out]],
    finding: Callable[[S, Problem], Out],
    finish: Callable[[S, Out, Took], R],
    timeout_s: float | None,
    only: Collection[str] | None = None,
    skip: Callable[[S], str | None] | None = None,
    thread_prefix: str = "step",
) -> list[R]:
    """Run ``parts`` in order, each bounded; what ``finish`` made of each, in order. Never raises for a part.

    For each part (``part.name`` not in ``only``: passed over): ``skip(part)`` may give a reason
    not to run it, which ``finding(part, Skipped(reason))`` turns into its outcome. Otherwise
    ``start(part)`` makes its :class:`Job` in the caller's thread and :func:`bounded` runs it in a
    thread named ``<thread_prefix>-<name>``; an exception (from ``start`` or the work) becomes
    ``finding(part, Raised(exc))``, a timeout ``finding(part, TimedOut(timeout_s))``. Then
    ``finish(part, outcome, took)`` records it and reports progress, before the next part starts.
    ``parts`` is read lazily, so which part comes next may depend on what the earlier ones found.
    """
    results: list[R] = []
    for part in parts:
        name: str = part.name  # type: ignore[attr-defined]
        if only is not None and name not in only:
            continue
        started_at, t0 = utc_now(), time.perf_counter()
        reason = skip(part) if skip is not None else None
        problem: Problem | None
        if reason is not None:
            problem = Skipped(reason)
            out = finding(part, problem)
        else:
            try:
                job = start(part)
            except Exception as exc:  # preparing the part failed: a finding like any other
                problem = Raised(exc)
                out = finding(part, problem)
            else:
                out, problem = bounded(
                    job,
                    timeout_s,
                    lambda why, part=part: finding(part, why),  # type: ignore[misc]
                    thread_name=f"{thread_prefix}-{name}",
                )
        results.append(finish(part, out, Took(started_at, t0, time.perf_counter(), problem)))
    return results


__all__ = ["Job", "Problem", "Raised", "Skipped", "TimedOut", "Took", "bounded", "run_steps"]
