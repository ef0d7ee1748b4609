"""Integration: the client and metrics against the real vLLM CPU target (tiny local model)."""

from __future__ import annotations

import jsonschema
import pytest

from vllm_runbooks.client import EndpointClient, FailureKind
from vllm_runbooks.metrics import diff
from vllm_runbooks.target import SERVED_MODEL_NAME, TargetHandle

pytestmark = [pytest.mark.server, pytest.mark.slow]

WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit", "days"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather forecast for a city.",
            "strict": True,  # vLLM 0.32 constrains arguments to the schema only for strict tools
            "parameters": WEATHER_PARAMS,
        },
    }
]
ASK = [{"role": "user", "content": "What is the weather in Paris for 3 days?"}]


def long_system_prompt(tag: str = "", words: int = 60) -> str:
    """A deterministic prompt of roughly ``words`` × 10 tokens (tiny vocabulary); ``tag`` changes the end."""
    body = " ".join(f"rule{i} keep the cache warm" if i % 2 else f"policy{i}" for i in range(words))
    return f"You are the canary assistant. {body} {tag}".strip()


def test_health_models_version(target_client: EndpointClient) -> None:
    assert target_client.health().ok
    models = target_client.models()
    assert models.ok and models.model_ids == [SERVED_MODEL_NAME]
    version = target_client.version()
    assert version.ok and version.data["version"] == "0.32.0"


def test_chat_plain(target_client: EndpointClient) -> None:
    r = target_client.chat(ASK, max_tokens=12, temperature=0)
    assert r.ok, r.failure
    assert r.finish_reason in ("length", "stop")
    assert r.usage is not None and r.usage.completion_tokens and r.usage.completion_tokens <= 12
    assert r.usage.prompt_tokens and r.usage.prompt_tokens > 5
    assert r.cached_tokens is not None  # --enable-prompt-tokens-details is on
    assert r.model == SERVED_MODEL_NAME


def test_chat_streaming_timings_and_usage(target_client: EndpointClient) -> None:
    r = target_client.chat_stream(ASK, max_tokens=16, temperature=0, ignore_eos=True, total_timeout_s=60)
    assert r.ok, r.failure
    assert r.done and r.stream
    assert r.ttft_s is not None and 0 < r.ttft_s <= r.e2e_s
    assert r.usage is not None and r.usage.completion_tokens == 16  # include_usage's final chunk
    # one gap between consecutive content-bearing chunks: at most 15 for 16 tokens
    assert 1 <= len(r.inter_token_s) <= 15
    assert all(g >= 0 for g in r.inter_token_s)
    assert r.content


def test_completion_and_tokenize(target_client: EndpointClient) -> None:
    c = target_client.completion("hello world", max_tokens=5, ignore_eos=True)
    assert c.ok and c.data["usage"]["completion_tokens"] == 5
    t = target_client.tokenize("hello world")
    assert t.ok and t.data["count"] == len(t.data["tokens"]) > 0
    chat_tokens = target_client.tokenize(messages=ASK)
    assert chat_tokens.ok and chat_tokens.data["count"] > t.data["count"]  # template adds markers


@pytest.mark.parametrize("stream", [False, True])
def test_required_tool_call_has_valid_json_arguments(target_client: EndpointClient, stream: bool) -> None:
    call = target_client.chat_stream if stream else target_client.chat
    r = call(ASK, max_tokens=200, tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    assert r.ok, r.failure
    assert r.finish_reason == "tool_calls"
    assert len(r.tool_calls) == 1 and r.tool_calls[0].name == "get_weather"
    args, error = r.tool_calls[0].parsed_arguments()
    assert error is None, r.tool_calls[0].arguments
    jsonschema.validate(args, WEATHER_PARAMS)


def test_auto_tool_choice_without_parser_is_400(target_no_tool_parser: TargetHandle) -> None:
    with EndpointClient(target_no_tool_parser.base_url, model=SERVED_MODEL_NAME) as c:
        r = c.chat(ASK, tools=TOOLS, tool_choice="auto")
    assert not r.ok and r.failure is not None
    assert r.failure.kind == FailureKind.HTTP_STATUS and r.failure.status_code == 400
    assert "--enable-auto-tool-choice" in r.failure.error_message
    assert "--tool-call-parser" in r.failure.error_message


def test_metrics_families_present(target_client: EndpointClient) -> None:
    target_client.chat(ASK, max_tokens=4)
    m = target_client.metrics()
    assert m.ok and m.snapshot is not None
    snap = m.snapshot
    for family in (
        "vllm:cache_config_info",
        "vllm:prefix_cache_queries",
        "vllm:prefix_cache_hits",
        "vllm:kv_cache_usage_perc",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:prompt_tokens_cached",
    ):
        assert snap.family(family) is not None, family
    cfg = snap.cache_config()
    assert cfg["enable_prefix_caching"] == "True" and cfg["block_size"] == "128"
    assert snap.renamed() == {}
    assert snap.histogram("vllm:time_to_first_token_seconds").count >= 1  # type: ignore[union-attr]


def test_cached_tokens_on_repeated_long_prompt(target_client: EndpointClient) -> None:
    system = long_system_prompt("shared-prefix-test")
    before = target_client.metrics().snapshot
    results = [
        target_client.chat(
            [{"role": "system", "content": system}, {"role": "user", "content": f"question {i}"}], max_tokens=2
        )
        for i in range(3)
    ]
    after = target_client.metrics().snapshot
    assert all(r.ok for r in results), [r.failure for r in results]
    prompt_tokens = results[0].usage.prompt_tokens  # type: ignore[union-attr]
    assert prompt_tokens and prompt_tokens > 3 * 128
    cached = [r.cached_tokens for r in results]
    assert cached[0] == 0
    # later requests reuse every full 128-token block of the shared prefix
    assert cached[1] == cached[2] and cached[1] >= 128 and cached[1] % 128 == 0
    assert cached[1] <= prompt_tokens
    assert before is not None and after is not None
    delta = diff(before, after, ["vllm:prefix_cache_hits", "vllm:prefix_cache_queries"])
    assert delta.get("vllm:prefix_cache_hits") == cached[1] + cached[2]
    assert delta.get("vllm:prefix_cache_queries") == sum(r.usage.prompt_tokens for r in results)  # type: ignore[union-attr]


def test_no_prefix_caching_server_never_hits(target_no_prefix_caching: TargetHandle) -> None:
    with EndpointClient(target_no_prefix_caching.base_url, model=SERVED_MODEL_NAME) as c:
        system = long_system_prompt("no-cache")
        cached = [
            c.chat(
                [{"role": "system", "content": system}, {"role": "user", "content": "q"}], max_tokens=2
            ).cached_tokens
            for _ in range(2)
        ]
        snap = c.metrics().snapshot
    assert cached == [0, 0]
    assert snap is not None and snap.cache_config()["enable_prefix_caching"] == "False"
    assert snap.value("vllm:prefix_cache_hits") == 0.0


def test_small_kv_cache_evicts_a_shared_prefix(target_small_kv: TargetHandle) -> None:
    """16 blocks of KV: two other long prompts push the first one's blocks out (LRU, no TTL)."""
    with EndpointClient(target_small_kv.base_url, model=SERVED_MODEL_NAME) as c:
        prompts = {tag: long_system_prompt(tag, words=80) for tag in ("A", "B", "C", "D")}
        prompts = {tag: f"{tag} {text}" for tag, text in prompts.items()}  # differ from the first token

        def ask(tag: str) -> int | None:
            r = c.chat([{"role": "user", "content": prompts[tag]}], max_tokens=2)
            assert r.ok, r.failure
            assert r.usage is not None and 600 < (r.usage.prompt_tokens or 0) < 1500
            return r.cached_tokens

        first, again = ask("A"), ask("A")
        assert first == 0 and again and again >= 128
        for other in ("B", "C", "D"):  # 3 x ~7 blocks > 16 - 7: every block of A is reused
            ask(other)
        assert ask("A") == 0  # evicted before reuse
        cfg = c.metrics().snapshot.cache_config()  # type: ignore[union-attr]
    assert cfg["num_gpu_blocks"] == "17"
