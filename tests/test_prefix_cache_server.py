"""Prefix-cache check against the real embedded vLLM (CPU block size 128), one verdict per case.

Each test uses a fresh per-run nonce in its shared prompt, so the cache state other tests left on
a shared session server cannot make request 1 warm; counter assertions use per-run deltas only.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from vllm_runbooks.execution.runjson import load_run
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.scraps import read_scraps
from vllm_runbooks.prefix_cache import PrefixCacheCheck
from vllm_runbooks.target import TargetHandle

pytestmark = [pytest.mark.server, pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "prefix_cache"
BLOCK = 128


def _check(handle: TargetHandle, **kw: object) -> PrefixCacheCheck:
    launch = "python -m vllm.entrypoints.openai.api_server " + shlex.join(handle.args)
    return PrefixCacheCheck(
        handle.base_url,
        model=handle.model,
        launch_command=launch,
        log_path=handle.log_path,
        max_requests=20,
        max_seconds=90,
        **kw,
    )  # type: ignore[arg-type]


def test_working_on_default_server(target: TargetHandle) -> None:
    check = _check(target)
    check.inputs()
    en = check.enablement()
    assert en.effective == "on" and en.agree
    assert [r.state for r in en.readings[:4]] == ["on", "on", "on", "on"]
    assert check.granularity().unit_tokens == BLOCK
    exp = check.experiment(requests=5, shared_prompt_tokens=520)
    assert exp.shared_tokens is not None and 3 * BLOCK <= exp.shared_tokens < 5 * BLOCK
    full_blocks = (exp.shared_tokens // BLOCK) * BLOCK
    cached = [o.cached_tokens for o in exp.observations]
    assert cached == [0] + [full_blocks] * 4, cached
    d = exp.deltas
    assert d.hits == sum(cached) == d.prompt_tokens_cached
    assert d.queries == sum(o.prompt_tokens or 0 for o in exp.observations)
    assert d.by_source["0/local_cache_hit"] == sum(cached)
    assert exp.counters_agree() is True
    assert not exp.gpu_before.available  # no GPU here: said so, not crashed
    v = check.decide()
    print("working:", {"cached": cached, "queries": d.queries, "hits": d.hits, "verdict": v.verdict})
    assert v.verdict == "working", v.evidence
    figs = v.figures
    assert (figs["cached_tokens_first"], figs["cached_tokens_later_min"]) == (0, full_blocks)
    assert figs["block_size"] == BLOCK and figs["block_size_assumed"] is False
    check.close()


def test_disabled_server(target_no_prefix_caching: TargetHandle) -> None:
    check = _check(target_no_prefix_caching)
    en = check.enablement()
    assert en.effective == "off" and en.agree
    assert en.reading("launch_command").state == "off"
    assert en.reading("log_non_default_args").state == "off"
    assert en.reading("cache_config_info").state == "off"
    exp = check.experiment(requests=4, shared_prompt_tokens=520)
    assert [o.cached_tokens for o in exp.observations] == [0, 0, 0, 0]
    assert exp.deltas.ok and exp.deltas.queries == 0 and exp.deltas.hits == 0  # counters flat
    v = check.decide()
    print(
        "disabled:",
        {
            "cached": [o.cached_tokens for o in exp.observations],
            "queries": exp.deltas.queries,
            "hits": exp.deltas.hits,
            "verdict": v.verdict,
        },
    )
    assert v.verdict == "disabled" and "--enable-prefix-caching" in v.next_step
    check.close()


def test_prefix_shorter_than_one_block(target: TargetHandle) -> None:
    check = _check(target)
    exp = check.experiment(requests=4, shared_prompt_tokens=60, tools=[])
    assert exp.shared_tokens is not None and exp.shared_tokens < BLOCK
    assert [o.cached_tokens for o in exp.observations] == [0, 0, 0, 0]
    assert check.fit().fits is False
    v = check.decide()
    print(
        "too_short:",
        {
            "shared": exp.shared_tokens,
            "cached": [o.cached_tokens for o in exp.observations],
            "queries": exp.deltas.queries,
            "hits": exp.deltas.hits,
            "verdict": v.verdict,
        },
    )
    assert v.verdict == "prefix_too_short", v.evidence
    assert str(BLOCK) in v.next_step
    check.close()


def test_timestamp_in_system_prompt_is_a_mismatch(target: TargetHandle) -> None:
    check = _check(target)
    check.experiment(requests=3, shared_prompt_tokens=520)
    mm = check.mismatch(str(DATA / "timestamp_system.jsonl"))
    assert mm.method == "tokenize"  # token-level through the server's /tokenize
    assert mm.cause == "system_prompt" and mm.example is not None and mm.example.looks_like == "timestamp"
    assert all(n < BLOCK for n in mm.shared_lengths)
    v = check.decide()
    print(
        "mismatch:",
        {
            "shared": mm.shared_lengths,
            "counts": mm.component_counts,
            "snippet": mm.example.snippet_b,
            "verdict": v.verdict,
        },
    )
    assert v.verdict == "prefix_mismatch"
    assert "timestamp" in v.next_step and "end" in v.next_step
    # The same analysis of the clean file finds the tail only, with thousands of shared tokens.
    clean = check.mismatch(str(DATA / "clean.jsonl"))
    assert clean.cause == "" and min(clean.shared_lengths) > 10 * BLOCK
    check.close()


def test_small_kv_cache_evicts(target_small_kv: TargetHandle) -> None:
    check = _check(target_small_kv)
    gran = check.granularity()
    assert gran.capacity_tokens is not None and gran.capacity_tokens <= 4096
    exp = check.experiment(requests=3, shared_prompt_tokens=400)
    assert exp.later_cached() == [exp.expected_cached] * 2  # it does hit while nothing competes
    ret = check.retention(True)
    assert ret.status == "evicted", ret.reason
    assert ret.warm_cached and ret.warm_cached >= BLOCK and ret.after_cached == 0
    assert ret.filler_tokens >= gran.capacity_tokens
    assert ret.estimated_fit_tokens is not None and 0 < ret.estimated_fit_tokens <= gran.capacity_tokens
    v = check.decide()
    print(
        "evicted:",
        {
            "exp_cached": [o.cached_tokens for o in exp.observations],
            **ret.figures(),
            "deltas": (ret.deltas.queries, ret.deltas.hits) if ret.deltas else None,
            "verdict": v.verdict,
        },
    )
    assert v.verdict == "evicted" and "KV cache" in v.next_step
    check.close()


def test_runbook_04_headline(target: TargetHandle, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    params = {
        "endpoint": target.base_url,
        "model": target.model,
        "requests": 4,
        "shared_prompt_tokens": 400,
        "requests_jsonl": str(DATA / "clean.jsonl"),
        "log_path": target.log_path,
        "max_requests": 10,
        "max_seconds": 60,
    }
    result = run_runbook("prefix_cache_check", params, run_dir)
    assert result.status == "ok", result.error
    assert result.headline and result.headline["runbook"] == "prefix_cache_check"
    assert result.headline["verdict"] == "working"
    figs = result.headline["figures"]
    assert figs["cached_tokens_first"] == 0 and figs["later_requests_hit"] == figs["later_requests"] == 3
    assert figs["cached_tokens_later_min"] == figs["cached_tokens_later_median"] == figs["expected_cached_tokens"]
    assert not any(isinstance(v, list) for v in figs.values())  # per-request lists stay in the scraps
    scraps = read_scraps(result.notebook)
    assert scraps["cached_tokens_per_request"]["cached_tokens"] == [0] + [figs["expected_cached_tokens"]] * 3
    for name in (
        "ttft_by_request",
        "cached_tokens_per_request",
        "counter_deltas",
        "shared_prefix_distribution",
        "verdict",
        "headline",
    ):
        assert name in scraps, name
    assert load_run(run_dir)["runbooks"][0]["headline"]["verdict"] == "working"
    print(
        "runbook:", {k: figs[k] for k in ("cached_tokens_later_min", "queries_delta", "hits_delta")}, result.duration_s
    )
    assert "prefix_cache/check.json" in load_run(run_dir)["artefacts"]
    from vllm_runbooks.execution.runs import load_result

    saved = load_result(run_dir, "prefix_cache_check")
    assert saved.headline().to_dict() == result.headline and saved.experiment.observations[1].cached_tokens > 0
