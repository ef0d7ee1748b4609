"""The canary step registry, and how its steps run through the one bounded step runner.

Why a registry: the procedure grows (a new modality, a new backend check), and adding a step
must not touch the runner, the report or the notebook. A step is a function registered with
``@register(name, title, order)`` in any module under ``canary/steps/`` (discovered
automatically) or in user code before ``run_canary`` is called; a name is taken once.

A step never raises to the runner and never runs unbounded: each runs (``vllm_runbooks.steps``)
in a worker thread that is abandoned after ``step_timeout_s`` (its own requests are bounded by ``request_timeout_s`` and
by what is left of the step's budget). Each step gets its own client; an abandoned step is
*cancelled*, not just left behind: its ``cancel`` event is set, its client is aborted (the
request in flight dies, every later call returns ``cancelled`` without being sent), so an
abandoned step adds no load and no timings overlap with the steps after it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from .. import steps
from ..client import EndpointClient, Failure, FailureKind
from ..records import utc_now
from ..registry import Registry
from .model import CanaryConfig, CanaryReport, Status, StepResult, excerpt


@dataclass
class Outcome:
    """What a step function returns; the runner adds name, title, timings and duration."""

    status: Status
    reason: str
    evidence: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def passed(reason: str, evidence: Any = "", **details: Any) -> Outcome:
    """A passing outcome with a bounded excerpt of the server's answer."""
    return Outcome(Status.PASS, reason, excerpt(evidence) if evidence else "", details)


def failed(reason: str, evidence: Any = "", **details: Any) -> Outcome:
    """A failing outcome with a bounded excerpt of what went wrong."""
    return Outcome(Status.FAIL, reason, excerpt(evidence) if evidence else "", details)


def skipped(reason: str, evidence: Any = "", **details: Any) -> Outcome:
    """A skip: the step does not apply here (never counted as a pass)."""
    return Outcome(Status.SKIP, reason, excerpt(evidence) if evidence else "", details)


class StepContext:
    """What a step may use: the configuration, this step's own client, a timings recorder, and
    its cancellation (``cancelled`` turns true when the runner abandons the step; loops that send
    requests check it before each one)."""

    def __init__(
        self,
        config: CanaryConfig,
        client: EndpointClient,
        shared: dict[str, Any],
        *,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.shared = shared  # cross-step facts (the resolved model, the tool suite)
        self.timings: dict[str, float] = {}
        self.cancel = cancel or threading.Event()
        self.deadline = deadline  # time.monotonic() value at which the runner abandons the step

    @property
    def cancelled(self) -> bool:
        """True once the runner abandoned the step: loops stop sending requests."""
        return self.cancel.is_set() or (self.deadline is not None and time.monotonic() >= self.deadline)

    def time(self, name: str, seconds: float | None) -> None:
        """Record a named latency (seconds) for the step's timings."""
        if seconds is not None:
            self.timings[name] = round(float(seconds), 4)

    @property
    def timeout(self) -> float:
        """Per-request limit: ``request_timeout_s``, never past the step's own deadline."""
        if self.deadline is None:
            return self.config.request_timeout_s
        return max(0.05, min(self.config.request_timeout_s, self.deadline - time.monotonic()))


StepFn = Callable[[StepContext], Outcome]


@dataclass
class Step:
    """A registered step: name, title, order, function, and whether it needs the endpoint."""

    name: str
    title: str
    order: float
    fn: StepFn
    needs_endpoint: bool = True


#: Every canary step, found in ``canary/steps/``; a name is taken once (``registry.DuplicateName``).
STEPS: Registry[Step] = Registry("canary step", "vllm_runbooks.canary.steps")


def register(name: str, title: str, order: float, *, needs_endpoint: bool = True) -> Callable[[StepFn], StepFn]:
    """Add a step (a name already taken by another step is refused: ``DuplicateName``)."""

    def deco(fn: StepFn) -> StepFn:
        STEPS.add(Step(name, title, order, fn, needs_endpoint))
        return fn

    return deco


def discover() -> dict[str, Step]:
    """Every step by name (the modules of ``canary/steps/`` imported once)."""
    return STEPS.discover()


def registered_steps() -> list[Step]:
    """Every discovered step, in procedure order."""
    return STEPS.ordered()


def describe_failure(f: Failure | None) -> str:
    """One line a human reads: kind, status, and the server's own message when it sent one."""
    if f is None:
        return "unknown failure"
    if f.kind == FailureKind.HTTP_STATUS:
        return f"HTTP {f.status_code}: {f.error_message or f.message}"
    msg = f"{f.kind.value}: {f.message}"
    if f.body_excerpt:
        msg += f" (body: {f.body_excerpt[:120]})"
    return msg


def body_view(f: Failure | None, limit: int = 400) -> Any:
    """The server's error body for the evidence: parsed JSON when it is JSON, else a bounded excerpt."""
    if f is None or not f.body_excerpt:
        return None
    try:
        return json.loads(f.body_excerpt)
    except ValueError:
        return f.body_excerpt[:limit]


def step_client(config: CanaryConfig, model: str | None, transport: httpx.BaseTransport | None) -> EndpointClient:
    """A fresh endpoint client per step, so an abandoned step's client can be closed alone."""
    return EndpointClient(
        config.endpoint,
        api_key_env=config.api_key_env,
        model=model,
        timeout_s=config.request_timeout_s,
        connect_timeout_s=min(5.0, config.request_timeout_s),
        transport=transport,
    )


def _run_steps(config: CanaryConfig, shared: dict[str, Any], transport: httpx.BaseTransport | None) -> list[StepResult]:
    """The registered steps (those in ``config.steps``) in order, through the one step runner.

    A step needing the endpoint is skipped without one. Each runs in a worker thread with its own
    client, bounded by ``step_timeout_s``; exceptions become fails. A step still running at its
    deadline is cancelled (event set, client aborted) and reported as a fail. The model a step
    resolved is kept in ``shared["model"]`` for the clients of later steps.
    """
    running: dict[str, StepContext] = {}

    def start(step: Step) -> steps.Job[Outcome]:
        client = step_client(config, shared.get("model") or config.model, transport)
        deadline = time.monotonic() + config.step_timeout_s
        ctx = running[step.name] = StepContext(config, client, shared, cancel=threading.Event(), deadline=deadline)
        return steps.Job(lambda: step.fn(ctx), cancel=lambda: (ctx.cancel.set(), client.abort()))

    def finding(step: Step, why: steps.Problem) -> Outcome:
        match why:
            case steps.Skipped(reason):
                return Outcome(Status.SKIP, reason)
            case steps.Raised(exc):
                return failed(f"step raised {type(exc).__name__}: {exc}")
            case steps.TimedOut(seconds):
                return failed(
                    f"step did not finish within step_timeout_s={seconds:g} s; abandoned "
                    f"(cancelled: its requests stopped)"
                )

    def finish(step: Step, out: Outcome, took: steps.Took) -> StepResult:
        ctx = running.pop(step.name, None)
        if ctx is not None and not took.timed_out:
            ctx.client.close()
            if ctx.client.model:
                shared["model"] = ctx.client.model
        return StepResult(
            step=step.name,
            title=step.title,
            order=step.order,
            status=out.status,
            reason=out.reason,
            started_at=took.started_at,
            duration_s=round(took.seconds, 4) if took.ran else 0.0,
            timings=dict(ctx.timings) if ctx else {},  # a snapshot: an abandoned step records nothing after this
            evidence=out.evidence,
            details=out.details,
        )

    return steps.run_steps(
        registered_steps(),
        start=start,
        finding=finding,
        finish=finish,
        timeout_s=config.step_timeout_s,
        only=set(config.steps) if config.steps else None,
        skip=lambda step: "no endpoint given" if step.needs_endpoint and not config.endpoint else None,
        thread_prefix="canary",
    )


def run_canary(
    config: CanaryConfig | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    **overrides: Any,
) -> CanaryReport:
    """Run the registered steps in order against ``config.endpoint`` and judge the result.

    ``overrides`` are CanaryConfig fields (``run_canary(endpoint=..., tool_calls=8)``);
    ``transport`` lets tests plug an httpx transport into the client.
    """
    from .plan import expansion_plan, overall_verdict

    if config is None:
        config = CanaryConfig(**overrides)
    elif overrides:
        config = CanaryConfig.from_dict({**config.to_dict(), **overrides})
    t0, started = time.monotonic(), utc_now()
    shared: dict[str, Any] = {}
    results = _run_steps(config, shared, transport)
    model = shared.get("model") or config.model
    verdict = overall_verdict(results)
    return CanaryReport(
        endpoint=config.endpoint,
        model=model,
        started_at=started,
        duration_s=round(time.monotonic() - t0, 3),
        verdict=verdict,
        steps=results,
        plan=expansion_plan(results, verdict),
        config=config.to_dict(),
    )
