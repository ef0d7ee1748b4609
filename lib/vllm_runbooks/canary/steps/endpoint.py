"""Canary steps 2-4: model load only, a short text request, image input (separately).

Why in this order: each step assumes only what the one before proved, so the first failing
step names the layer that broke (serving process, text generation, multimodal processor).
"""

from __future__ import annotations

import re
from typing import Any

from ...client import ChatResult, env_proxies_ignored
from ..png import make_png, png_data_url
from ..registry import Outcome, StepContext, body_view, describe_failure, failed, passed, register, skipped
from ..serverlog import parse_server_log

#: vLLM's own refusals of image input by a text-only model (matched on its error message).
IMAGE_REFUSAL = re.compile(
    r"not a multimodal model|does not support (?:image|multi-?modal|vision)|image input.{0,40}not supported|"
    r"at most 0 image|limit_mm_per_prompt|multimodal.{0,40}not (?:enabled|supported)",
    re.I,
)


def _chat_view(r: ChatResult) -> dict[str, Any]:
    return {
        "ok": r.ok,
        "status": r.status_code,
        "finish_reason": r.finish_reason,
        "content": r.content[:200],
        "usage": r.usage.to_dict() if r.usage else None,
        "failure": describe_failure(r.failure) if r.failure else None,
        "body": body_view(r.failure),
    }


@register("model_load", "Model load only", 2)
def model_load(ctx: StepContext) -> Outcome:
    """/health, /v1/models lists the expected model, /version; startup lines when a log is given."""
    c, cfg = ctx.client, ctx.config
    health = c.health(timeout_s=ctx.timeout)
    ctx.time("health", health.elapsed_s)
    models = c.models(timeout_s=ctx.timeout)
    ctx.time("models", models.elapsed_s)
    version = c.version(timeout_s=ctx.timeout)
    ctx.time("version", version.elapsed_s)

    problems: list[str] = []
    notes: list[str] = []
    if not health.ok:
        problems.append(f"/health: {describe_failure(health.failure)}")
    ids = models.model_ids if models.ok else []
    if not models.ok:
        problems.append(f"/v1/models: {describe_failure(models.failure)}")
    elif not ids:
        problems.append("/v1/models lists no model")
    elif cfg.model and cfg.model not in ids:
        problems.append(f"expected model {cfg.model!r} is not served; /v1/models lists {ids}")
    if c.model is None:  # resolve once here so later steps do not each ask /v1/models again
        c.model = ids[0] if ids else (cfg.model or "")
    vllm_version = version.data.get("version") if version.ok and isinstance(version.data, dict) else None
    if not version.ok:
        if version.status_code == 404:
            notes.append("/version not exposed (404)")
        else:
            problems.append(f"/version: {describe_failure(version.failure)}")

    log: dict[str, Any] | None = None
    if cfg.server_log:
        log = parse_server_log(cfg.server_log)
        if log.get("startup_s") is not None:
            ctx.time("startup", log["startup_s"])
        if log.get("weights_load_s") is not None:
            ctx.time("weights_load", log["weights_load_s"])
        if log.get("error"):
            notes.append(log["error"])
    else:
        notes.append("no server_log given: startup time not measured")

    proxies = env_proxies_ignored()
    if proxies:  # the client never uses them: the canary talks to the endpoint and nothing else
        notes.append(f"environment proxies ignored ({', '.join(proxies)} set): requests went straight to the endpoint")

    evidence = {"models": ids, "version": vllm_version, "load_lines": (log or {}).get("load_lines", [])[:8]}
    details = {
        "models": ids,
        "model": c.model,
        "vllm_version": vllm_version,
        "server_log": log,
        "notes": notes,
        "env_proxies_ignored": proxies,
    }
    if problems:
        return failed("; ".join(problems), evidence, **details)
    reason = f"healthy; serving {c.model!r}; vLLM {vllm_version or '?'}"
    if log and log.get("startup_s") is not None:
        reason += f"; started in {log['startup_s']:.0f} s"
    return passed(reason + (f" ({'; '.join(notes)})" if notes else ""), evidence, **details)


TEXT_PROMPT = [{"role": "user", "content": "Reply with one short sentence: is the service up?"}]


@register("short_text", "Short text request", 3)
def short_text(ctx: StepContext) -> Outcome:
    """One plain and one streamed short chat: both must complete and produce tokens."""
    c, n = ctx.client, ctx.config.max_tokens
    plain = c.chat(TEXT_PROMPT, max_tokens=n, timeout_s=ctx.timeout)
    ctx.time("plain_e2e", plain.e2e_s)
    stream = c.chat_stream(TEXT_PROMPT, max_tokens=n, timeout_s=ctx.timeout, total_timeout_s=ctx.timeout)
    ctx.time("stream_ttft", stream.ttft_s)
    ctx.time("stream_e2e", stream.e2e_s)
    evidence = {"plain": _chat_view(plain), "stream": _chat_view(stream)}
    problems = []
    for label, r in (("plain", plain), ("stream", stream)):
        if not r.ok:
            problems.append(f"{label}: {describe_failure(r.failure)}")
        elif not r.content and not (r.usage and r.usage.completion_tokens):
            problems.append(f"{label}: answered with no tokens (finish_reason={r.finish_reason})")
    details = {
        "completion_tokens": {
            k: (r.usage.completion_tokens if r.usage else None) for k, r in (("plain", plain), ("stream", stream))
        }
    }
    if problems:
        return failed("; ".join(problems), evidence, **details)
    tokens = plain.usage.completion_tokens if plain.usage else None
    return passed(
        f"plain {plain.e2e_s:.2f} s ({tokens} tokens, {plain.finish_reason}); "
        f"stream TTFT {stream.ttft_s or 0:.3f} s, {stream.chunks} chunks",
        evidence,
        **details,
    )


@register("image_input", "Image input (separately)", 4)
def image_input(ctx: StepContext) -> Outcome:
    """A generated PNG as a data URL; a text-only model's refusal is a skip with vLLM's message."""
    png = make_png()
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What colour is the square in this image? One word."},
                {"type": "image_url", "image_url": {"url": png_data_url(png)}},
            ],
        }
    ]
    r = ctx.client.chat(messages, max_tokens=ctx.config.max_tokens, timeout_s=ctx.timeout)
    ctx.time("image_e2e", r.e2e_s)
    evidence = _chat_view(r)
    details = {"png_bytes": len(png)}
    if r.ok:
        prompt_tokens = r.usage.prompt_tokens if r.usage else None
        return passed(f"image accepted ({prompt_tokens} prompt tokens); answer {r.content[:60]!r}", evidence, **details)
    f = r.failure
    message = f.error_message if f else ""
    if f is not None and f.status_code == 400 and IMAGE_REFUSAL.search(message or ""):
        return skipped(
            f"text-only model refused image input: {message}", evidence, refusal=message, not_applicable=True, **details
        )
    return failed(f"image request failed: {describe_failure(f)}", evidence, **details)
