"""Retention: does a warmed prefix survive until it is reused?

vLLM keeps freed blocks cached in an LRU free queue until their slots are needed; there is no
TTL, so retention is KV capacity against traffic. The check warms a prefix, confirms it hits,
sends distinct filler prompts totalling more than the capacity the server reports
(``kv_cache_size_tokens`` or ``num_gpu_blocks × block_size``), then re-sends the prefix. Bounded
in requests and seconds: on a large KV pool the bound ends the check first, and the result
says how many filler tokens would have been needed instead of running on.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from ..client import EndpointClient
from ..display import banner, bullets, html_table
from ..records import Record
from .experiment import CounterDeltas, ExperimentSpec, counter_deltas, filler_text, scrape, tokens_per_word
from .granularity import HitGranularity

FILL_FACTOR = 1.5  # filler tokens sent relative to the reported capacity


@dataclass
class RetentionResult(Record):
    """What happened to a warmed prefix after the KV pool was filled."""

    SCHEMA = "prefix_cache_retention"
    status: str  # retained | evicted | not_warm | bounded | unavailable
    reason: str = ""
    capacity_tokens: int | None = None
    capacity_from: str = ""
    expected_cached: int | None = None
    warm_cached: int | None = None  # cached tokens on the re-send right after warming
    after_cached: int | None = None  # cached tokens on the re-send after the fillers
    filler_requests: int = 0
    filler_tokens: int = 0  # prompt tokens the fillers actually sent
    filler_tokens_needed: int | None = None
    estimated_fit_tokens: int | None = None  # tokens that fit before the prefix is evicted
    elapsed_s: float = 0.0
    deltas: CounterDeltas | None = None
    notes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        """Bounded key figures for the headline."""
        return {
            "retention_status": self.status,
            "capacity_tokens": self.capacity_tokens,
            "warm_cached": self.warm_cached,
            "after_fill_cached": self.after_cached,
            "filler_tokens": self.filler_tokens,
            "estimated_fit_tokens": self.estimated_fit_tokens,
        }

    def _repr_html_(self) -> str:
        tone = {"retained": "good", "evicted": "bad"}.get(self.status, "unknown")
        rows = [{"field": k, "value": v} for k, v in self.figures().items()]
        rows.append({"field": "filler_requests", "value": self.filler_requests})
        return banner(f"Retention: {self.status}", self.reason, tone) + html_table(rows) + bullets(self.notes)


def run_retention(
    client: EndpointClient,
    spec: ExperimentSpec,
    granularity: HitGranularity,
    *,
    max_requests: int = 20,
    max_seconds: float = 120.0,
    filler_tokens: int | None = None,
    max_model_len: int | None = None,
    request_timeout_s: float = 60.0,
) -> RetentionResult:
    """Warm ``spec``'s prefix, fill the KV pool with distinct prompts, re-send the prefix. Never raises."""
    start = time.monotonic()
    deadline = start + max_seconds
    capacity = granularity.capacity_tokens
    out = RetentionResult("unavailable", capacity_tokens=capacity, capacity_from=granularity.capacity_from)
    if not capacity:
        out.reason = "the server reports no KV capacity (num_gpu_blocks / kv_cache_size_tokens)"
        return out
    max_model_len = max_model_len or _max_model_len(client) or 2048
    per_filler = filler_tokens or max(
        granularity.unit_tokens, min(max_model_len - 64, max(capacity // 2, granularity.unit_tokens), 4096)
    )
    needed_tokens = math.ceil(capacity * FILL_FACTOR)
    n_fillers = math.ceil(needed_tokens / per_filler)
    out.filler_tokens_needed = needed_tokens
    budget = max_requests - 3  # warm, warm re-send, final re-send
    if n_fillers > budget:
        out.status = "bounded"
        out.reason = (
            f"filling {capacity} tokens of KV needs about {n_fillers} filler requests of {per_filler} tokens; "
            f"max_requests={max_requests} allows {max(0, budget)}. Raise max_requests or check on a smaller pool."
        )
        out.estimated_fit_tokens = capacity
        return out

    before, why = scrape(client)

    def send(messages: list[dict[str, Any]], params: dict[str, Any]) -> tuple[int | None, int | None, str]:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, None, "max_seconds"
        res = client.chat_stream(
            messages,
            max_tokens=1,
            timeout_s=min(request_timeout_s, left),
            total_timeout_s=max(1.0, min(request_timeout_s, left)),
            **params,
        )
        if not res.ok:
            msg = res.failure.error_message if res.failure else "failed"
            return None, None, f"request failed: {msg}"[:300]
        u = res.usage
        return (u.prompt_tokens if u else None), (u.cached_tokens if u else None), ""

    params = spec.params()
    prompt_tokens, _, err = send(spec.messages(0, f"Retention warm-up {spec.nonce}."), params)
    if err:
        return _finish(out, "unavailable", f"warm-up {err}", start, before, client, why)
    _, warm_cached, err = send(spec.messages(0, f"Retention re-send {spec.nonce}."), params)
    out.warm_cached = warm_cached
    if err:
        return _finish(out, "unavailable", f"warm re-send {err}", start, before, client, why)
    if warm_cached is None:
        return _finish(
            out,
            "unavailable",
            "cached_tokens not reported (--enable-prompt-tokens-details)",
            start,
            before,
            client,
            why,
        )
    shared = prompt_tokens or 0
    out.expected_cached = warm_cached
    if warm_cached < granularity.unit_tokens:
        return _finish(
            out,
            "not_warm",
            f"the prefix does not hit even right after warming ({warm_cached} cached)",
            start,
            before,
            client,
            why,
        )

    ratio, _ = tokens_per_word(client)
    words = max(1, int(per_filler / ratio))
    for i in range(n_fillers):
        # A unique opening word makes every filler block new, so none of them hits the cache.
        text = f"Filler {spec.nonce}-{i}. " + filler_text(words, f"filler-{spec.nonce}-{i}")
        p, _, err = send([{"role": "user", "content": text}], {"temperature": 0})
        if err:
            if err == "max_seconds":
                return _finish(
                    out,
                    "bounded",
                    f"max_seconds reached after {i} fillers ({out.filler_tokens} tokens)",
                    start,
                    before,
                    client,
                    why,
                )
            out.notes.append(f"filler {i}: {err}")
            continue
        out.filler_requests += 1
        out.filler_tokens += p or 0

    _, after_cached, err = send(spec.messages(0, f"Retention final {spec.nonce}."), params)
    out.after_cached = after_cached
    if err:
        return _finish(out, "unavailable", f"final re-send {err}", start, before, client, why)
    if (after_cached or 0) >= warm_cached:
        out.estimated_fit_tokens = None
        status, reason = (
            "retained",
            (
                f"the prefix still hit ({after_cached} cached) after {out.filler_tokens} filler tokens "
                f"(capacity {capacity})"
            ),
        )
    else:
        # What fits before eviction: the pool minus the prefix's own blocks, bounded by what was sent.
        out.estimated_fit_tokens = min(out.filler_tokens, max(0, capacity - shared))
        status, reason = (
            "evicted",
            (
                f"the prefix hit {warm_cached} tokens when warm but {after_cached} after {out.filler_tokens} filler "
                f"tokens; about {out.estimated_fit_tokens} other tokens fit before it is evicted (capacity {capacity})"
            ),
        )
    return _finish(out, status, reason, start, before, client, why)


def _finish(
    out: RetentionResult, status: str, reason: str, start: float, before: Any, client: EndpointClient, why: str
) -> RetentionResult:
    out.status, out.reason = status, reason
    out.elapsed_s = round(time.monotonic() - start, 3)
    after, why_after = scrape(client)
    out.deltas = counter_deltas(before, after, why or why_after)
    return out


def _max_model_len(client: EndpointClient) -> int | None:
    resp = client.tokenize("x", timeout_s=30)
    if resp.ok and isinstance(resp.data, dict) and resp.data.get("max_model_len"):
        return int(resp.data["max_model_len"])
    return None
