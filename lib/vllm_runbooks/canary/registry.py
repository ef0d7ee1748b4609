"""The canary step registry and the bounded runner.

Why a registry: the procedure grows (a new modality, a new backend check), and adding a step
must not touch the runner, the report or the notebook. A step is a function registered with
``@register(name, title, order)`` in any module under ``canary/steps/`` (discovered
automatically) or in user code before ``run_canary`` is called.

A step never raises to the runner and never runs unbounded: each runs in a worker thread that
is abandoned after ``step_timeout_s`` (its own requests are bounded by ``request_timeout_s``).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..client import EndpointClient, Failure, FailureKind
from ..records import utc_now
from .model import CanaryConfig, CanaryReport, Status, StepResult, excerpt


@dataclass
class Outcome:
    """What a step function returns; the runner adds name, title, timings and duration."""

    status: Status
    reason: str
    evidence: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def passed(reason: str, evidence: Any = "", **details: Any) -> Outcome:
    return Outcome(Status.PASS, reason, excerpt(evidence) if evidence else "", details)


def failed(reason: str, evidence: Any = "", **details: Any) -> Outcome:
    return Outcome(Status.FAIL, reason, excerpt(evidence) if evidence else "", details)


def skipped(reason: str, evidence: Any = "", **details: Any) -> Outcome:
    return Outcome(Status.SKIP, reason, excerpt(evidence) if evidence else "", details)


class StepContext:
    """What a step may use: the configuration, a shared client, and a timings recorder."""

    def __init__(self, config: CanaryConfig, client: EndpointClient, shared: dict[str, Any]) -> None:
        self.config = config
        self.client = client
        self.shared = shared  # cross-step facts (the resolved model, the tool suite)
        self.timings: dict[str, float] = {}

    def time(self, name: str, seconds: float | None) -> None:
        if seconds is not None:
            self.timings[name] = round(float(seconds), 4)

    @property
    def timeout(self) -> float:
        return self.config.request_timeout_s


StepFn = Callable[[StepContext], Outcome]


@dataclass
class Step:
    name: str
    title: str
    order: float
    fn: StepFn
    needs_endpoint: bool = True


STEPS: dict[str, Step] = {}


def register(name: str, title: str, order: float, *, needs_endpoint: bool = True) -> Callable[[StepFn], StepFn]:
    """Add a step; a later registration under the same name replaces the earlier one."""

    def deco(fn: StepFn) -> StepFn:
        STEPS[name] = Step(name, title, order, fn, needs_endpoint)
        return fn

    return deco


def discover() -> dict[str, Step]:
    """Import every module in ``canary/steps/`` so their ``@register`` calls run."""
    from . import steps as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{info.name}")
    return STEPS


def registered_steps() -> list[Step]:
    return sorted(discover().values(), key=lambda s: s.order)


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


def run_step(step: Step, config: CanaryConfig, client: EndpointClient, shared: dict[str, Any]) -> StepResult:
    """Run one step in a worker thread, bounded by ``step_timeout_s``; exceptions become fails."""
    ctx = StepContext(config, client, shared)
    box: dict[str, Outcome] = {}
    started, t0 = utc_now(), time.monotonic()

    def work() -> None:
        try:
            box["out"] = step.fn(ctx)
        except Exception as exc:  # a bug in a step is evidence, not a crashed runbook
            box["out"] = failed(f"step raised {type(exc).__name__}: {exc}")

    if step.needs_endpoint and not config.endpoint:
        return StepResult(step.name, step.title, step.order, Status.SKIP, "no endpoint given", started_at=started)
    worker = threading.Thread(target=work, name=f"canary-{step.name}", daemon=True)
    worker.start()
    worker.join(timeout=config.step_timeout_s)
    if worker.is_alive() or "out" not in box:
        out = failed(f"step did not finish within step_timeout_s={config.step_timeout_s:g} s; abandoned")
    else:
        out = box["out"]
    return StepResult(
        step=step.name,
        title=step.title,
        order=step.order,
        status=out.status,
        reason=out.reason,
        started_at=started,
        duration_s=round(time.monotonic() - t0, 4),
        timings=dict(ctx.timings),
        evidence=out.evidence,
        details=out.details,
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
    wanted = set(config.steps) if config.steps else None
    t0, started = time.monotonic(), utc_now()
    shared: dict[str, Any] = {}
    results: list[StepResult] = []
    with EndpointClient(
        config.endpoint,
        api_key_env=config.api_key_env,
        model=config.model,
        timeout_s=config.request_timeout_s,
        connect_timeout_s=min(5.0, config.request_timeout_s),
        transport=transport,
    ) as client:
        for step in registered_steps():
            if wanted is not None and step.name not in wanted:
                continue
            results.append(run_step(step, config, client, shared))
        model = client.model
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
