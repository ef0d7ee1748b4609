"""Runbook 05's stage: ``Config`` (the notebook's parameters, typed) and ``run(config) -> LoadCheckResult``.

Order of a run: the plan is printed (stages, caps, estimated tokens) before the first request;
each registered stage runs in order under the global caps, with a full ``/metrics`` scrape at its
start and end (counter deltas per stage) and the server log's new lines classified when a log is
given; then the verdict. With ``results_file`` instead of an endpoint, a ``vllm bench serve`` or
GuideLLM file is imported into the same records, tables and plots, and nothing is sent anywhere.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import steps
from ..client import EndpointClient
from ..metrics import diff
from ..records import Record, utc_now
from .engine import Target
from .limits import LIMITS, problem
from .registry import Budget, Stage, StageContext, ramp_levels, registered_stages
from .result import LoadCheckResult, StageOutcome, StageStatus

#: counters whose per-stage deltas are kept (canonical names; old spellings are accepted).
STAGE_COUNTERS = (
    "vllm:num_preemptions",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "vllm:request_success",
)


@dataclass
class Config(Record):
    """Runbook 05's parameters. Every cap is a hard bound; the global ones hold over the stages'."""

    SCHEMA = "load_check_config"
    endpoint: str | None = "http://127.0.0.1:8000"
    model: str | None = None
    api_key_env: str | None = "VLLM_API_KEY"
    results_file: str | None = None  # import vllm bench serve / GuideLLM results instead of sending
    stages: list[str] | None = None  # run only these (default: all registered)
    # service-level objective and stop thresholds
    slo_ttft_ms: float = 2000.0
    slo_tpot_ms: float | None = None
    max_error_rate: float = 0.05
    min_requests_for_stop: int = 8
    kv_stop_fraction: float = 0.98
    saturation_slope: float = 0.8  # a queueing server gives ~1; healthy ~0 (noise on a busy CPU target ~0.7)
    saturation_window: int = 3
    saturation_max_efficiency: float = 0.5  # throughput gain / concurrency gain at or below this: saturated
    min_knee_concurrency: int = 1
    # global caps
    max_requests: int = 600
    max_seconds: float = 300.0
    # per stage
    stage_seconds: float = 60.0
    request_timeout_s: float = 60.0
    max_tokens: int = 16
    input_words: int = 24
    long_context_tokens: int | None = None
    context_margin_tokens: int = 256
    same_prefix_tokens: int = 512
    same_prefix_requests: int = 6
    image_tools_requests: int = 4
    max_concurrency: int = 16
    ramp_factor: float = 2.0
    level_requests: int = 24
    level_seconds: float = 30.0
    level_warmup_requests: int = 2  # first requests of each ramp level, excluded from its figures
    metrics_interval_s: float = 1.0
    nvml: bool = True  # sample GPU memory with NVML when the endpoint is on this machine
    seed: int = 0
    # evidence from the node
    server_log: str | None = None
    nccl_tests_file: str | None = None
    evidence_dir: str | None = None
    allreduce_timeout_s: float = 120.0
    # restart stability (only when asked)
    restart_count: int = 0
    restart_command: str | None = None
    restart_target: str | None = None
    restart_target_root: str | None = None
    restart_timeout_s: float = 300.0
    max_restarts: int = 5
    run_dir: str | None = None

    def problems(self) -> list[str]:
        """Settings that make the run meaningless or unbounded, as sentences."""
        out = []
        for name in LIMITS:  # the one table of bounds (load.limits), shared with `vllm-runbooks load`
            p = problem(name, getattr(self, name))
            if p:
                out.append(p)
        if 0 < (self.metrics_interval_s or 0) < 0.05:
            out.append(f"metrics_interval_s={self.metrics_interval_s!r} is below 0.05 s (0 turns sampling off)")
        if self.restart_count and self.restart_command and self.restart_target:
            out.append("give restart_command or restart_target, not both")
        if not self.endpoint and not self.results_file:
            out.append("give an endpoint to load, or a results_file to import")
        return out


def plan(config: Config) -> dict[str, Any]:
    """What the run will do at most: stages, their caps, estimated tokens. Printed before any request."""
    tokens_in = int(config.input_words * 1.3) + 12
    levels = ramp_levels(config.max_concurrency, config.ramp_factor)
    per_level = [max(config.level_requests, 2 * c) for c in levels]
    ramp_req = sum(n + max(0, min(config.level_warmup_requests, n // 4)) for n in per_level)
    stages: dict[str, dict[str, Any]] = {
        "health": {"requests": 0, "note": "GET /health, /v1/models, /version"},
        "single_short": {"requests": 1, "est_tokens": tokens_in + config.max_tokens},
        "single_long": {
            "requests": 1,
            "est_tokens": config.long_context_tokens or "≈ max_model_len − margin",
        },
        "same_prefix": {
            "requests": config.same_prefix_requests,
            "est_tokens": config.same_prefix_requests * (config.same_prefix_tokens + 16 + config.max_tokens),
        },
        "ramp": {
            "requests": ramp_req,
            "levels": levels,
            "seconds_per_level": config.level_seconds,
            "est_tokens": ramp_req * (tokens_in + config.max_tokens),
        },
        "image_tools": {
            "requests": 1 + config.image_tools_requests,
            "est_tokens": (1 + config.image_tools_requests) * 400,
        },
        "multi_node": {"requests": 0, "note": "nccl-tests file, or a local all-reduce with ≥ 2 GPUs, else skip"},
    }
    if config.restart_count:
        stages["health"]["restarts"] = min(config.restart_count, config.max_restarts)
    wanted = set(config.stages) if config.stages else None
    stages = {k: v for k, v in stages.items() if wanted is None or k in wanted}
    return {
        "endpoint": config.endpoint,
        "max_requests": config.max_requests,
        "max_seconds": config.max_seconds,
        "stage_seconds": config.stage_seconds,
        "request_timeout_s": config.request_timeout_s,
        "slo_ttft_ms": config.slo_ttft_ms,
        "max_error_rate": config.max_error_rate,
        "requests_planned": sum(int(v.get("requests") or 0) for v in stages.values()),
        "stages": stages,
    }


def format_plan(p: dict[str, Any]) -> str:
    """The plan as the lines printed before the first request."""
    lines = [
        f"load check plan → {p['endpoint']} (the only endpoint this run sends to)",
        f"  global caps: {p['max_requests']} requests, {p['max_seconds']:g} s; per stage ≤ {p['stage_seconds']:g} s; "
        f"request deadline {p['request_timeout_s']:g} s",
        f"  stop on: error rate > {p['max_error_rate']:.0%}, p95 TTFT > {p['slo_ttft_ms']:g} ms, over-saturation, "
        "waiting queue growing, preemptions rising, KV usage ≥ 98 %",
    ]
    for name, info in p["stages"].items():
        rest = ", ".join(f"{k}={v}" for k, v in info.items())
        lines.append(f"  {name:<13} {rest}")
    lines.append(f"  at most {min(p['requests_planned'], p['max_requests'])} requests in all")
    return "\n".join(lines)


class _LogWatch:
    """The server log's lines gained during a stage, classified with runbook 02's signatures."""

    MAX_BYTES = 4 * 2**20

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None

    def mark(self) -> int | None:
        """The log's size now: where this stage's new lines will start."""
        try:
            return self.path.stat().st_size if self.path else None
        except OSError:
            return None

    def since(self, start: int | None) -> list[dict[str, Any]]:
        """Findings in the lines the log gained since ``start`` (bounded read, redacted lines)."""
        if self.path is None or start is None:
            return []
        try:
            with self.path.open("rb") as fh:
                fh.seek(start)
                data = fh.read(self.MAX_BYTES)
        except OSError:
            return []
        if not data.strip():
            return []
        from ..logs import diagnose_text
        from ..redact import redact_text

        diag = diagnose_text(data)
        return [
            {"label": f.label, "severity": f.severity, "signature": f.signature, "line": redact_text(f.text[:300])}
            for f in diag.findings
            if f.severity != "info" and f.label != "healthy"
        ][:20]


def _scrape(client: EndpointClient) -> Any:
    res = client.metrics(timeout_s=5.0)
    return res.snapshot if res.ok else None


def _run_stages(config: Config, ctx: StageContext, logs: _LogWatch, *, quiet: bool) -> list[StageOutcome]:
    """The registered stages (those in ``config.stages``) in order, through the one step runner.

    A stage runs in this thread, without a timeout: the budget bounds it (``ctx.load`` grants no
    more than the global caps leave), and an abandoned stage could not be stopped from sending. A
    stage needing the endpoint is skipped once an earlier one showed it cannot serve, or the
    global caps are spent; an exception becomes a fail. Each stage that runs gets the counter
    deltas of a ``/metrics`` scrape at its start and end, and the server log's findings.
    """
    budget, marks = ctx.budget, {}

    def skip(st: Stage) -> str | None:
        if st.needs_endpoint and ctx.shared.get("dead"):
            return "skipped: an earlier stage showed the endpoint cannot serve"
        if st.needs_endpoint and st.name != "health" and budget.requests_left == 0:
            return f"skipped: global cap of {config.max_requests} requests reached"
        if st.needs_endpoint and st.name != "health" and budget.seconds_left < 1:
            return f"skipped: global cap of {config.max_seconds:g} s reached"
        return None

    def start(st: Stage) -> steps.Job[StageOutcome]:
        ctx.stage = st.name  # the stage's records and outcomes name it
        if not quiet:
            print(f"stage {st.name}: {st.title}…", flush=True)
        before = _scrape(ctx.client) if st.needs_endpoint and not ctx.shared.get("dead") else None
        marks[st.name] = (before, logs.mark())
        return steps.Job(lambda: st.fn(ctx))

    def finding(st: Stage, why: steps.Problem) -> StageOutcome:
        match why:
            case steps.Skipped(reason):
                status = StageStatus.SKIP
            case steps.Raised(exc):
                status, reason = StageStatus.FAIL, f"stage raised {type(exc).__name__}: {exc}"
            case steps.TimedOut(seconds):  # not reached: a stage runs without a timeout
                status, reason = StageStatus.FAIL, f"stage did not finish within {seconds:g} s"
        return StageOutcome(stage=st.name, title=st.title, order=st.order, status=status, reason=reason)

    def finish(st: Stage, out: StageOutcome, took: steps.Took) -> StageOutcome:
        before, mark = marks.pop(st.name, (None, None))
        if took.ran:
            after = _scrape(ctx.client) if before is not None else None
            if before is not None and after is not None:
                out.counter_deltas = diff(before, after, STAGE_COUNTERS).deltas
            out.log_findings = logs.since(mark)
            if out.log_findings and out.summary and out.summary.failed:
                first = out.log_findings[0]
                out.details["log_explains"] = f"server log during the stage: {first['label']}: {first['line']}"
                out.reason += f" · log: {first['label']}"
            if not quiet:
                print(f"  {out.status.value}: {out.reason}", flush=True)
        out.started_at = out.started_at or took.started_at
        out.t_start_s = round(took.start - ctx.t0, 3)
        out.t_end_s = round(time.perf_counter() - ctx.t0, 3)  # after the closing scrape, as its band shows
        out.duration_s = round(out.t_end_s - out.t_start_s, 3)
        return out

    return steps.run_steps(
        registered_stages(),
        start=start,
        finding=finding,
        finish=finish,
        timeout_s=None,
        only=set(config.stages) if config.stages else None,
        skip=skip,
    )


def run(config: Config | None = None, *, quiet: bool = False, **overrides: Any) -> LoadCheckResult:
    """Run the load check (or import a results file); never raises for a bad endpoint or input."""
    if config is None:
        config = Config(**overrides)
    elif overrides:
        config = Config.from_dict({**config.to_dict(), **overrides})
    problems = config.problems()
    if problems:
        return LoadCheckResult(
            source=config.endpoint or config.results_file or "",
            verdict="inconclusive",
            reason="; ".join(problems),
            config=config.to_dict(),
        )
    if config.results_file:
        from .importers import import_results

        return import_results(config)
    p = plan(config)
    if not quiet:
        print(format_plan(p), flush=True)
    started, t_mono, t0 = utc_now(), time.monotonic(), time.perf_counter()
    try:
        target = Target(config.endpoint or "", api_key_env=config.api_key_env)
    except ValueError as exc:
        return LoadCheckResult(source=str(config.endpoint), verdict="inconclusive", reason=str(exc), plan=p)
    client = EndpointClient(target.base_url, api_key_env=config.api_key_env, model=config.model, timeout_s=30)
    budget = Budget(config.max_requests, config.max_seconds)
    ctx = StageContext(config, target, client, budget, t0)
    try:
        outcomes = _run_stages(config, ctx, _LogWatch(config.server_log), quiet=quiet)
    finally:
        ctx.client.close()
    result = LoadCheckResult(
        source=target.base_url,
        model=ctx.model,
        started_at=started,
        duration_s=round(time.monotonic() - t_mono, 3),
        plan=p,
        stages=outcomes,
        knee_concurrency=ctx.shared.get("knee"),
        target_concurrency=config.max_concurrency,
        slo={"ttft_ms": config.slo_ttft_ms, "tpot_ms": config.slo_tpot_ms, "max_error_rate": config.max_error_rate},
        metrics=list(ctx.samples),
        totals={
            "requests": len(ctx.records),
            "budget_used": budget.used,
            "max_requests": config.max_requests,
            "nvml": ctx.nvml_note or "not sampled (no stage sent load)",
        },
        config=config.to_dict(),
        records=ctx.records,
    )
    check = ctx.shared.get("concurrency_check")
    if check:
        result.target_concurrency_verified = bool(check["verified"])
        result.target_concurrency_reason = check["reason"]
        if check.get("warning"):
            result.warnings.append(check["warning"])
    else:
        result.target_concurrency_reason = "the ramp did not run: target concurrency not verified"
    result.verdict, result.reason = decide(result, config, unreachable=bool(ctx.shared.get("unreachable")))
    if result.warnings:
        result.reason += "; warning: " + "; ".join(result.warnings)
    return result


def decide(result: LoadCheckResult, config: Config, *, unreachable: bool = False) -> tuple[str, str]:
    """pass / degraded / failing / inconclusive, with the reason.

    inconclusive: nothing could be measured (endpoint unreachable, no stage sent a request).
    failing: the endpoint is up but unusable — health, the single short request or every ramp
    level failed. degraded: it serves, but a stage failed or warned, or the knee is below
    ``min_knee_concurrency``. pass: every stage passed or was skipped with its reason.
    """
    by = {s.stage: s for s in result.stages}
    if unreachable:
        return "inconclusive", f"endpoint unreachable: {by['health'].reason}"
    sent = sum(1 for r in result.records if not r.cut)
    health = by.get("health")
    if health is not None and health.status == StageStatus.FAIL:
        return "failing", f"health: {health.reason}"
    short = by.get("single_short")
    if short is not None and short.status == StageStatus.FAIL:
        return "failing", f"single short request: {short.reason}"
    ramp = by.get("ramp")
    if ramp is not None and ramp.status == StageStatus.FAIL:
        return "failing", f"ramp: {ramp.reason}"
    if sent == 0 and not result.records:
        return "inconclusive", "no stage sent a request (skipped or capped)"
    bad = [s for s in result.stages if s.status in (StageStatus.FAIL, StageStatus.WARN)]
    if bad:
        return "degraded", "; ".join(f"{s.stage} {s.status.value}: {s.reason}" for s in bad)[:600]
    k = result.knee_concurrency
    if ramp is not None and ramp.status != StageStatus.SKIP and k is not None and k < config.min_knee_concurrency:
        return "degraded", f"knee at concurrency {k} < min_knee_concurrency {config.min_knee_concurrency}"
    if ramp is None or ramp.status == StageStatus.SKIP:
        return "inconclusive", "the ramp did not run: no knee" if ramp else "ramp not selected: no knee"
    reason = f"every stage passed or skipped with its reason; knee at concurrency {k}"
    if not result.target_concurrency_verified:
        reason += f"; not verified: {result.target_concurrency_reason}"
    return "pass", reason


__all__ = ["LIMITS", "STAGE_COUNTERS", "Config", "decide", "format_plan", "plan", "run"]
