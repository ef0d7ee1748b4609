"""The controlled experiment: same system prompt and tools, only the tail varied.

Why this shape: it isolates the cache. Request 1 is cold (a per-run nonce at the very start of
the system prompt makes its blocks new even on a server that saw this experiment before); every
later request shares the prefix, so its ``cached_tokens`` should equal the full blocks of the
shared prefix and its TTFT should drop. Requests run one after another (so request 1 has filled
the cache before request 2 arrives), at temperature 0, bounded in count and seconds.

Counters are cumulative since server start, so only deltas between a scrape before and a
scrape after count; they are engine-wide, so other traffic during the run inflates them (the
result compares them with the per-request numbers and says when they disagree).
"""

from __future__ import annotations

import random
import secrets
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client import ChatResult, EndpointClient
from ..display import banner, bullets, html_table
from ..metrics import MetricsSnapshot
from ..records import Record
from .gpu import GpuMemory, gpu_memory
from .granularity import HitGranularity

#: ordinary words for generated prompts: deterministic text whose token count we calibrate.
_WORDS = (
    "cluster node driver kernel image model server request token cache block prefix memory queue "
    "latency budget canary stage evidence runbook operator platform owner review change window "
    "schedule tenant quota replica engine router session policy retry timeout metric counter gauge "
    "histogram sample label config launch startup health version commit rollout rollback approve "
    "verify record report table figure verdict reason detail source target endpoint client stream"
).split()

DEFAULT_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_node_status",
            "description": "Return the health of one cluster node.",
            "parameters": {
                "type": "object",
                "properties": {"node": {"type": "string", "pattern": "^node-[0-9]{1,3}$"}},
                "required": ["node"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "open_change",
            "description": "Open a change record for a node.",
            "parameters": {
                "type": "object",
                "properties": {
                    "node": {"type": "string"},
                    "kind": {"type": "string", "enum": ["driver", "image", "config"]},
                },
                "required": ["node", "kind"],
            },
        },
    },
]


def filler_text(words: int, seed: int | str) -> str:
    """Deterministic sentence-like text of ``words`` words (a seed picks the sequence)."""
    rng = random.Random(str(seed))
    out, sentence = [], []
    for _ in range(max(0, words)):
        sentence.append(rng.choice(_WORDS))
        if len(sentence) >= rng.randint(8, 14):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def tokens_per_word(client: EndpointClient | None) -> tuple[float, str]:
    """Calibrate the generator against the server's tokenizer; 1.3 when /tokenize is missing."""
    if client is not None:
        probe = filler_text(400, "calibrate")
        resp = client.tokenize(probe, timeout_s=30)
        if resp.ok and isinstance(resp.data, dict) and resp.data.get("count"):
            return float(resp.data["count"]) / 400.0, "tokenize"
    return 1.3, "assumed 1.3 tokens/word"


def count_tokens(client: EndpointClient | None, messages: Sequence[Mapping[str, Any]], **extra: Any) -> int | None:
    """Prompt tokens of a chat request as the server renders it (chat template, tools)."""
    if client is None:
        return None
    ids = token_ids(client, messages, **extra)
    return len(ids) if ids is not None else None


def token_ids(client: EndpointClient, messages: Sequence[Mapping[str, Any]], **extra: Any) -> list[int] | None:
    """The prompt's token ids through the server's /tokenize (its own chat template)."""
    return client.token_ids(messages, **extra)[0]


def common_prefix_len(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements two sequences share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@dataclass
class ExperimentSpec(Record):
    """What the N requests share and how they vary; built by ``build_spec`` or by hand."""

    SCHEMA = "prefix_cache_experiment_spec"
    system_prompt: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    tails: list[str] = field(default_factory=list)
    image_url: str | None = None  # the same image in every request, before the tail
    nonce: str = ""
    target_shared_tokens: int | None = None
    max_tokens: int = 8
    tool_choice: str | None = "none"  # prompt still carries the tools; needs no tool parser

    def messages(self, i: int, tail: str | None = None) -> list[dict[str, Any]]:
        """Request ``i``'s messages: the shared system prompt, then its own tail."""
        if tail is None:
            tail = self.tails[i % len(self.tails)] if self.tails else f"Question {i}: summarise node {i}."
        user: Any = tail
        if self.image_url:
            user = [{"type": "image_url", "image_url": {"url": self.image_url}}, {"type": "text", "text": tail}]
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}]

    def params(self) -> dict[str, Any]:
        """The request parameters every request shares (temperature 0, tools)."""
        p: dict[str, Any] = {"temperature": 0}
        if self.tools:
            p["tools"] = self.tools
            if self.tool_choice:
                p["tool_choice"] = self.tool_choice
        return p

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON without the long prompt text (scraps stay small)."""
        data = super().to_dict()
        data["system_prompt"] = self.system_prompt[:200] + ("…" if len(self.system_prompt) > 200 else "")
        data["system_prompt_chars"] = len(self.system_prompt)
        return data


def build_spec(
    client: EndpointClient | None,
    shared_prompt_tokens: int,
    requests: int,
    *,
    tools: list[dict[str, Any]] | None = None,
    image_url: str | None = None,
    nonce: str | None = None,
    max_tokens: int = 8,
) -> ExperimentSpec:
    """A spec whose shared prefix (system prompt + tools, as rendered) is about ``shared_prompt_tokens``.

    Tools are included only when they fit in the target; the nonce opens the system prompt so the
    first request of every run is a cold miss.
    """
    nonce = nonce or secrets.token_hex(4)
    tools = DEFAULT_TOOLS if tools is None else tools
    tails = [f"Request {i}: {filler_text(6, f'tail-{nonce}-{i}')}" for i in range(max(1, requests))]
    head = f"Run {nonce}. You are the on-call assistant for a GPU serving platform."
    ratio, _ = tokens_per_word(client)
    base = ExperimentSpec(head, list(tools), tails, image_url, nonce, shared_prompt_tokens, max_tokens)
    overhead = _shared_tokens(client, base)
    if overhead is not None and tools and overhead > shared_prompt_tokens:
        base.tools = []
        overhead = _shared_tokens(client, base)
    if overhead is None:  # no /tokenize: estimate from words alone
        overhead = int(len(head.split()) * ratio) + (150 * len(base.tools))
    words = max(0, int((shared_prompt_tokens - overhead) / ratio))
    body = filler_text(words, f"system-{nonce}")
    base.system_prompt = f"{head} {body}".strip() if words else head
    # One correction step against the real count keeps the target within a few tokens.
    got = _shared_tokens(client, base)
    if got is not None and words:
        words = max(0, words + int((shared_prompt_tokens - got) / ratio))
        base.system_prompt = f"{head} {filler_text(words, f'system-{nonce}')}".strip()
    return base


def _shared_tokens(client: EndpointClient | None, spec: ExperimentSpec) -> int | None:
    """Common token prefix of two requests of ``spec`` (system prompt + tools + template)."""
    if client is None:
        return None
    extra = {"tools": spec.tools or None}
    a = token_ids(client, spec.messages(0), **extra)
    b = token_ids(client, spec.messages(1), **extra)
    if a is None or b is None:
        return None
    return common_prefix_len(a, b)


@dataclass
class RequestObservation(Record):
    """One request of the experiment as the client saw it."""

    SCHEMA = "prefix_cache_request"
    index: int
    ok: bool
    ttft_s: float | None = None
    e2e_s: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    expected_cached: int | None = None
    response: str = ""
    finish_reason: str | None = None
    error: str = ""


@dataclass
class CounterDeltas(Record):
    """Per-run changes of the prefix-cache counters (None = the server lacks the family)."""

    SCHEMA = "prefix_cache_counter_deltas"
    ok: bool = True
    reason: str = ""
    queries: float | None = None
    hits: float | None = None
    prompt_tokens_cached: float | None = None
    prompt_tokens: float | None = None
    by_source: dict[str, float] = field(default_factory=dict)  # "<engine>/<source>" -> delta
    hits_by_engine: dict[str, float] = field(default_factory=dict)
    kv_usage_before: float | None = None
    kv_usage_after: float | None = None
    resets: list[str] = field(default_factory=list)
    interval_s: float = 0.0
    renamed: dict[str, str] = field(default_factory=dict)

    @property
    def flat(self) -> bool:
        """True when no counter moved (caching off, or counters not exported)."""
        return not (self.queries or self.hits or self.prompt_tokens_cached)

    def rows(self) -> list[dict[str, Any]]:
        """One row per counter delta, for the table and the figure."""
        rows = [
            {"counter": "prefix_cache_queries (tokens)", "delta": self.queries},
            {"counter": "prefix_cache_hits (tokens)", "delta": self.hits},
            {"counter": "prompt_tokens_cached", "delta": self.prompt_tokens_cached},
            {"counter": "prompt_tokens", "delta": self.prompt_tokens},
        ]
        rows += [{"counter": f"prompt_tokens_by_source {k}", "delta": v} for k, v in sorted(self.by_source.items())]
        rows.append(
            {
                "counter": "kv_cache_usage_perc before → after",
                "delta": f"{self.kv_usage_before} → {self.kv_usage_after}",
            }
        )
        return rows


def counter_deltas(before: MetricsSnapshot | None, after: MetricsSnapshot | None, reason: str = "") -> CounterDeltas:
    """Deltas of the cache counters between two scrapes; a counter that went down means a restart."""
    if before is None or after is None:
        return CounterDeltas(ok=False, reason=reason or "metrics scrape failed")
    out = CounterDeltas(interval_s=round(max(0.0, after.monotonic_s - before.monotonic_s), 3))
    out.renamed = after.renamed()

    def delta(name: str) -> float | None:
        a, b = after.value(name), before.value(name)
        if a is None:
            return None
        if b is not None and a < b:
            out.resets.append(name)
            return None
        return a - (b or 0.0)

    out.queries = delta("vllm:prefix_cache_queries")
    out.hits = delta("vllm:prefix_cache_hits")
    out.prompt_tokens_cached = delta("vllm:prompt_tokens_cached")
    out.prompt_tokens = delta("vllm:prompt_tokens")
    out.by_source = _grouped_delta(before, after, "vllm:prompt_tokens_by_source", ("engine", "source"))
    out.hits_by_engine = _grouped_delta(before, after, "vllm:prefix_cache_hits", ("engine",))
    out.kv_usage_before = before.value("vllm:kv_cache_usage_perc")
    out.kv_usage_after = after.value("vllm:kv_cache_usage_perc")
    if out.resets:
        out.ok, out.reason = False, "counters went down between scrapes (server restarted?): " + ", ".join(out.resets)
    return out


def _grouped_delta(
    before: MetricsSnapshot, after: MetricsSnapshot, name: str, keys: tuple[str, ...]
) -> dict[str, float]:
    def grouped(snap: MetricsSnapshot) -> dict[str, float]:
        fam = snap.family(name)
        if fam is None:
            return {}
        out: dict[str, float] = {}
        for s in fam.series():
            k = "/".join(s.labels.get(key, "") for key in keys)
            out[k] = out.get(k, 0.0) + s.value
        return out

    a, b = grouped(after), grouped(before)
    return {k: v - b.get(k, 0.0) for k, v in a.items()}


def scrape(client: EndpointClient) -> tuple[MetricsSnapshot | None, str]:
    """One /metrics snapshot, or None and the reason."""
    res = client.metrics()
    if res.ok and res.snapshot is not None:
        return res.snapshot, ""
    return None, (res.failure.message if res.failure else "metrics scrape failed")


@dataclass
class ExperimentResult(Record):
    """Per-request observations, per-run counter deltas and GPU memory, plus what was expected."""

    SCHEMA = "prefix_cache_experiment"
    spec: ExperimentSpec | None = None
    requested: int = 0
    observations: list[RequestObservation] = field(default_factory=list)
    deltas: CounterDeltas = field(default_factory=CounterDeltas)
    gpu_before: GpuMemory | None = None
    gpu_after: GpuMemory | None = None
    shared_tokens: int | None = None  # measured through /tokenize
    unit_tokens: int | None = None
    expected_cached: int | None = None  # for every request after the first
    stopped_by: str = ""  # "" | "max_seconds" | "max_requests" | "errors"
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    # -- derived views -------------------------------------------------------------------------
    @property
    def ok_observations(self) -> list[RequestObservation]:
        """Requests that got an answer."""
        return [o for o in self.observations if o.ok]

    @property
    def later(self) -> list[RequestObservation]:
        """Answered requests after the first (the ones that should hit)."""
        return [o for o in self.ok_observations if o.index > 0]

    @property
    def cached_reported(self) -> bool:
        """Whether the server reports cached_tokens at all (--enable-prompt-tokens-details)."""
        return any(o.cached_tokens is not None for o in self.ok_observations)

    def later_cached(self) -> list[int]:
        """cached_tokens of every later request."""
        return [o.cached_tokens or 0 for o in self.later]

    def first_ttft(self) -> float | None:
        """Time to first token of the cold request."""
        first = next((o for o in self.ok_observations if o.index == 0), None)
        return first.ttft_s if first else None

    def later_ttft_median(self) -> float | None:
        """Median time to first token of the later requests."""
        vals = [o.ttft_s for o in self.later if o.ttft_s is not None]
        return statistics.median(vals) if vals else None

    def sum_prompt_tokens(self) -> int:
        """Prompt tokens over all answered requests (compared with the counters)."""
        return sum(o.prompt_tokens or 0 for o in self.ok_observations)

    def sum_cached(self) -> int:
        """cached_tokens over all answered requests (compared with the counters)."""
        return sum(o.cached_tokens or 0 for o in self.ok_observations)

    def counters_agree(self) -> bool | None:
        """Do the counter deltas match the per-request numbers? None when either is missing."""
        d = self.deltas
        if not d.ok or d.queries is None or d.hits is None or not self.cached_reported:
            return None
        # Engine-wide counters: other traffic can only add, never remove.
        return (
            d.hits >= self.sum_cached()
            and d.queries >= self.sum_prompt_tokens()
            and (d.hits - self.sum_cached() <= 0.05 * max(1.0, d.queries))
        )

    def key_figures(self) -> dict[str, Any]:
        """Per-request numbers reduced to a fixed set of figures (the lists stay in the scraps)."""
        first = next((o for o in self.ok_observations if o.index == 0), None)
        cached = [o.cached_tokens for o in self.later if o.cached_tokens is not None]
        prompts = [o.prompt_tokens for o in self.later if o.prompt_tokens is not None]
        return {
            "cached_tokens_first": first.cached_tokens if first else None,
            "cached_tokens_later_median": statistics.median(cached) if cached else None,
            "cached_tokens_later_min": min(cached) if cached else None,
            "later_requests": len(self.later),
            "later_requests_hit": sum(c > 0 for c in cached) if cached else None,
            "prompt_tokens_first": first.prompt_tokens if first else None,
            "prompt_tokens_later_median": statistics.median(prompts) if prompts else None,
        }

    def figures(self) -> dict[str, Any]:
        """Headline figures: bounded, whatever the number of requests."""
        return {
            "requests_sent": len(self.observations),
            "requests_ok": len(self.ok_observations),
            "shared_prefix_tokens": self.shared_tokens,
            "expected_cached_tokens": self.expected_cached,
            **self.key_figures(),
            "ttft_first_s": _r(self.first_ttft()),
            "ttft_later_median_s": _r(self.later_ttft_median()),
            "queries_delta": self.deltas.queries,
            "hits_delta": self.deltas.hits,
            "prompt_tokens_cached_delta": self.deltas.prompt_tokens_cached,
            "counters_agree": self.counters_agree(),
        }

    def figure(self) -> Any:
        """TTFT and cached tokens per request (a figure that displays itself)."""
        from ..display import FigureView
        from .figures import experiment_figure

        return FigureView(experiment_figure(self))

    def _repr_html_(self) -> str:
        later = self.later_cached()
        title = f"{len(self.ok_observations)}/{len(self.observations)} requests; later cached {later}"
        detail = (
            f"shared prefix {self.shared_tokens} tokens, expected {self.expected_cached} cached per later request; "
            f"TTFT first {_r(self.first_ttft())} s, later median {_r(self.later_ttft_median())} s"
        )
        if self.stopped_by:
            detail += f"; stopped by {self.stopped_by}"
        rows = [o.to_dict() for o in self.observations]
        cols = ["index", "ok", "ttft_s", "prompt_tokens", "cached_tokens", "expected_cached", "response", "error"]
        gpu = self.gpu_after or self.gpu_before
        gpu_line = (
            f"GPU memory used: {self.gpu_before.used_mib if self.gpu_before else None} → "
            f"{self.gpu_after.used_mib if self.gpu_after else None} MiB"
            if gpu and gpu.available
            else f"GPU memory: unavailable ({gpu.reason if gpu else 'not read'})"
        )
        return (
            banner(title, detail, "unknown")
            + html_table(rows, cols)
            + "<h4>Counter deltas (this run only)</h4>"
            + html_table(self.deltas.rows())
            + bullets([gpu_line, *self.notes])
        )


def _r(v: float | None, nd: int = 4) -> float | None:
    return None if v is None else round(v, nd)


def run_experiment(
    client: EndpointClient,
    spec: ExperimentSpec,
    *,
    requests: int = 5,
    granularity: HitGranularity | None = None,
    max_requests: int = 20,
    max_seconds: float = 120.0,
    request_timeout_s: float = 60.0,
    read_gpu: bool = True,
) -> ExperimentResult:
    """Send the requests one by one and read counters before and after. Never raises."""
    n = max(0, min(requests, max_requests))
    unit = granularity.unit_tokens if granularity else None
    result = ExperimentResult(spec=spec, requested=requests, unit_tokens=unit)
    if requests > max_requests:
        result.stopped_by = "max_requests"
        result.notes.append(f"{requests} requests asked, bounded to max_requests={max_requests}")
    result.shared_tokens = _shared_tokens(client, spec)
    if result.shared_tokens is None:
        result.notes.append("/tokenize unavailable: the shared prefix length is not measured")
    result.gpu_before = gpu_memory(client.base_url) if read_gpu else None
    before, why = scrape(client)
    start = time.monotonic()
    deadline = start + max_seconds
    failures = 0
    for i in range(n):
        left = deadline - time.monotonic()
        if left <= 0:
            result.stopped_by = "max_seconds"
            result.notes.append(f"stopped after {i} requests: max_seconds={max_seconds} reached")
            break
        res = client.chat_stream(
            spec.messages(i),
            max_tokens=spec.max_tokens,
            timeout_s=min(request_timeout_s, left),
            total_timeout_s=max(1.0, min(request_timeout_s, left)),
            **spec.params(),
        )
        result.observations.append(_observe(i, res))
        if not res.ok:
            failures += 1
            if failures >= 3 and failures > len(result.observations) // 2:
                result.stopped_by = "errors"
                result.notes.append("stopped: most requests failed")
                break
    result.elapsed_s = round(time.monotonic() - start, 3)
    after, why_after = scrape(client)
    result.deltas = counter_deltas(before, after, why or why_after)
    result.gpu_after = gpu_memory(client.base_url) if read_gpu else None
    if granularity is not None and granularity.assumed:
        result.notes.append("block size not reported (no cache_config_info): expected cached tokens not computed")
    elif granularity is not None and result.shared_tokens is not None:
        prompts = [o.prompt_tokens for o in result.ok_observations if o.prompt_tokens]
        prompt = min(prompts) if prompts else None
        result.expected_cached = granularity.cacheable(result.shared_tokens, prompt)
        for o in result.observations:
            o.expected_cached = 0 if o.index == 0 else result.expected_cached
    if result.ok_observations and not result.cached_reported:
        result.notes.append(
            "the server does not report usage.prompt_tokens_details.cached_tokens "
            "(start it with --enable-prompt-tokens-details); judging from counters only"
        )
    return result


def _observe(i: int, res: ChatResult) -> RequestObservation:
    obs = RequestObservation(
        index=i,
        ok=res.ok,
        ttft_s=_r(res.ttft_s, 5),
        e2e_s=_r(res.e2e_s, 5),
        prompt_tokens=res.usage.prompt_tokens if res.usage else None,
        cached_tokens=res.usage.cached_tokens if res.usage else None,
        response=(res.content or "")[:80],
        finish_reason=res.finish_reason,
    )
    if not res.ok and res.failure is not None:
        obs.error = f"{res.failure.kind}: {res.failure.error_message or res.failure.message}"[:300]
    return obs
