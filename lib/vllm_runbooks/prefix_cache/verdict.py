"""The verdict, from a fixed vocabulary, with the evidence it rests on and the next step.

Order of the rules, first match wins: a server with caching off explains everything else; a
prefix below one hit unit cannot hit whatever else is right (decided only from a block size the
server reported: without ``cache_config_info`` the unit is a placeholder and the verdict says
``inconclusive`` and why, unless other evidence decides); a workload whose requests differ
early cannot share even on a healthy server; a prefix that hit when warm but not after filling
the KV pool is evicted; only then is a hit on every later request ``working``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..display import banner, esc
from ..records import Record
from .experiment import ExperimentResult
from .granularity import DEFAULT_BLOCK_SIZE, MISSING_CONFIG, HitGranularity
from .mismatch import HISTORY, IMAGE, MODEL, SALT, SYSTEM, TEMPLATE, TOOLS, MismatchReport
from .retention import RetentionResult
from .sources import Enablement, enablement_summary

WORKING = "working"
DISABLED = "disabled"
PREFIX_TOO_SHORT = "prefix_too_short"
PREFIX_MISMATCH = "prefix_mismatch"
EVICTED = "evicted"
INCONCLUSIVE = "inconclusive"
VERDICTS = (WORKING, DISABLED, PREFIX_TOO_SHORT, PREFIX_MISMATCH, EVICTED, INCONCLUSIVE)
TONES = {WORKING: "good", INCONCLUSIVE: "unknown"}

#: share of compared requests whose first difference is one component before it is "the" cause.
MISMATCH_SHARE = 0.25

NEXT_STEP_MISMATCH = {
    SYSTEM: "Move the variable part of the system prompt ({what}) to the end of the request, e.g. into the last "
    "user message, so the system prompt is byte-identical across requests.",
    TOOLS: "Fix tool ordering and serialisation: send the same tool definitions in a fixed order (sorted by name) "
    "with identical content on every request.",
    HISTORY: "Keep earlier turns byte-identical: do not rewrite, re-summarise or truncate history mid-session.",
    IMAGE: "Keep images at the same position and with the same bytes (same URL or data) across requests.",
    TEMPLATE: "Send the same chat_template and chat_template_kwargs for every request of a workload.",
    SALT: "Use one cache_salt per tenant or session, not per request: salted requests share no block.",
    MODEL: "Send a session's requests to the same model name / LoRA adapter: each has its own cache.",
}


@dataclass
class Verdict(Record):
    """The runbook's conclusion: one of ``VERDICTS``, why, and what to do next."""

    SCHEMA = "prefix_cache_verdict"
    verdict: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    next_step: str = ""
    figures: dict[str, Any] = field(default_factory=dict)

    def _repr_html_(self) -> str:
        tone = TONES.get(self.verdict, "bad")
        items = "".join(f"<li>{esc(e)}</li>" for e in self.evidence)
        return (
            banner(f"Verdict: {self.verdict}", self.summary, tone)
            + f"<p><b>Next step:</b> {esc(self.next_step)}</p><ul>{items}</ul>"
        )


def decide(
    enablement: Enablement | None,
    granularity: HitGranularity | None,
    experiment: ExperimentResult | None = None,
    mismatch: MismatchReport | None = None,
    retention: RetentionResult | None = None,
    *,
    endpoint_problem: str = "",
) -> Verdict:
    """Runbook 04's verdict from the steps that ran, first matching rule wins (module docstring)."""
    evidence: list[str] = []
    figures: dict[str, Any] = {}
    if enablement is not None:
        evidence.append("enablement: " + enablement_summary(enablement))
        evidence += [f"sources disagree: {c}" for c in enablement.conflicts]
        figures["enabled"] = enablement.effective
        figures["sources_agree"] = enablement.agree
    unit = granularity.unit_tokens if granularity else None
    assumed = granularity is None or granularity.assumed  # no reported block size: nothing rests on `unit`
    if granularity is not None:
        figures["min_hit_tokens"] = unit
        figures["block_size"] = granularity.block_size
        figures["block_size_assumed"] = granularity.assumed
        if granularity.assumed:
            evidence.append(
                f"smallest possible hit: unknown — {MISSING_CONFIG} ({DEFAULT_BLOCK_SIZE} is only a "
                "placeholder; CPU servers use 128, hybrid models larger units)"
            )
        else:
            evidence.append(f"smallest possible hit: {unit} tokens (units {granularity.units})")
    if endpoint_problem:
        evidence.append(f"endpoint: {endpoint_problem}")

    exp_ok = experiment is not None and bool(experiment.ok_observations)
    hits_seen = False
    if experiment is not None:
        figures.update(experiment.figures())
        d = experiment.deltas
        later = experiment.later_cached()
        hits_seen = any(c > 0 for c in later) or bool(d.hits)
        kf = experiment.key_figures()
        evidence.append(
            f"experiment: {len(experiment.ok_observations)}/{len(experiment.observations)} requests ok; "
            f"cached_tokens first {kf['cached_tokens_first']}, later median {kf['cached_tokens_later_median']}, "
            f"later min {kf['cached_tokens_later_min']} ({kf['later_requests_hit']}/{kf['later_requests']} later "
            f"requests hit); shared prefix "
            f"{experiment.shared_tokens} tokens → expected {experiment.expected_cached} cached per later request"
        )
        evidence.append(
            f"counter deltas: queries {d.queries}, hits {d.hits}, prompt_tokens_cached {d.prompt_tokens_cached}"
            + (f" ({d.reason})" if not d.ok else "")
            + f"; counters agree with responses: {experiment.counters_agree()}"
        )
        ft, lt = experiment.first_ttft(), experiment.later_ttft_median()
        if ft is not None and lt is not None:
            evidence.append(f"TTFT first {ft:.4f} s vs later median {lt:.4f} s")
        if len(d.hits_by_engine) > 1:
            evidence.append(f"hits by engine {d.hits_by_engine}: each data-parallel engine has its own cache")
    if mismatch is not None and mismatch.ok:
        figures["mismatch"] = mismatch.headline_figures()
        evidence.append(
            f"request analysis ({mismatch.method}): first differences {mismatch.component_counts}; median shared "
            f"prefix {mismatch.median_shared()} tokens"
        )
        if mismatch.example is not None and mismatch.cause:
            e = mismatch.example
            evidence.append(
                f"first difference in {e.component}: {e.detail}; earlier «{e.snippet_a}» later «{e.snippet_b}»"
                + (f" — looks like a {e.looks_like}" if e.looks_like else "")
            )
    elif mismatch is not None:
        evidence.append(f"request analysis not run: {mismatch.reason}")
    if retention is not None:
        figures["retention"] = retention.figures()
        evidence.append(f"retention: {retention.status} — {retention.reason}")

    def out(verdict: str, summary: str, step: str) -> Verdict:
        return Verdict(verdict, summary, evidence, step, figures)

    # 1. disabled
    if enablement is not None and enablement.effective == "off" and not hits_seen:
        return out(
            DISABLED,
            f"prefix caching is off ({enablement.effective_from})",
            "Add --enable-prefix-caching to the launch command and restart (hybrid models such as Kimi K3 need it "
            'explicitly); then cache_config_info should show enable_prefix_caching="True".',
        )
    if (
        exp_ok
        and experiment is not None
        and experiment.deltas.ok
        and experiment.deltas.queries == 0
        and experiment.sum_prompt_tokens() > 0
        and not hits_seen
        and (enablement is None or enablement.effective != "on")
    ):
        return out(
            DISABLED,
            "the prefix cache was never queried while requests were served",
            "Add --enable-prefix-caching to the launch command and restart.",
        )
    if enablement is not None and enablement.effective == "off" and hits_seen:
        evidence.append("enablement sources say off, yet hits were observed: the endpoint is not the server launched")

    # 2. the controlled shared prefix is below one unit (a unit the server reported, never the placeholder)
    if exp_ok and experiment is not None and unit and not assumed and experiment.shared_tokens is not None:
        if experiment.shared_tokens < unit:
            return out(
                PREFIX_TOO_SHORT,
                f"the shared prefix is {experiment.shared_tokens} tokens, below the {unit}-token unit: it never hits",
                f"Share at least {unit} tokens: put stable instructions and tool definitions first so the shared "
                f"prefix spans whole blocks; anything past the last full block is recomputed anyway.",
            )

    # 3. the workload's requests differ early
    if mismatch is not None and mismatch.ok and mismatch.cause and mismatch.cause_share >= MISMATCH_SHARE:
        what = (mismatch.example.looks_like if mismatch.example else "") or "whatever changes per request"
        step = NEXT_STEP_MISMATCH.get(mismatch.cause, "Make the early part of every request identical.").format(
            what=what
        )
        return out(
            PREFIX_MISMATCH,
            f"requests stop sharing at the {mismatch.cause.replace('_', ' ')} "
            f"({mismatch.cause_share:.0%} of requests; median shared prefix {mismatch.median_shared()} tokens)",
            step,
        )
    if mismatch is not None and mismatch.ok and not mismatch.cause and unit and not assumed:
        med = mismatch.median_shared()
        if med is not None and med < unit:
            return out(
                PREFIX_TOO_SHORT,
                f"the workload's requests share {med} tokens (median), below the {unit}-token unit",
                f"Share at least {unit} tokens of identical prefix (stable instructions and tools first).",
            )

    # 4. evicted before reuse
    if retention is not None and retention.status == "evicted":
        return out(
            EVICTED,
            retention.reason,
            "Size the KV cache up (--gpu-memory-utilization, --kv-cache-memory-bytes, a smaller --max-model-len) or "
            "lower concurrency (--max-num-seqs), and route a session to the same engine so its prefix is reused "
            "before it ages out of the LRU.",
        )

    # 5. working
    if exp_ok and experiment is not None:
        expected = experiment.expected_cached
        later = experiment.later_cached()
        if experiment.cached_reported and later and expected and not assumed:
            if all(c >= expected for c in later):
                summary = f"every later request took {expected} tokens from cache"
                if experiment.counters_agree() is False:
                    summary += " (counter deltas disagree: other traffic on this server?)"
                return out(WORKING, summary, "Nothing to change; keep this run as the baseline for later checks.")
        elif experiment.cached_reported and later and assumed:
            # No unit to compare with, but the responses themselves decide: every later request took the
            # same whole prefix from cache (a whole number of the server's own blocks).
            if all(c > 0 for c in later) and len(set(later)) == 1:
                return out(
                    WORKING,
                    f"every later request took {later[0]} tokens from cache (block size unknown: {MISSING_CONFIG}; "
                    "judged from the responses alone)",
                    "Nothing to change; keep this run as the baseline. Expose vllm:cache_config_info (a vLLM "
                    "version that exports it) so later runs can check the full cacheable prefix.",
                )
        elif not experiment.cached_reported and experiment.deltas.hits and expected and not assumed:
            n_later = len(experiment.later)
            if experiment.deltas.hits >= expected * n_later:
                return out(
                    WORKING,
                    f"prefix_cache_hits rose by {experiment.deltas.hits:.0f} tokens ({n_later} later requests)",
                    "Nothing to change; start the server with --enable-prompt-tokens-details for per-request proof.",
                )
        if hits_seen and assumed:
            return out(
                INCONCLUSIVE,
                f"some hits (later cached tokens min {min(later, default=None)}, max {max(later, default=None)}; "
                f"counter hits {experiment.deltas.hits}), but {MISSING_CONFIG}: whether every later request took "
                "the whole cacheable prefix cannot be told",
                "Expose vllm:cache_config_info (a vLLM version that exports it, /metrics reachable) and re-run; "
                "check for other traffic or several engines (route a session to the same engine).",
            )
        if hits_seen:
            return out(
                INCONCLUSIVE,
                f"some hits, but not the full shared prefix on every later request (later cached min "
                f"{min(later, default=None)}, max {max(later, default=None)}; expected {expected})",
                "Re-run with retention_check=True and check for other traffic or several engines (route a session "
                "to the same engine).",
            )
        if assumed:
            return out(
                INCONCLUSIVE,
                f"no request hit, and {MISSING_CONFIG}: the {experiment.shared_tokens}-token shared prefix may be "
                "shorter than one block (CPU servers use 128, hybrid models larger units)",
                "Expose vllm:cache_config_info (a vLLM version that exports it, /metrics reachable), or re-run with "
                "shared_prompt_tokens well above any block size (e.g. 4096); if that still never hits, run the "
                "retention check and check for several data-parallel engines.",
            )
        length = (
            "the shared prefix length was not measured (no /tokenize)"
            if experiment.shared_tokens is None
            else f"the {experiment.shared_tokens}-token shared prefix spans at least one {unit}-token unit"
        )
        return out(
            INCONCLUSIVE,
            f"caching is on and {length}, yet no request hit",
            "Run the retention check (KV pressure evicts prefixes) and check whether requests spread across "
            "data-parallel engines or replicas; route a session to the same engine.",
        )
    if experiment is not None and not exp_ok:
        errors = {o.error for o in experiment.observations if o.error}
        reason = "; ".join(sorted(errors))[:300] or endpoint_problem or "; ".join(experiment.notes) or "no request"
        return out(INCONCLUSIVE, f"the experiment could not run: {reason}", "Fix the endpoint and re-run.")
    return out(
        INCONCLUSIVE,
        endpoint_problem or "not enough evidence: no experiment ran",
        "Point the runbook at a reachable endpoint and re-run.",
    )
