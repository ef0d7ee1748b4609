"""Canary steps 5-6: tool calling with schema validation; structured output and an agent round trip.

Why forced calls: on a canary the question is whether the *serving stack* (tool parser, guided
decoding, chat template) turns a request into well-formed calls, not whether a model chooses to
call. ``tool_choice: "required"`` and a named function force a call on any model; "auto" is left
to the application team's own evaluation.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from ...client import ChatResult, FailureKind
from ..registry import Outcome, StepContext, body_view, describe_failure, failed, passed, register
from ..toolcheck import ToolAccuracy, ToolSuite, load_tool_suite, schema_errors

TOOL_MAX_TOKENS = 160
ABORT_AFTER_TRANSPORT_FAILURES = 2  # consecutive; a dead endpoint must not eat the step budget
TRANSPORT_KINDS = {
    FailureKind.TIMEOUT,
    FailureKind.CONNECTION_REFUSED,
    FailureKind.CONNECT_ERROR,
    FailureKind.STREAM_TIMEOUT,
}


def tool_suite(ctx: StepContext) -> ToolSuite:
    """The tool suite, loaded once per canary run and shared by steps 5 and 6."""
    if "tool_suite" not in ctx.shared:
        ctx.shared["tool_suite"] = load_tool_suite(ctx.config.tool_schema_file)
    return ctx.shared["tool_suite"]


def forced_call(suite: ToolSuite, name: str | None = None) -> dict[str, Any]:
    """The request parameters of one forced tool call — ``required``, or the function ``name`` —
    shared by steps 5, 6 and 6.5 so every step asks the server the same way (one call, bounded)."""
    choice: Any = {"type": "function", "function": {"name": name}} if name else "required"
    return {"tools": suite.tools, "tool_choice": choice, "parallel_tool_calls": False, "max_tokens": TOOL_MAX_TOKENS}


def _call(ctx: StepContext, messages: list[dict[str, Any]], stream: bool, **params: Any) -> ChatResult:
    c = ctx.client
    if stream:
        return c.chat_stream(messages, timeout_s=ctx.timeout, total_timeout_s=ctx.timeout, **params)
    return c.chat(messages, timeout_s=ctx.timeout, **params)


def _failure_text(r: ChatResult) -> str | None:
    return describe_failure(r.failure) if r.failure else None


def forced_plan(n: int, suite: ToolSuite) -> list[tuple[str, bool, str | None]]:
    """(mode, stream, named function) for request i: required/named × plain/stream, interleaved."""
    names = suite.names()
    plan = []
    for i in range(n):
        mode = "required" if i % 2 == 0 else "named"
        stream = (i // 2) % 2 == 1
        plan.append((mode, stream, names[(i // 2) % len(names)] if mode == "named" else None))
    return plan


@register("tool_calling", "Tool calling with schema validation", 5)
def tool_calling(ctx: StepContext) -> Outcome:
    """N forced calls (required + named, plain + stream) validated with jsonschema; no-call probes."""
    try:
        suite = tool_suite(ctx)
    except ValueError as exc:
        return failed(str(exc))
    acc = ToolAccuracy(threshold=ctx.config.tool_accuracy_threshold)
    latencies: dict[str, list[float]] = {"plain": [], "stream": []}
    ttfts: list[float] = []
    first_body: Any = None
    streak = 0
    for i, (mode, stream, name) in enumerate(forced_plan(ctx.config.tool_calls, suite)):
        if ctx.cancelled:  # abandoned by the runner: send nothing more
            acc.aborted = f"cancelled at the step deadline ({acc.requests} of {ctx.config.tool_calls} requests sent)"
            break
        messages = [{"role": "user", "content": suite.prompts[i % len(suite.prompts)]}]
        r = _call(ctx, messages, stream, **forced_call(suite, name if mode == "named" else None))
        acc.add_forced(i, mode, stream, r, suite, name, _failure_text(r))
        if r.ok:
            latencies["stream" if stream else "plain"].append(r.e2e_s)
            if r.ttft_s is not None:
                ttfts.append(r.ttft_s)
        elif first_body is None and r.failure is not None:
            first_body = body_view(r.failure) or r.failure.message
        streak = streak + 1 if (r.failure is not None and r.failure.kind in TRANSPORT_KINDS) else 0
        if streak >= ABORT_AFTER_TRANSPORT_FAILURES:
            acc.aborted = (
                f"aborted after {streak} consecutive transport failures "
                f"({acc.requests} of {ctx.config.tool_calls} requests sent)"
            )
            break

    if not acc.aborted and not ctx.cancelled:
        question = [{"role": "user", "content": "Just say hello; do not use any tool."}]
        none = _call(ctx, question, False, tools=suite.tools, tool_choice="none", max_tokens=ctx.config.max_tokens)
        acc.add_no_call_probe("tool_choice=none", none, _failure_text(none))
        plain = _call(
            ctx, [{"role": "user", "content": "What is two plus two?"}], True, max_tokens=ctx.config.max_tokens
        )
        acc.add_no_call_probe("plain question, no tools", plain, _failure_text(plain))

    for kind, values in latencies.items():
        if values:
            ctx.time(f"{kind}_median", statistics.median(values))
            ctx.time(f"{kind}_max", max(values))
    if ttfts:
        ctx.time("stream_ttft_median", statistics.median(ttfts))

    details = {"accuracy": acc.to_dict(), "tool_schema_file": suite.source}
    evidence = {
        "summary": acc.summary(),
        "first_problems": acc.examples[:4],
        "server_messages": acc.failure_messages[:3],
    }
    if first_body is not None:
        evidence["first_error_body"] = first_body
    if acc.requests and not acc.answered and acc.failure_messages:
        verb = "refused" if all(m.startswith("HTTP 4") for m in acc.failure_messages) else "failed"
        extra = f"; {acc.aborted}" if acc.aborted else ""
        return failed(
            f"every tool request {verb} ({acc.requests} sent{extra}): {acc.failure_messages[0]}", evidence, **details
        )
    problems = acc.problems()
    if problems:
        return failed("; ".join(problems), evidence, **details)
    return passed(acc.summary(), evidence, **details)


STRUCTURED_PROMPT = [{"role": "user", "content": "Report the service status as JSON."}]


def _assistant_turn(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """The assistant message an OpenAI-style agent sends back: content null, the call verbatim."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


@register("structured_agent", "Structured output and agent round trip", 6)
def structured_agent(ctx: StepContext) -> Outcome:
    """A json_schema response validated with jsonschema; then call → tool result → follow-up answer."""
    try:
        suite = tool_suite(ctx)
    except ValueError as exc:
        return failed(str(exc))
    problems: list[str] = []
    evidence: dict[str, Any] = {}

    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "canary_status", "strict": True, "schema": suite.response_schema},
    }
    s = _call(ctx, STRUCTURED_PROMPT, False, response_format=fmt, max_tokens=96)
    ctx.time("structured", s.e2e_s)
    evidence["structured"] = {"content": s.content[:300], "finish_reason": s.finish_reason, "failure": _failure_text(s)}
    if not s.ok:
        problems.append(f"structured output: {_failure_text(s)}")
    else:
        try:
            value = json.loads(s.content)
        except ValueError as exc:
            problems.append(f"structured output is not JSON ({exc}); finish_reason={s.finish_reason}")
        else:
            errs = schema_errors(value, suite.response_schema)
            if errs:
                problems.append(f"structured output violates its schema: {'; '.join(errs[:3])}")

    user = {"role": "user", "content": suite.prompts[0]}
    first = _call(ctx, [user], False, **forced_call(suite))
    ctx.time("tool_call", first.e2e_s)
    evidence["tool_call"] = {"calls": [c.to_dict() for c in first.tool_calls], "failure": _failure_text(first)}
    round_trip: dict[str, Any] = {"accepted": False}
    if not first.ok:
        problems.append(f"agent round trip, tool call: {_failure_text(first)}")
    elif not first.tool_calls:
        problems.append(f"agent round trip: no tool call returned (finish_reason={first.finish_reason})")
    else:
        call = first.tool_calls[0]
        result = suite.tool_results.get(call.name, {"ok": True})
        messages = [
            user,
            _assistant_turn(call.id or "call_0", call.name, call.arguments),
            {"role": "tool", "tool_call_id": call.id or "call_0", "content": json.dumps(result)},
        ]
        # No tool_choice: an agent's follow-up turn leaves it to the server default ("auto" with tools).
        for stream in (False, True):
            if ctx.cancelled:
                break
            label = "follow_up_stream" if stream else "follow_up"
            f = _call(ctx, messages, stream, tools=suite.tools, max_tokens=ctx.config.max_tokens)
            ctx.time(label, f.e2e_s)
            evidence[label] = {
                "status": f.status_code,
                "finish_reason": f.finish_reason,
                "content": f.content[:200],
                "failure": _failure_text(f),
                "body": body_view(f.failure),
            }
            if not f.ok:
                problems.append(
                    f"agent round trip, {label.replace('_', ' ')} after the tool result: {_failure_text(f)}"
                )
            round_trip[label] = f.ok
        round_trip["accepted"] = all(round_trip.get(k) for k in ("follow_up", "follow_up_stream"))
        round_trip["tool"] = call.name
    details = {"round_trip": round_trip, "response_schema": suite.response_schema}
    if problems:
        return failed("; ".join(problems), evidence, **details)
    return passed(
        f"json_schema output valid ({s.content[:60]}); round trip via {round_trip.get('tool')} accepted "
        f"(plain and stream)",
        evidence,
        **details,
    )
