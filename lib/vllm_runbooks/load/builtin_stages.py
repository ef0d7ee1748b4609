"""The seven built-in stages of the load check, in the procedure's order.

Each assumes only what the one before proved: the server is up and serves the model (1), answers
one short request (2), fits a prompt near its context (3), serves shared prefixes (4), holds
rising concurrency up to a knee (5), takes images and tool calls under load (6), and its GPUs talk
to each other (7).
"""

from __future__ import annotations

import time
from typing import Any

from ..canary.steps.endpoint import IMAGE_REFUSAL
from ..client import EndpointClient
from .registry import StageContext, describe_errors, level_result, ramp_levels, register
from .restart import RestartAttempt, restart_embedded, restart_with_command, server_identity
from .result import StageStatus
from .saturation import knee, over_saturation
from .workload import image_payload, long_prompt, same_prefix_prompts, short_prompts, tool_payload


def _fail_or_pass(ctx: StageContext, summary: Any, run: Any, ok_reason: str, **kw: Any) -> Any:
    if summary.requests == 0:
        return ctx.outcome(StageStatus.SKIP, kw.pop("capped", None) or "no request sent", summary=summary, **kw)
    if summary.failed:
        status = StageStatus.FAIL if summary.completed == 0 else StageStatus.WARN
        return ctx.outcome(status, describe_errors(summary, run.records), summary=summary, **kw)
    return ctx.outcome(StageStatus.PASS, ok_reason, summary=summary, **kw)


@register("health", "Model load and health", 1)
def health(ctx: StageContext) -> Any:
    """/health, /v1/models (the model, its max_model_len), /version; startup time from the server
    log when given; restart stability when asked."""
    cfg, c = ctx.config, ctx.client
    h = c.health(timeout_s=min(10.0, cfg.request_timeout_s))
    if not h.ok:
        f = h.failure
        ctx.shared["unreachable"] = f is not None and f.kind.value in ("connection_refused", "connect_error", "timeout")
        ctx.shared["dead"] = True
        return ctx.outcome(StageStatus.FAIL, f"/health failed: {f.kind.value if f else '?'}: {f.message if f else ''}")
    models = c.models(timeout_s=min(10.0, cfg.request_timeout_s))
    ids = models.model_ids
    details: dict[str, Any] = {"served_models": ids}
    if not models.ok or not ids:
        ctx.shared["dead"] = True
        return ctx.outcome(StageStatus.FAIL, "/v1/models lists no model", details=details)
    if ctx.model and ctx.model not in ids:
        ctx.shared["dead"] = True
        return ctx.outcome(StageStatus.FAIL, f"model {ctx.model!r} is not served (served: {ids})", details=details)
    ctx.model = ctx.model or ids[0]
    entry = next((m for m in (models.data or {}).get("data", []) if m.get("id") == ctx.model), {})
    if isinstance(entry.get("max_model_len"), int):
        ctx.max_model_len = entry["max_model_len"]
    version = c.version(timeout_s=5.0)
    details.update(model=ctx.model, max_model_len=ctx.max_model_len)
    if version.ok and isinstance(version.data, dict):
        details["vllm_version"] = version.data.get("version")
    reason = f"healthy; serves {ctx.model!r} (max_model_len {ctx.max_model_len})"
    if cfg.server_log:
        from ..canary.serverlog import parse_server_log

        log = parse_server_log(cfg.server_log)
        details["startup"] = {k: log.get(k) for k in ("startup_s", "weights_load_s", "engine_init_s", "ready", "error")}
        if log.get("startup_s") is not None:
            reason += f"; started in {log['startup_s']:.0f} s (server log)"
    restarts = _restarts(ctx)
    if restarts:
        details["restarts"] = [r.to_dict() for r in restarts]
        times = [r.seconds_to_healthy for r in restarts if r.ok]
        bad = [r for r in restarts if not r.ok]
        # a restart counts only when proven (restart.py): "not proven" is never "healthy again"
        reason += f"; {len(times)}/{len(restarts)} restarts proven and healthy again" + (
            f" in {min(times):.1f}–{max(times):.1f} s" if times else ""
        )
        if bad:
            return ctx.outcome(
                StageStatus.FAIL, reason + f"; restart {bad[0].index}: {bad[0].message}", details=details
            )
    return ctx.outcome(StageStatus.PASS, reason, details=details)


def _restarts(ctx: StageContext) -> list[RestartAttempt]:
    cfg = ctx.config
    n = max(0, min(int(cfg.restart_count or 0), cfg.max_restarts))
    if n == 0 or not (cfg.restart_command or cfg.restart_target):
        return []
    out = []
    for i in range(1, n + 1):
        # Our own keep-alive connections would be closed by the stopping server, leaving its port in
        # TIME_WAIT: close them first (the client reconnects on its next call).
        ctx.client.close()
        ctx.client = EndpointClient(
            ctx.target.base_url, api_key_env=cfg.api_key_env, model=ctx.model, timeout_s=ctx.client.timeout_s
        )
        began = time.monotonic()
        if cfg.restart_target:
            att = restart_embedded(cfg.restart_target, i, cfg.restart_timeout_s, cfg.restart_target_root)
        else:
            att = restart_with_command(
                cfg.restart_command,
                lambda: ctx.client.health(timeout_s=2.0).ok,
                i,
                cfg.restart_timeout_s,
                identity=lambda: server_identity(ctx.client),
            )
        out.append(att)
        # restarts are bounded by restart_timeout_s each; the global caps are for load, so the whole
        # attempt (command, wait for the restart to show, wait until healthy) is given back
        ctx.budget.started += time.monotonic() - began
        if not att.ok:
            break
    return out


@register("single_short", "Single short request", 2)
def single_short(ctx: StageContext) -> Any:
    """One short request: the server generates at all."""
    cfg = ctx.config
    p = short_prompts(ctx.model or "", input_words=cfg.input_words, max_tokens=cfg.max_tokens, count=1)
    run, summary, signals, capped = ctx.load(p, 1, 1, cfg.stage_seconds, slo_stop=False)
    if summary.completed:
        r = next(r for r in run.records if r.ok)  # type: ignore[union-attr]
        reason = f"answered: TTFT {r.ttft_s * 1000:.0f} ms, {r.output_tokens} tokens in {r.e2e_s * 1000:.0f} ms"
    else:
        reason = ""
    out = _fail_or_pass(ctx, summary, run, reason, capped=capped, signals=signals)
    if out.status == StageStatus.FAIL:
        ctx.shared["dead"] = True
    return out


@register("single_long", "Single request near the target context length", 3)
def single_long(ctx: StageContext) -> Any:
    """One prompt near the served context: long prompts fit and prefill works."""
    cfg = ctx.config
    if cfg.long_context_tokens:
        want = int(cfg.long_context_tokens)
        how = "long_context_tokens"
    elif ctx.max_model_len:
        want = ctx.max_model_len - cfg.context_margin_tokens - cfg.max_tokens
        how = f"max_model_len {ctx.max_model_len} − margin {cfg.context_margin_tokens} − max_tokens {cfg.max_tokens}"
    else:
        return ctx.outcome(StageStatus.SKIP, "max_model_len unknown (/v1/models) and no long_context_tokens given")
    if want < 16:
        return ctx.outcome(StageStatus.SKIP, f"target context {want} tokens is too small to test ({how})")
    from ..prefix_cache.experiment import tokens_per_word

    ratio, source = tokens_per_word(ctx.client)
    payload = long_prompt(ctx.model or "", int(want * 0.97), cfg.max_tokens, tokens_per_word=ratio)
    run, summary, signals, capped = ctx.load([payload], 1, 1, cfg.stage_seconds, slo_stop=False)
    details = {"target_prompt_tokens": want, "from": how, "tokens_per_word": round(ratio, 3), "calibration": source}
    got = next((r.prompt_tokens for r in (run.records if run else []) if r.prompt_tokens), None)
    reason = f"{got} prompt tokens (target {want}: {how}) answered" if got else ""
    return _fail_or_pass(ctx, summary, run, reason, capped=capped, signals=signals, details=details)


@register("same_prefix", "Several requests with the same prefix", 4)
def same_prefix(ctx: StageContext) -> Any:
    """Requests sharing a system prompt, one after another: cached tokens on the later ones."""
    cfg = ctx.config
    n = max(2, cfg.same_prefix_requests)
    shared = cfg.same_prefix_tokens
    if ctx.max_model_len:
        shared = min(shared, ctx.max_model_len // 2)
    payloads = same_prefix_prompts(ctx.client, ctx.model or "", shared, n, cfg.max_tokens)
    run, summary, signals, capped = ctx.load(payloads, n, 1, cfg.stage_seconds, slo_stop=False)
    recs = [r for r in (run.records if run else []) if r.ok]
    cached = [r.cached_tokens for r in recs[1:]]
    details = {"shared_prompt_tokens": shared, "cached_tokens_after_first": cached}
    hits = sum(1 for x in cached if x)
    reason = f"{len(recs)} answered; later requests served from cache: {hits}/{len(cached)}"
    if cached and all(x is None for x in cached):
        reason = f"{len(recs)} answered; the server does not report cached_tokens"
    return _fail_or_pass(ctx, summary, run, reason, capped=capped, signals=signals, details=details)


@register("ramp", "Concurrency ramp", 5)
def ramp(ctx: StageContext) -> Any:
    """1, 2, 4, … up to ``max_concurrency``, each level bounded; stops on errors, the SLO, the
    over-saturation test or a server signal; the knee is the highest level meeting the SLO."""
    cfg = ctx.config
    payloads = short_prompts(
        ctx.model or "", input_words=cfg.input_words, max_tokens=cfg.max_tokens, count=max(64, cfg.max_concurrency * 2)
    )
    levels = []
    stop_reason, capped = "", None
    saturated_at = None
    cut_at: int | None = None  # the level the global caps cut (requests or seconds), if any
    summaries = []
    for conc in ramp_levels(cfg.max_concurrency, cfg.ramp_factor):
        want = max(cfg.level_requests, 2 * conc)
        warm = max(0, min(cfg.level_warmup_requests, want // 4))  # the switch from the level below
        run, summary, signals, cap = ctx.load(payloads, want + warm, conc, cfg.level_seconds, level=conc, warmup=warm)
        if run is None:
            capped = cap
            cut_at = conc
            stop_reason = f"stopped before concurrency {conc}: {cap}"
            break
        capped = capped or cap
        if cap and (run.ended_by != "completed" or len(run.records) < want + warm):
            cut_at = conc
        lv = level_result(conc, run, summary, signals)
        levels.append(lv)
        summaries.append(summary)
        test = over_saturation(
            [x.point() for x in levels],
            window=cfg.saturation_window,
            min_slope=cfg.saturation_slope,
            max_efficiency=cfg.saturation_max_efficiency,
        )
        lv.saturation = test
        if run.ended_by.startswith("stop"):
            stop_reason = f"concurrency {conc}: {run.ended_by[6:]}"
            break
        if summary.error_rate > cfg.max_error_rate:
            stop_reason = f"concurrency {conc}: error rate {summary.error_rate:.0%} > {cfg.max_error_rate:.0%}"
            break
        p95 = summary.ttft_ms.get("p95")
        if p95 is not None and p95 > cfg.slo_ttft_ms:
            stop_reason = f"concurrency {conc}: p95 TTFT {p95:.0f} ms over the SLO of {cfg.slo_ttft_ms:g} ms"
            break
        if test.saturated:
            saturated_at = conc
            stop_reason = f"concurrency {conc}: {test.reason}"
            break
        if signals.stop_reasons:
            stop_reason = f"concurrency {conc}: server: {'; '.join(signals.stop_reasons)}"
            break
        if cap:
            stop_reason = f"concurrency {conc}: {cap}"
            break
    points = [x.point() for x in levels]
    k = knee(points, cfg.slo_ttft_ms, cfg.max_error_rate, saturated_at)
    ctx.shared["knee"] = k
    ctx.shared["saturated_at"] = saturated_at
    from .records import summarise

    total = summarise([r for r in ctx.records if r.stage == ctx.stage])
    details = {"levels_planned": ramp_levels(cfg.max_concurrency, cfg.ramp_factor), "saturated_at": saturated_at}
    reached = levels[-1].concurrency if levels else 0
    ended = stop_reason or f"reached max_concurrency {cfg.max_concurrency}"
    ctx.shared["concurrency_check"] = target_concurrency_check(cfg.max_concurrency, k, cut_at, capped, ended)
    details["target_concurrency"] = ctx.shared["concurrency_check"]
    kw: dict[str, Any] = dict(summary=total, levels=levels, ended_by=ended, capped=capped, details=details)
    if not levels:
        return ctx.outcome(StageStatus.SKIP, stop_reason or "no level ran", **kw)
    if k is None:
        return ctx.outcome(StageStatus.FAIL, f"no level met the SLO without errors; {ended}", **kw)
    # The SLO and the saturation test are how a ramp finds its knee; errors and server signals
    # (KV full, preemptions, a growing queue) mean the node showed stress on the way: a warning.
    stressed = bool(stop_reason) and not saturated_at and ("error rate" in stop_reason or "server:" in stop_reason)
    status = StageStatus.WARN if stressed else StageStatus.PASS
    return ctx.outcome(status, f"knee at concurrency {k} (reached {reached}); {ended}", **kw)


def target_concurrency_check(
    target: int, knee_at: int | None, cut_at: int | None, cap: str | None, ended: str
) -> dict[str, Any]:
    """Was the target concurrency (``max_concurrency``) verified? Only when the knee is at or above
    it and no global cap (requests or seconds) cut the ramp: a ramp that passed at a lower knee, or
    one the caps stopped early, proves capacity only up to where it got. A cap cut is a warning."""
    out: dict[str, Any] = {"target": target, "knee": knee_at, "verified": False, "cut_by_cap": cut_at is not None}
    if cut_at is not None:
        out["reason"] = (
            f"the global cap cut the ramp at concurrency {cut_at} ({cap or 'cap reached'}): "
            f"target concurrency {target} not verified"
        )
        out["warning"] = f"ramp cut by the global cap at concurrency {cut_at}: raise max_requests / max_seconds"
    elif knee_at is None:
        out["reason"] = f"no level met the SLO without errors: target concurrency {target} not verified"
    elif knee_at < target:
        out["reason"] = f"knee at concurrency {knee_at} is below the target concurrency {target} ({ended})"
    else:
        out.update(verified=True, reason=f"knee at concurrency {knee_at} ≥ target concurrency {target}")
    return out


@register("image_tools", "Image and tool calls mixed in", 6)
def image_tools(ctx: StageContext) -> Any:
    """Forced tool calls and images mixed under light concurrency (a text-only model's refusal skips images)."""
    cfg = ctx.config
    details: dict[str, Any] = {}
    probe_run, probe, _, cap = ctx.load([image_payload(ctx.model or "", 8)], 1, 1, cfg.stage_seconds, slo_stop=False)
    mixed = [tool_payload(ctx.model or "")]
    image_note = ""
    if probe.completed:
        mixed.append(image_payload(ctx.model or "", 8))
        image_note = "image accepted"
    elif probe_run is not None and probe_run.records:
        rec = probe_run.records[0]
        if rec.status == 400 and IMAGE_REFUSAL.search(rec.error_excerpt or ""):
            image_note = "image part skipped: text-only model refused image input"
            details["image_refusal"] = rec.error_excerpt[:300]
            rec.warmup = True  # the refusal is the server's answer about the model, not a load error
        else:
            image_note = f"image request failed: {rec.error_class}: {rec.error_excerpt[:160]}"
    n = max(2, cfg.image_tools_requests)
    run, summary, signals, capped = ctx.load(mixed, n, 2, cfg.stage_seconds, slo_stop=False)
    details["mix"] = [p.body.get("tool_choice", "image") for p in mixed]
    reason = f"{summary.completed} of {summary.requests} tool/image requests answered; {image_note}"
    out = _fail_or_pass(ctx, summary, run, reason, capped=capped or cap, signals=signals, details=details)
    if out.status != StageStatus.PASS and image_note:
        out.reason += f"; {image_note}"
    if out.status == StageStatus.PASS and image_note.startswith("image request failed"):
        out.status = StageStatus.WARN
    return out


@register("multi_node", "Multi-node communication (NCCL / Gloo)", 7, needs_endpoint=False)
def multi_node(ctx: StageContext) -> Any:
    """The canary's step: nccl-tests output when given, else an NCCL + Gloo all-reduce across the
    local GPUs, else a skip that says why."""
    from ..canary.model import Status
    from ..canary.steps.gpu import communication_check, gpus_for

    cfg = ctx.config
    found = gpus_for(cfg.evidence_dir) if not cfg.nccl_tests_file else None
    out = communication_check(cfg.nccl_tests_file, found, cfg.allreduce_timeout_s)
    status = {Status.PASS: StageStatus.PASS, Status.FAIL: StageStatus.FAIL, Status.SKIP: StageStatus.SKIP}[out.status]
    return ctx.outcome(status, out.reason, details={"evidence": out.evidence, **out.details})
