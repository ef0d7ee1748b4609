"""The one bounded step runner (issue 22 item 1): a part that raises or hangs becomes a finding, the
parts after it still run, in order, and the call returns within its bound."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from vllm_runbooks import steps
from vllm_runbooks.steps import Job, Problem, Raised, Skipped, TimedOut, Took, bounded, run_steps


@dataclass
class Part:
    name: str
    fn: Callable[[], str]
    needs_endpoint: bool = False


def _words(why: Problem) -> str:
    match why:
        case Skipped(reason):
            return f"skipped: {reason}"
        case Raised(error):
            return f"raised {type(error).__name__}: {error}"
        case TimedOut(seconds):
            return f"timed out after {seconds:g}s"


def _run(parts, timeout_s: float | None = 5.0, cancelled: list[str] | None = None, **kw):  # type: ignore[no-untyped-def]
    """run_steps with string outcomes; (what it returned, each finish's (name, took))."""
    seen: list[tuple[str, Took]] = []

    def start(part: Part) -> Job[str]:
        cancel = (lambda: cancelled.append(part.name)) if cancelled is not None else None
        return Job(part.fn, cancel=cancel)

    def finish(part: Part, out: str, took: Took) -> str:
        seen.append((part.name, took))
        return f"{part.name}={out}"

    results = run_steps(
        parts,
        start=start,
        finding=lambda part, why: _words(why),
        finish=finish,
        timeout_s=timeout_s,
        **kw,
    )
    return results, seen


def _boom() -> str:
    raise RuntimeError("boom")


def _never() -> str:
    raise AssertionError("this part must not run")


@pytest.mark.parametrize("timeout_s", [5.0, None], ids=["threaded", "inline"])
def test_a_part_that_raises_becomes_a_finding_and_the_later_parts_still_run(timeout_s: float | None) -> None:
    parts = [Part("a", lambda: "ok"), Part("b", _boom), Part("c", lambda: "fine")]
    results, seen = _run(parts, timeout_s)
    assert results == ["a=ok", "b=raised RuntimeError: boom", "c=fine"]
    assert [(took.ran, took.timed_out) for _, took in seen] == [(True, False)] * 3
    assert isinstance(seen[1][1].problem, Raised) and seen[0][1].problem is None


def test_a_hung_part_is_abandoned_at_its_timeout_cancelled_and_the_call_returns() -> None:
    release, entered, finished = threading.Event(), threading.Event(), threading.Event()

    def hang() -> str:
        entered.set()
        release.wait(60)  # released by this test once the run has returned, never by a timer
        finished.set()
        return "late"

    cancelled: list[str] = []
    t0 = time.monotonic()
    try:
        results, seen = _run([Part("hang", hang), Part("next", lambda: "ran")], 0.2, cancelled)
        elapsed = time.monotonic() - t0
        assert results == ["hang=timed out after 0.2s", "next=ran"]
        assert elapsed < 10, "the run waited for the hung part instead of abandoning it"
        took = seen[0][1]
        assert took.timed_out and took.ran and took.problem == TimedOut(0.2) and 0.2 <= took.seconds < 10
        assert cancelled == ["hang"]  # its job was told to stop; the part that finished was not
        assert entered.is_set() and not finished.is_set()  # abandoned while still running
        hung = [t for t in threading.enumerate() if t.name == "step-hang"]
        assert hung and all(t.daemon for t in hung)
    finally:
        release.set()
    for t in [t for t in threading.enumerate() if t.name == "step-hang"]:
        t.join(30)
    assert finished.is_set() and results[0] == "hang=timed out after 0.2s"  # its late value is dropped


def test_only_filters_order_is_kept_and_a_part_needing_an_endpoint_is_skipped_with_its_reason() -> None:
    endpoint = None
    parts = [
        Part("first", lambda: "1"),
        Part("needs", _never, needs_endpoint=True),
        Part("not_asked", _never),
        Part("middle", lambda: "2"),
        Part("last", lambda: "3"),
    ]
    results, seen = _run(
        parts,
        only={"last", "needs", "middle", "first"},  # the order asked for is not the run's order
        skip=lambda part: "no endpoint given" if part.needs_endpoint and not endpoint else None,
    )
    assert results == ["first=1", "needs=skipped: no endpoint given", "middle=2", "last=3"]
    assert [(name, took.ran) for name, took in seen] == [
        ("first", True),
        ("needs", False),
        ("middle", True),
        ("last", True),
    ]
    assert seen[1][1].problem == Skipped("no endpoint given")
    assert _run(parts, only=set())[0] == []


def test_a_skipped_part_is_never_started() -> None:
    started: list[str] = []

    def start(part: Part) -> Job[str]:
        started.append(part.name)
        return Job(part.fn)

    results = run_steps(
        [Part("a", lambda: "1"), Part("b", _never), Part("c", lambda: "3")],
        start=start,
        finding=lambda part, why: _words(why),
        finish=lambda part, out, took: out,
        timeout_s=5,
        skip=lambda part: "not here" if part.name == "b" else None,
    )
    assert results == ["1", "skipped: not here", "3"] and started == ["a", "c"]


def test_a_part_whose_preparation_fails_is_a_finding_and_the_run_goes_on() -> None:
    def start(part: Part) -> Job[str]:
        if part.name == "bad":
            raise ValueError("no client for this endpoint")
        return Job(part.fn)

    results = run_steps(
        [Part("bad", _never), Part("good", lambda: "ok")],
        start=start,
        finding=lambda part, why: _words(why),
        finish=lambda part, out, took: f"{part.name}={out}",
        timeout_s=5,
    )
    assert results == ["bad=raised ValueError: no client for this endpoint", "good=ok"]


def test_parts_are_read_lazily_so_a_part_sees_what_ran_before_it() -> None:
    ran: list[str] = []

    def parts():  # type: ignore[no-untyped-def]
        for name in ("a", "b", "c"):
            before = len(ran)  # read when the runner asks for the next part, not up front
            yield Part(name, lambda name=name, before=before: ran.append(name) or f"{before} before")

    assert _run(parts())[0] == ["a=0 before", "b=1 before", "c=2 before"]


def test_nothing_escapes_a_worker_and_inline_keeps_keyboard_interrupt() -> None:
    where: list[str] = []

    def finding(why: Problem) -> str:
        where.append(threading.current_thread().name)
        return _words(why)

    def exits() -> str:
        raise SystemExit(3)

    out, why = bounded(Job(exits), 5, finding, thread_name="exits")
    assert out == "raised SystemExit: 3" and isinstance(why, Raised)
    assert where == [threading.current_thread().name]  # the finding is made in the caller's thread

    def interrupted() -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bounded(Job(interrupted), None, finding)
    assert bounded(Job(lambda: "x"), None, finding) == ("x", None)


def test_the_three_packages_run_through_the_one_runner(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import inspect

    from vllm_runbooks.canary import registry as canary_registry
    from vllm_runbooks.canary import run_canary
    from vllm_runbooks.evidence import registry as evidence_registry
    from vllm_runbooks.load import stage as load_stage
    from vllm_runbooks.probe import Options

    calls: list[str] = []
    real = steps.run_steps

    def spy(parts, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw.get("thread_prefix", "step"))
        return real(parts, **kw)

    monkeypatch.setattr(steps, "run_steps", spy)
    run_canary(steps=["multi_gpu"])
    ctx = evidence_registry.Context(source=None, opts=Options(), out_dir=tmp_path)  # type: ignore[arg-type]
    evidence_registry.run_collectors(ctx, only=[])
    load_stage.run(endpoint="http://127.0.0.1:9", stages=["health"], quiet=True, request_timeout_s=2)
    assert calls == ["canary", "collector", "step"]
    for module in (canary_registry, evidence_registry, load_stage):  # no loop or thread of their own
        source = inspect.getsource(module)
        assert "threading.Thread(" not in source and ".is_alive()" not in source, module.__name__
        assert "except Exception as exc:  # a bug in a" not in source, module.__name__
