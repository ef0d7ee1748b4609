"""Canary step 6.5: an agent's retry after an abandoned streamed tool call.

Why: agents time out and retry. A stream dropped midway must not leave the server wedged, and the
retry must come back as a schema-valid call. The first request is streamed and abandoned after
its first chunk (the connection is closed, as an agent's timeout does); the same request is then
sent again. The server's own abort counter (``vllm:request_success{finished_reason="abort"}``)
is read before and after, when the server reports it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx

from ...client import decode_body, direct_http_client
from ..registry import Outcome, StepContext, describe_failure, failed, passed, register
from ..toolcheck import check_call
from .tools import forced_call, tool_suite

ABORT_FAMILY = "vllm:request_success"
#: Lines read from the abandoned stream at most, and bytes per line: a hostile server cannot hold us.
MAX_LINES, MAX_LINE_BYTES = 200, 64 * 1024


def _aborts(ctx: StepContext) -> float | None:
    snap = ctx.client.metrics(timeout_s=min(ctx.timeout, 10.0))
    if not snap.ok or snap.snapshot is None:
        return None
    return snap.snapshot.value(ABORT_FAMILY, finished_reason="abort")


def abandon_stream(ctx: StepContext, body: dict[str, Any]) -> dict[str, Any]:
    """Send ``body`` streamed, read up to the first chunk that carries a delta, then drop the
    connection. Returns what was seen: status, chunks, whether [DONE] came first, any error."""
    key = os.environ.get(ctx.config.api_key_env) if ctx.config.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    seen: dict[str, Any] = {"status": None, "chunks": 0, "done_before_abandon": False, "error": None}
    t0 = time.monotonic()
    try:
        with (
            direct_http_client(timeout=httpx.Timeout(ctx.timeout, connect=min(5.0, ctx.timeout))) as http,
            http.stream("POST", ctx.client.base_url + "/v1/chat/completions", json=body, headers=headers) as r,
        ):
            seen["status"] = r.status_code
            if r.status_code != 200:
                seen["error"] = f"HTTP {r.status_code}: {decode_body(r.read()[:300])}"
                return seen
            for n, line in enumerate(r.iter_lines()):
                if n >= MAX_LINES or ctx.cancelled or time.monotonic() - t0 > ctx.timeout:
                    break
                line = line[:MAX_LINE_BYTES]
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    seen["done_before_abandon"] = True
                    break
                seen["chunks"] += 1
                try:
                    chunk = json.loads(payload)
                except ValueError:
                    continue
                delta = ((chunk.get("choices") or [{}])[0] or {}).get("delta") or {}
                if delta.get("tool_calls") or delta.get("content"):
                    break  # abandoned midway: leaving the with-block closes the connection
    except httpx.HTTPError as exc:
        seen["error"] = f"{type(exc).__name__}: {exc}"
    seen["abandoned_after_s"] = round(time.monotonic() - t0, 4)
    return seen


@register("agent_retry", "Agent retry after an abandoned stream", 6.5)
def agent_retry(ctx: StepContext) -> Outcome:
    """Abandon a streamed forced tool call midway, retry it, check the call and the server's health."""
    try:
        suite = tool_suite(ctx)
    except ValueError as exc:
        return failed(str(exc))
    messages = [{"role": "user", "content": suite.prompts[0]}]
    params = forced_call(suite)
    before = _aborts(ctx)
    body = {
        "model": ctx.client._model(),  # the served model, resolved once per client
        "messages": messages,
        "stream": True,
        **params,
    }
    dropped = abandon_stream(ctx, body)
    ctx.time("abandoned_after", dropped.get("abandoned_after_s"))
    if dropped["error"]:
        return failed(f"the first (to be abandoned) request failed: {dropped['error']}", dropped)
    retry = ctx.client.chat_stream(messages, timeout_s=ctx.timeout, total_timeout_s=ctx.timeout, **params)
    ctx.time("retry", retry.e2e_s)
    health = ctx.client.health(timeout_s=ctx.timeout)
    ctx.time("health_after", health.elapsed_s)
    after = _aborts(ctx)
    checks = [check_call(c, suite, request=0, mode="required", stream=True) for c in retry.tool_calls]
    valid = [c for c in checks if c.problem is None]
    details: dict[str, Any] = {
        "abandoned": dropped,
        "retry": {
            "ok": retry.ok,
            "finish_reason": retry.finish_reason,
            "calls": [c.to_dict() for c in checks],
            "failure": describe_failure(retry.failure) if retry.failure else None,
        },
        "healthy_after": health.ok,
        "aborts_before": before,
        "aborts_after": after,
    }
    if before is None or after is None:
        details["abort_metric"] = "the server does not report vllm:request_success{finished_reason=abort}"
    else:
        delta = after - before
        details["abort_metric"] = (
            f"the abort is visible in its metrics ({delta:g} aborted request(s) counted)"
            if delta > 0
            else "the abort is not visible in its metrics (request_success{finished_reason=abort} unchanged)"
        )
    evidence = {"abandoned": dropped, "retry_calls": [c.to_dict() for c in checks]}
    problems = []
    if dropped["done_before_abandon"] or not dropped["chunks"]:
        problems.append("the first stream could not be abandoned midway (it ended before its first delta)")
    if not retry.ok:
        problems.append(f"retry failed: {describe_failure(retry.failure)}")
    elif not valid:
        first = checks[0].problem + ": " + checks[0].detail if checks else "no tool call returned"
        problems.append(f"retry returned no schema-valid call ({first})")
    if not health.ok:
        problems.append(f"/health after the retry: {describe_failure(health.failure)}")
    if problems:
        return failed("; ".join(problems), evidence, **details)
    return passed(
        f"stream abandoned after {dropped['chunks']} chunk(s); retry returned a schema-valid "
        f"{valid[0].name} call; server healthy; {details['abort_metric']}",
        evidence,
        **details,
    )
