"""Canary step 9: monitoring continuity — the /metrics families dashboards and runbooks read.

Why: a vLLM upgrade renames metrics (``gpu_cache_usage_perc`` → ``kv_cache_usage_perc``…) and a
dashboard silently goes flat. This step scrapes ``/metrics`` once and checks that every family
the runbooks read is present under some spelling, naming the spelling this version uses.
"""

from __future__ import annotations

from ..registry import Outcome, StepContext, describe_failure, failed, passed, register

#: Families the runbooks read (04 prefix cache, 05 load, the record's before/after), canonical names.
REQUIRED = (
    "vllm:kv_cache_usage_perc",
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "vllm:cache_config_info",
    "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:request_success",
)
#: Read when present; their absence is noted, not failed (version- or flag-dependent).
OPTIONAL = ("vllm:prompt_tokens_cached", "vllm:prompt_tokens_by_source")


@register("monitoring", "Monitoring continuity (/metrics families)", 9)
def monitoring(ctx: StepContext) -> Outcome:
    """Every required family present (under the name this vLLM uses); renamed ones listed."""
    scrape = ctx.client.metrics(timeout_s=min(ctx.timeout, 10.0))
    ctx.time("metrics", scrape.elapsed_s)
    if not scrape.ok or scrape.snapshot is None:
        return failed(f"/metrics unusable: {describe_failure(scrape.failure)}")
    snap = scrape.snapshot
    wire = {name: snap.resolve(name) for name in REQUIRED + OPTIONAL}
    missing = [n for n in REQUIRED if wire[n] is None]
    renamed = {n: w for n, w in wire.items() if w and w != n and not w.startswith(n)}
    details = {
        "families": {n: w for n, w in wire.items()},
        "missing": missing,
        "optional_missing": [n for n in OPTIONAL if wire[n] is None],
        "old_names_in_use": renamed,
        "families_exposed": len(snap.families),
    }
    if missing:
        return failed(
            f"{len(missing)} famil{'y' if len(missing) == 1 else 'ies'} missing: {', '.join(missing)}",
            details,
            **details,
        )
    note = f"; old names in use: {', '.join(renamed.values())}" if renamed else ""
    return passed(f"all {len(REQUIRED)} families the runbooks read are present{note}", details, **details)
