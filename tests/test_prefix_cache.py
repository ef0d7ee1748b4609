"""Prefix-cache check logic on recorded logs, metrics and request files (no server)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vllm_runbooks.execution.scraps import read_scraps
from vllm_runbooks.metrics import parse_metrics
from vllm_runbooks.prefix_cache import (
    CounterDeltas,
    ExperimentResult,
    MismatchReport,
    PrefixCacheCheck,
    PrefixCacheResult,
    RequestObservation,
    RetentionResult,
    analyse_jsonl,
    analyse_requests,
    check_enablement,
    counter_deltas,
    decide,
    first_difference,
    gpu_memory,
    hit_granularity,
    load_launch_and_log,
    load_requests,
)
from vllm_runbooks.prefix_cache.sources import from_launch, from_log

DATA = Path(__file__).parent / "data" / "prefix_cache"
METRICS = Path(__file__).parent / "data" / "metrics" / "vllm-0.32.0-cpu.txt"
REAL_LOG = (DATA / "startup-default-0.32.0-cpu.log").read_text(encoding="utf-8")


# -- is it on? ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cmd", "state"),
    [
        ("vllm serve m --enable-prefix-caching", "on"),
        ("vllm serve m --no-enable-prefix-caching", "off"),
        ("vllm serve m --enable-prefix-caching --no-enable-prefix-caching", "off"),  # last wins
        ("vllm serve m --no-enable-prefix-caching --enable_prefix_caching", "on"),
        ("vllm serve m --enable-prefix-caching=false", "off"),
        ("vllm serve m -tp 8", "not set"),
        (None, "unavailable"),
    ],
)
def test_launch_command_reading(cmd: str | None, state: str) -> None:
    assert from_launch(cmd).state == state


def test_real_startup_log_is_read() -> None:
    non_default, engine = from_log(REAL_LOG)
    assert (non_default.state, engine.state) == ("on", "on")
    assert engine.authoritative and not non_default.authoritative


def test_log_without_the_flag_means_default_and_off_log_is_off() -> None:
    without = REAL_LOG.replace("'enable_prefix_caching': True, ", "")
    assert from_log(without)[0].state == "not set"
    off = REAL_LOG.replace("'enable_prefix_caching': True", "'enable_prefix_caching': False").replace(
        "enable_prefix_caching=True", "enable_prefix_caching=False"
    )
    assert [r.state for r in from_log(off)] == ["off", "off"]


def test_sources_agree_on_the_recorded_server() -> None:
    cfg = parse_metrics(METRICS.read_text()).cache_config()
    en = check_enablement(launch_command="vllm serve m --enable-prefix-caching", log_text=REAL_LOG, cache_config=cfg)
    assert en.effective == "on" and en.effective_from == "cache_config_info" and en.agree
    assert en.reading("model_default").state == "on"
    assert "Prefix caching: on" in en._repr_html_()


def test_disagreement_is_reported() -> None:
    # The launch asked for caching but the running engine has it off: a wrapper dropped the flag.
    en = check_enablement(
        launch_command="vllm serve m --enable-prefix-caching", cache_config={"enable_prefix_caching": "False"}
    )
    assert en.effective == "off" and not en.agree
    assert "launch_command=on" in en.conflicts[0] and "cache_config_info=off" in en.conflicts[0]


def test_kimi_profile_default_is_off_and_unset_flag_falls_back_to_it() -> None:
    en = check_enablement(launch_command="vllm serve moonshotai/Kimi-K3 -tp 8")
    assert en.profile == "kimi_k3"
    assert en.effective == "off" and en.effective_from.startswith("model_default")
    # ...and an engine that runs with caching on although nobody asked contradicts the profile.
    en2 = check_enablement(
        launch_command="vllm serve moonshotai/Kimi-K3", cache_config={"enable_prefix_caching": "True"}
    )
    assert en2.effective == "on" and not en2.agree


def test_launch_and_log_from_runbook01_evidence(tmp_path: Path) -> None:
    ev = tmp_path / "evidence"
    (ev / "logs").mkdir(parents=True)
    (ev / "logs" / "server.log").write_text(REAL_LOG)
    (ev / "evidence.json").write_text(
        json.dumps(
            {
                "schema": "evidence",
                "schema_version": 1,
                "items": {
                    "launch": {"status": "ok", "value": {"argv": ["vllm", "serve", "m", "--no-enable-prefix-caching"]}},
                    "logs": {
                        "status": "ok",
                        "value": {"files": [{"name": "server.log", "stored_as": "logs/server.log"}]},
                    },
                },
            }
        )
    )
    got = load_launch_and_log(evidence_dir=str(tmp_path))
    assert got.launch_command == "vllm serve m --no-enable-prefix-caching"
    assert got.launch_origin == "evidence: launch" and "non-default args" in (got.log_text or "")
    # A parameter beats the evidence; a missing evidence file is a note, not an exception.
    assert load_launch_and_log("vllm serve x", evidence_dir=str(tmp_path)).launch_command == "vllm serve x"
    assert load_launch_and_log(evidence_dir=str(tmp_path / "nope")).notes


def test_gzip_server_log_is_read_and_bounded(tmp_path: Path) -> None:
    """A compressed launch log reads like a plain one; a bomb is capped and said, a missing one noted."""
    import gzip

    import vllm_runbooks.prefix_cache.sources as sources

    gz = tmp_path / "server.log.gz"
    gz.write_bytes(gzip.compress(REAL_LOG.encode()))
    got = load_launch_and_log(log_path=str(gz))
    assert got.log_text == REAL_LOG.rstrip("\n") and not got.notes
    assert from_log(got.log_text)[1].state == "on"
    bomb = tmp_path / "bomb.log"
    bomb.write_bytes(gzip.compress(b"INFO filler line\n" * 400_000))  # 6.8 MB decompressed, > the 4 MiB cap
    text, note = sources._read_log(bomb)
    assert text is not None and len(text) <= sources.MAX_LOG_BYTES and "first 4,194,304 bytes" in note
    assert load_launch_and_log(log_path=str(tmp_path / "nope.log")).notes[0].startswith("log not readable")


# -- can it hit? ---------------------------------------------------------------------------------
def test_granularity_from_recorded_cpu_server() -> None:
    g = hit_granularity(parse_metrics(METRICS.read_text()).cache_config())
    assert (g.unit_tokens, g.block_size, g.hybrid, g.assumed) == (128, 128, False, False)
    assert g.capacity_tokens == 524288
    assert g.cacheable(500) == 384 and g.cacheable(127) == 0
    assert g.cacheable(512, prompt_tokens=512) == 384  # the last prompt token is always computed


def test_hybrid_alignment_is_the_lcm_of_units() -> None:
    g = hit_granularity(
        {
            "block_size": "64",
            "mamba_block_size": "96",
            "mamba_cache_mode": "align",
            "hash_block_size": "None",
            "num_gpu_blocks": "1000",
        }
    )
    assert g.hybrid and g.unit_tokens == 192
    assert g.capacity_tokens == 64000 and g.capacity_from.startswith("num_gpu_blocks")
    # Newest servers state the alignment directly.
    assert hit_granularity({"block_size": "16", "cache_hit_alignment_tokens": "2048"}).unit_tokens == 2048
    # A mamba block size is only reported for hybrid models; "None" (plain attention) adds nothing.
    assert hit_granularity({"block_size": "16", "mamba_block_size": "96"}).unit_tokens == 96
    plain = hit_granularity({"block_size": "16", "mamba_block_size": "None", "mamba_cache_mode": "none"})
    assert not plain.hybrid and plain.unit_tokens == 16


def test_simulator_style_config_and_nothing() -> None:
    assert hit_granularity({"block_size": "16", "num_gpu_blocks": "10"}).capacity_tokens == 160
    g = hit_granularity({})
    assert g.assumed and g.unit_tokens == 16 and g.capacity_tokens is None
    assert "unknown" in g._repr_html_() and "placeholder" in g._repr_html_()


# -- no cache_config_info: the block size is a placeholder, never a reason ----------------------------
NO_CONFIG_METRICS = "\n".join(line for line in METRICS.read_text().splitlines() if "cache_config_info" not in line)


def test_recorded_metrics_without_cache_config_never_decide_too_short() -> None:
    snap = parse_metrics(NO_CONFIG_METRICS)
    assert snap.cache_config() == {} and snap.value("vllm:prefix_cache_queries") is not None
    gran = hit_granularity(snap.cache_config())
    assert gran.assumed
    # 60 shared tokens, nothing hit: below the real CPU block (128) yet above the placeholder (16),
    # and below any block for all we know. Neither "too short" nor "long enough" may be claimed.
    v = decide(ON, gran, _exp([0, 0, 0], shared=60, expected=0, hits=0))
    assert v.verdict == "inconclusive", v.summary
    assert "cache_config_info" in v.summary and "long enough" not in v.summary
    assert "cache_config_info" in v.next_step
    assert v.figures["block_size_assumed"] is True
    # Shorter than even the placeholder: still not prefix_too_short from a guess.
    assert decide(ON, gran, _exp([0, 0, 0], shared=10, expected=0, hits=0)).verdict == "inconclusive"
    # The same with the server's own block size does decide.
    assert decide(ON, GRAN, _exp([0, 0, 0], shared=60, expected=0, hits=0)).verdict == "prefix_too_short"
    # A workload sharing little (no cause found) is not called too short from the placeholder either.
    short = analyse_requests(
        [_body("S" * 40, f"q{i}") for i in range(4)], unit_tokens=gran.unit_tokens, unit_assumed=True
    )
    assert short.median_shared() is not None and short.median_shared() < 128
    assert decide(ON, gran, None, short).verdict == "inconclusive"
    assert short.headline_figures()["unit_assumed"] is True
    # prefix_fit does not claim a fit either way.
    from vllm_runbooks.prefix_cache import prefix_fit

    fit = prefix_fit(60, gran)
    assert fit.fits is None and "cache_config_info" in fit.note


def test_without_cache_config_other_evidence_still_decides() -> None:
    gran = hit_granularity(parse_metrics(NO_CONFIG_METRICS).cache_config())
    # Every later request took the same whole prefix from cache: working, said to be judged without a unit.
    ok = decide(ON, gran, _exp([0, 384, 384, 384], expected=0))
    assert ok.verdict == "working" and "cache_config_info" in ok.summary
    # Partial hits cannot be judged against an unknown unit.
    part = decide(ON, gran, _exp([0, 128, 384], expected=0))
    assert part.verdict == "inconclusive" and "cache_config_info" in part.summary
    assert decide(OFF, gran, _exp([0, 0, 0], hits=0, queries=0)).verdict == "disabled"
    mm = analyse_jsonl(DATA / "timestamp_system.jsonl", unit_tokens=gran.unit_tokens, unit_assumed=True)
    assert decide(ON, gran, _exp([0, 0, 0], shared=60, expected=0, hits=0), mm).verdict == "prefix_mismatch"


# -- counters ---------------------------------------------------------------------------------------
def _metrics(queries: float, hits: float, *, old: bool = False, cached_src: float = 0.0) -> str:
    prefix = "vllm:gpu_prefix_cache" if old else "vllm:prefix_cache"
    return (
        f'# TYPE {prefix}_queries_total counter\n{prefix}_queries_total{{engine="0"}} {queries}\n'
        f'# TYPE {prefix}_hits_total counter\n{prefix}_hits_total{{engine="0"}} {hits}\n'
        "# TYPE vllm:prompt_tokens_by_source_total counter\n"
        f'vllm:prompt_tokens_by_source_total{{engine="0",source="local_cache_hit"}} {cached_src}\n'
        '# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine="0"} 0.25\n'
    )


def test_counter_deltas_are_per_run_and_accept_old_names() -> None:
    d = counter_deltas(
        parse_metrics(_metrics(5000, 2000, cached_src=10), 0.0),
        parse_metrics(_metrics(7613, 3536, cached_src=1546), 2.0),
    )
    assert (d.queries, d.hits, d.by_source["0/local_cache_hit"], d.interval_s) == (2613, 1536, 1536, 2.0)
    old = counter_deltas(parse_metrics(_metrics(1, 1, old=True)), parse_metrics(_metrics(101, 51, old=True)))
    assert (old.queries, old.hits) == (100, 50) and old.renamed


def test_counter_reset_is_not_a_delta() -> None:
    d = counter_deltas(parse_metrics(_metrics(9000, 4000)), parse_metrics(_metrics(100, 0)))
    assert not d.ok and d.hits is None and "restarted" in d.reason
    assert not counter_deltas(None, None, "HTTP 503").ok


# -- why does it miss? ------------------------------------------------------------------------------
def test_timestamp_in_system_prompt_is_named_canonically() -> None:
    r = analyse_jsonl(DATA / "timestamp_system.jsonl", unit_tokens=128)
    assert r.ok and r.method.startswith("canonical") and r.n_requests == 8
    assert r.cause == "system_prompt" and r.cause_share == 1.0
    assert r.example is not None and r.example.looks_like == "timestamp"
    assert "2026-11-29T10:0" in r.example.snippet_a and "⟦" in r.example.snippet_b
    assert max(r.shared_lengths) < 128


def test_tool_order_and_request_id_and_clean() -> None:
    tools = analyse_jsonl(DATA / "tool_order.jsonl", unit_tokens=128)
    assert tools.cause == "tool_definitions" and "order" in (tools.example.detail if tools.example else "")
    rid = analyse_jsonl(DATA / "request_id_batch.jsonl", unit_tokens=128)  # batch-API lines
    assert rid.cause == "system_prompt" and rid.example and "uuid" in rid.example.looks_like
    clean = analyse_jsonl(DATA / "clean.jsonl", unit_tokens=128)
    assert clean.cause == "" and clean.component_counts == {"tail": 7}
    assert min(clean.shared_lengths) > 128


def _body(system: str = "S" * 400, user: str = "q", **extra: object) -> dict:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        **extra,
    }


def test_first_difference_components() -> None:
    img = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    img2 = {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}
    txt = {"type": "text", "text": "what is this"}
    assert first_difference(_body(), _body(user="other")).component == "tail"
    assert first_difference(_body(), _body(model="m-lora")).component == "model_or_adapter"
    assert first_difference(_body(), _body(cache_salt="t1")).component == "cache_salt"
    assert first_difference(_body(), _body(chat_template_kwargs={"enable_thinking": False})).component == (
        "chat_template_args"
    )
    a, b = _body(user=[img, txt]), _body(user=[txt, img])
    d = first_difference(a, b)
    assert d.component == "image" and "position" in d.detail
    assert "content" in first_difference(_body(user=[img, txt]), _body(user=[img2, txt])).detail
    hist_a = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "A"},
            {"role": "user", "content": "next"},
        ],
    }
    hist_b = json.loads(json.dumps(hist_a))
    hist_b["messages"][1]["content"] = "A (summarised)"
    assert first_difference(hist_a, hist_b).component == "history"
    # A session continuing an earlier request appends turns: that is the intended tail.
    cont = {
        "model": "m",
        "messages": hist_a["messages"] + [{"role": "assistant", "content": "B"}, {"role": "user", "content": "more"}],
    }
    assert first_difference(hist_a, cont).component == "tail"


def test_best_earlier_request_is_the_reference() -> None:
    # Two system prompts interleaved: each request can hit the earlier one with the same prompt.
    bodies = [_body("A" * 800, f"q{i}") if i % 2 == 0 else _body("B" * 800, f"q{i}") for i in range(6)]
    r = analyse_requests(bodies, unit_tokens=16)
    assert [c.compared_with for c in r.comparisons] == [None, 0, 0, 1, 2, 3]
    assert r.component_counts == {"system_prompt": 1, "tail": 4}
    assert r.adjacent_counts == {"system_prompt": 5}
    assert r.cause == "system_prompt"


def test_request_loading_reports_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"messages": [{"role": "user", "content": "x"}]}\nnot json\n{"prompt": "completion"}\n\n')
    bodies, notes = load_requests(p)
    assert len(bodies) == 1 and len(notes) == 2
    assert not analyse_jsonl(tmp_path / "missing.jsonl").ok


# -- verdicts -----------------------------------------------------------------------------------------
def _exp(
    cached: list[int | None],
    shared: int = 500,
    expected: int = 384,
    hits: float | None = None,
    queries: float | None = None,
) -> ExperimentResult:
    obs = [RequestObservation(i, True, 0.01, 0.02, 520, c, 0 if i == 0 else expected) for i, c in enumerate(cached)]
    sum_cached = sum(c or 0 for c in cached)
    deltas = CounterDeltas(
        queries=520.0 * len(cached) if queries is None else queries,
        hits=float(sum_cached) if hits is None else hits,
        prompt_tokens_cached=float(sum_cached),
    )
    return ExperimentResult(
        observations=obs, deltas=deltas, shared_tokens=shared, unit_tokens=128, expected_cached=expected
    )


GRAN = hit_granularity({"block_size": "128", "enable_prefix_caching": "True", "num_gpu_blocks": "16"})
ON = check_enablement(cache_config={"enable_prefix_caching": "True"})
OFF = check_enablement(cache_config={"enable_prefix_caching": "False"})


def test_verdict_working_and_headline() -> None:
    v = decide(ON, GRAN, _exp([0, 384, 384, 384, 384]))
    assert v.verdict == "working" and "384" in v.summary
    head = PrefixCacheResult(verdict=v).headline()
    figs = head.figures
    assert head.runbook == "prefix_cache_check" and head.verdict == "working"
    assert (figs["cached_tokens_first"], figs["cached_tokens_later_median"], figs["cached_tokens_later_min"]) == (
        0,
        384,
        384,
    )
    assert (figs["later_requests"], figs["later_requests_hit"], figs["block_size_assumed"]) == (4, 4, False)
    assert figs["counters_agree"] is True


def test_headline_holds_key_figures_only_at_the_bounds() -> None:
    """run.json gets a bounded headline: no per-request lists, whatever max_requests allows."""
    n = 783
    exp = _exp([0] + [384] * (n - 2) + [128])
    bodies = [_body("S" * 800, f"q{i}") for i in range(200)]
    mm = analyse_requests(bodies, unit_tokens=128)
    head = PrefixCacheResult(verdict=decide(ON, GRAN, exp, mm)).headline().to_dict()

    def lists(value: object) -> list[object]:
        if isinstance(value, dict):
            return [x for v in value.values() for x in lists(v)]
        return [value] if isinstance(value, list) else []

    assert lists(head) == []
    assert len(json.dumps(head)) < 2000
    figs = head["figures"]
    assert (figs["cached_tokens_later_median"], figs["cached_tokens_later_min"]) == (384, 128)
    assert figs["later_requests_hit"] == n - 1 and figs["requests_sent"] == n
    assert figs["mismatch"]["min_shared_tokens"] == min(mm.shared_lengths)
    # The lists stay in the scraps / artefact, for the figures.
    assert len(mm.figures()["shared_prefix_tokens"]) == 199


def test_verdict_disabled_from_config_or_from_flat_counters() -> None:
    assert decide(OFF, GRAN, _exp([0, 0, 0], hits=0, queries=0)).verdict == "disabled"
    unknown = check_enablement()
    assert decide(unknown, GRAN, _exp([0, 0, 0], hits=0, queries=0)).verdict == "disabled"


def test_verdict_too_short_mismatch_evicted_inconclusive() -> None:
    assert decide(ON, GRAN, _exp([0, 0, 0], shared=60, expected=0)).verdict == "prefix_too_short"
    mm = analyse_jsonl(DATA / "timestamp_system.jsonl", unit_tokens=128)
    v = decide(ON, GRAN, _exp([0, 384, 384]), mm)
    assert v.verdict == "prefix_mismatch" and "timestamp" in v.next_step
    assert any("timestamp" in e for e in v.evidence)
    tools = analyse_jsonl(DATA / "tool_order.jsonl", unit_tokens=128)
    assert "tool ordering" in decide(ON, GRAN, None, tools).next_step
    ev = RetentionResult("evicted", "hit 384 when warm, 0 after 3000 filler tokens")
    assert decide(ON, GRAN, _exp([0, 384, 384]), None, ev).verdict == "evicted"
    partial = decide(ON, GRAN, _exp([0, 128, 384]))
    assert partial.verdict == "inconclusive" and "some hits" in partial.summary
    assert decide(ON, GRAN, _exp([0, 0, 0], hits=0)).verdict == "inconclusive"
    clean_short = MismatchReport(ok=True, n_requests=3, unit_tokens=128, method="tokenize")
    assert decide(ON, GRAN, None, clean_short).verdict == "inconclusive"  # no shared lengths, no experiment


def test_counters_alone_when_cached_tokens_not_reported() -> None:
    exp = _exp([None, None, None], hits=768)
    assert decide(ON, GRAN, exp).verdict == "working"


# -- GPU memory ------------------------------------------------------------------------------------------
class FakeNvml:
    def __init__(self, fail_init: bool = False) -> None:
        self.fail_init = fail_init

    def nvmlInit(self) -> None:  # noqa: N802 - NVML's own names
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self) -> None:  # noqa: N802
        pass

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:  # noqa: N802
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:  # noqa: N802
        return SimpleNamespace(used=100 * 2**30, total=141 * 2**30)


def test_gpu_memory_through_fake_nvml() -> None:
    got = gpu_memory("http://127.0.0.1:8000", nvml=FakeNvml())
    assert got.available and got.gpus[0]["name"] == "NVIDIA H200" and got.used_mib == 102400.0
    down = gpu_memory("http://localhost:8000", nvml=FakeNvml(fail_init=True))
    assert not down.available and "Not Found" in down.reason
    remote = gpu_memory("http://gpu-node-7:8000", nvml=FakeNvml())
    assert not remote.available and "remote" in remote.reason


# -- the check object without a server ------------------------------------------------------------------
def test_unreachable_endpoint_degrades_to_inconclusive() -> None:
    check = PrefixCacheCheck("http://127.0.0.1:9", request_timeout_s=2)
    inp = check.inputs()
    assert not inp.reachable and inp.problem
    assert check.experiment().observations == []
    assert check.retention(True).status == "unavailable"
    assert check.mismatch(None).reason.startswith("skipped")
    v = check.decide()
    assert v.verdict == "inconclusive" and "connection" in v.summary.lower()
    scraps = check.scraps()
    assert scraps["headline"]["verdict"] == "inconclusive"
    assert {"ttft_by_request", "cached_tokens_per_request", "counter_deltas", "verdict"} <= set(scraps)
    json.dumps(scraps)  # plain JSON
    check.close()


# -- runbook 04 template ----------------------------------------------------------------------------------
RUNBOOK = Path(__file__).resolve().parents[1] / "runbooks" / "04_prefix_cache_check.ipynb"
PARAMETERS = (
    "endpoint",
    "model",
    "api_key_env",
    "requests",
    "shared_prompt_tokens",
    "requests_jsonl",
    "launch_command",
    "log_path",
    "evidence_dir",
    "retention_check",
    "max_requests",
    "max_seconds",
    "run_dir",
)


def test_runbook_template_shape() -> None:
    nb = json.loads(RUNBOOK.read_text(encoding="utf-8"))
    cells = nb["cells"]
    assert cells[0]["cell_type"] == "markdown"
    tagged = [c for c in cells if "parameters" in (c.get("metadata", {}).get("tags") or [])]
    assert len(tagged) == 1
    src = "".join(tagged[0]["source"])
    doc = "".join(cells[0]["source"])
    for name in PARAMETERS:
        assert f"{name} =" in src and f"`{name}`" in doc, name
    assert 'endpoint = "http://127.0.0.1:8000"' in src
    assert all(not c.get("outputs") and not c.get("execution_count") for c in cells if c["cell_type"] == "code")
    # Thin cells: no loops or regexes in the runbook; logic lives in the library.
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert " for " not in code and "import re" not in code


@pytest.mark.slow
def test_runbook_runs_without_a_server(tmp_path: Path) -> None:
    from vllm_runbooks.execution.runner import run_runbook

    jsonl = _planted_jsonl(tmp_path / "planted.jsonl")
    run_dir = tmp_path / "run"
    result = run_runbook(
        "prefix_cache_check", {"endpoint": "http://127.0.0.1:9", "requests_jsonl": str(jsonl)}, run_dir
    )
    assert result.status == "ok", result.error
    # No server, but the request file alone shows the early difference (the per-request timestamp).
    assert result.headline and result.headline["verdict"] == "prefix_mismatch"
    assert result.headline["runbook"] == "prefix_cache_check"
    assert result.headline["figures"]["block_size_assumed"] is True
    # The executed notebook (HTML and scraps), run.json and check.json are shared evidence: no secret.
    written = sorted(p for p in run_dir.rglob("*") if p.is_file())
    assert run_dir / "prefix_cache" / "check.json" in written
    assert any(p.suffix == ".ipynb" for p in written)
    for path in written:
        assert "PLANT" not in path.read_text(encoding="utf-8", errors="replace"), path
    assert read_scraps(result.notebook)["mismatch"]["cause"] == "system_prompt"


# -- secrets in the user's request bodies ---------------------------------------------------------------
HF_PLANT = "hf_PLANTabcdefghijklmnopqrstuvwxyz1234"
ASSIGN_PLANT = "HF_TOKEN=PLANTassign333"


def _planted_jsonl(path: Path) -> Path:
    """Requests whose system prompt carries two secrets right before a per-request timestamp.

    The differing run (the timestamp) sits within a snippet's context of both secrets; the last
    request differs only inside the secret itself.
    """
    rest = " You are the support assistant of the platform team. " + "Answer briefly. " * 40
    lines = []
    for i in range(4):
        system = f"Deploy: {HF_PLANT} {ASSIGN_PLANT} at 2026-11-29T10:0{i}:00Z.{rest}"
        lines.append(
            {
                "model": "m",
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"question {i}"}],
            }
        )
    leak = json.loads(json.dumps(lines[-1]))
    leak["messages"][0]["content"] = leak["messages"][0]["content"].replace("PLANTassign333", "PLANTassign334")
    lines.append(leak)
    # A tool definition carrying a token, and a template argument carrying one, differing next to it.
    tool = {"type": "function", "function": {"name": "deploy", "description": f"uses {HF_PLANT} v1"}}
    tool2 = {"type": "function", "function": {"name": "deploy", "description": f"uses {HF_PLANT} v2"}}
    lines.append({**lines[0], "tools": [tool]})
    lines.append({**lines[0], "tools": [tool2]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_planted_secrets_never_reach_snippets_html_scraps_or_check_json(tmp_path: Path) -> None:
    jsonl = _planted_jsonl(tmp_path / "planted.jsonl")
    assert "PLANT" in jsonl.read_text()
    check = PrefixCacheCheck("http://127.0.0.1:9", request_timeout_s=2)
    mm = check.mismatch(str(jsonl))
    assert mm.ok and mm.cause == "system_prompt"
    assert mm.example is not None and mm.example.looks_like == "timestamp"  # still found, still named
    assert "<redacted:" in mm.example.snippet_a and "⟦" in mm.example.snippet_b
    by_detail = [c.first_difference for c in mm.comparisons]
    assert any("inside a value redacted" in d.detail for d in by_detail)
    assert any(d.component == "tool_definitions" for d in by_detail)
    shown = [mm._repr_html_(), json.dumps(mm.to_dict()), check.decide()._repr_html_(), json.dumps(check.scraps())]
    for text in shown:
        assert "PLANT" not in text, text[:2000]
    run_dir = tmp_path / "run"
    path = check.save(run_dir)
    assert path == run_dir / "prefix_cache" / "check.json"
    saved = path.read_text(encoding="utf-8")
    assert "PLANT" not in saved and "<redacted:" in saved
    assert json.loads(saved)["mismatch"]["cause"] == "system_prompt"
    from vllm_runbooks.execution.runs import load_result

    back = load_result(run_dir, "prefix_cache_check")  # typed, nested records and all
    assert back.mismatch.cause == "system_prompt" and back.mismatch.example.looks_like == "timestamp"
    assert back.headline() == check.result().headline()
    # A second save never overwrites the first.
    path.write_text('{"kept": true}\n', encoding="utf-8")
    second = check.save(run_dir)
    assert second is not None and second != path and "PLANT" not in second.read_text(encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == {"kept": True}
    check.close()


def test_snippet_is_cut_from_redacted_text_not_redacted_after_cutting() -> None:
    # The token starts 45 characters before the difference: a 40-character window would keep only its
    # tail, which no token pattern recognises any more.
    a = _body(f"key {HF_PLANT} then 2026-11-29T10:00:00Z" + "x" * 300)
    b = _body(f"key {HF_PLANT} then 2026-11-29T10:09:00Z" + "x" * 300)
    d = first_difference(a, b)
    assert d.component == "system_prompt" and d.looks_like == "timestamp"
    assert "PLANT" not in d.snippet_a + d.snippet_b and "wxyz1234" not in d.snippet_a + d.snippet_b
    salt = first_difference(_body(), _body(cache_salt=HF_PLANT))
    assert salt.component == "cache_salt" and "PLANT" not in salt.snippet_b


# -- an endpoint that answers nonsense ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("nonsense_json", "malformed_json"),  # every route answers broken JSON
        ("bad_metrics", "malformed_json"),  # every route answers HTML
        ("ok", "malformed_sse"),  # /v1/models fine, chat answers a model list instead of a stream
    ],
)
def test_nonsense_endpoint_ends_inconclusive_with_the_reason(fault: str, reason: str) -> None:
    from fault_server import FaultServer

    server = FaultServer().start()
    try:
        check = PrefixCacheCheck(server.base_url(fault), request_timeout_s=5, max_seconds=20, max_requests=4)
        check.inputs()
        check.experiment(requests=3, shared_prompt_tokens=200)
        check.retention(True)
        v = check.decide()
        assert v.verdict == "inconclusive" and reason in v.summary, v.summary
        assert check.scraps()["headline"]["verdict"] == "inconclusive"
        check.close()
    finally:
        server.close()
