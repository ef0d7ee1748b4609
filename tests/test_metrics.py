"""Metrics parsing by family, across old and new vLLM names, on recorded exposition text."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from vllm_runbooks.metrics import MetricsSnapshot, diff, parse_metrics

DATA = Path(__file__).parent / "data" / "metrics"


@pytest.fixture(scope="module")
def new() -> MetricsSnapshot:
    return parse_metrics((DATA / "vllm-0.32.0-cpu.txt").read_text(), monotonic_s=100.0)


@pytest.fixture(scope="module")
def old() -> MetricsSnapshot:
    return parse_metrics((DATA / "vllm-0.8-style-2engines.txt").read_text(), monotonic_s=100.0)


def test_real_scrape_parses_without_errors(new: MetricsSnapshot) -> None:
    assert new.parse_errors == []
    assert "vllm:prefix_cache_queries" in new.families  # keyed by declared name, not x_total
    assert "vllm:prefix_cache_queries_created" not in new.families  # folded into the family
    assert new.families["vllm:prefix_cache_queries"].type == "counter"


def test_real_scrape_values(new: MetricsSnapshot) -> None:
    assert new.value("vllm:prefix_cache_queries") == 5834.0
    assert new.value("vllm:prefix_cache_hits_total") == 2688.0  # wire spelling accepted
    assert new.value("prefix_cache_hits") == 2688.0  # bare name accepted
    assert new.value("vllm:prompt_tokens_by_source", source="local_cache_hit") == 2688.0
    assert new.value("vllm:prompt_tokens_by_source", source="local_compute") == 3146.0
    assert new.value("vllm:request_success", finished_reason="length") == 4.0
    assert new.value("vllm:request_success") == 7.0  # summed over finished_reason
    assert new.value("vllm:kv_cache_usage_perc") == 0.0
    assert new.value("vllm:no_such_metric") is None
    assert new.renamed() == {}


def test_histogram_whose_name_ends_in_total_is_not_a_counter(new: MetricsSnapshot) -> None:
    fam = new.family("vllm:iteration_tokens_total")
    assert fam is not None and fam.type == "histogram"
    h = new.histogram("vllm:iteration_tokens_total")
    assert h is not None and h.count == 167.0


def test_histogram_buckets_mean_and_quantile(new: MetricsSnapshot) -> None:
    h = new.histogram("vllm:time_to_first_token_seconds")
    assert h is not None
    assert h.count == 7.0 and h.sum == pytest.approx(0.38407158851623535)
    assert h.buckets["+Inf"] == 7.0 and h.buckets["0.02"] == 2.0
    assert h.mean == pytest.approx(0.38407158851623535 / 7)
    assert h.quantile(0.5) == 0.04  # first bucket holding 3.5 of 7 observations
    assert h.quantile(0.2) == 0.02


def test_cache_config_is_an_open_dict(new: MetricsSnapshot, old: MetricsSnapshot) -> None:
    cfg = new.cache_config()
    assert cfg["block_size"] == "128"
    assert cfg["enable_prefix_caching"] == "True"
    assert cfg["kv_cache_size_tokens"] == "524288"
    assert cfg["prefix_caching_hash_algo"] == "sha256"
    assert "_block_size_resolved" in cfg  # labels nobody planned for still come through
    assert old.cache_config()["swap_space"] == "4"  # older label set
    assert old.cache_config(engine="1")["num_gpu_blocks"] == "1024"
    assert [r["engine"] for r in old.info_labels()] == ["0", "1"]


def test_old_names_answer_to_new_names(old: MetricsSnapshot) -> None:
    assert old.value("vllm:kv_cache_usage_perc") == 0.75  # sum over two engines
    assert old.per_engine("vllm:kv_cache_usage_perc") == {"0": 0.25, "1": 0.5}
    assert old.value("vllm:prefix_cache_queries") == 400.0
    assert old.value("vllm:prefix_cache_hits_total") == 150.0
    assert old.per_engine("vllm:prefix_cache_hits") == {"0": 120.0, "1": 30.0}
    itl = old.histogram("vllm:inter_token_latency_seconds")
    assert itl is not None and itl.count == 12.0 and itl.sum == pytest.approx(0.6)
    assert itl.buckets == {"0.01": 5.0, "0.1": 11.0, "+Inf": 12.0}
    engine1 = old.histogram("vllm:inter_token_latency_seconds", engine="1")
    assert engine1 is not None and engine1.count == 2.0
    assert old.resolve("vllm:kv_cache_usage_perc") == "vllm:gpu_cache_usage_perc"
    assert old.renamed() == {
        "vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc",
        "vllm:gpu_prefix_cache_queries": "vllm:prefix_cache_queries",
        "vllm:gpu_prefix_cache_hits": "vllm:prefix_cache_hits",
        "vllm:time_per_output_token_seconds": "vllm:inter_token_latency_seconds",
    }


def test_new_name_preferred_when_both_are_exposed() -> None:
    text = (
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.4\n"
        "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.9\n"
    )
    snap = parse_metrics(text)
    assert snap.value("vllm:kv_cache_usage_perc") == 0.4
    assert snap.value("vllm:gpu_cache_usage_perc") == 0.4  # asking by the old name gets the current one


def test_untyped_and_openmetrics_style_counters() -> None:
    text = (
        "vllm:prefix_cache_hits_total 5\n"  # no TYPE line at all
        "# TYPE vllm:prefix_cache_queries counter\nvllm:prefix_cache_queries_total 9\n"  # OpenMetrics style
    )
    snap = parse_metrics(text)
    assert snap.value("vllm:prefix_cache_hits") == 5.0
    assert snap.value("vllm:prefix_cache_queries") == 9.0


def test_label_escapes_special_values_and_broken_lines() -> None:
    text = (
        'm{a="x\\"y",b="line\\nbreak",c="back\\\\slash"} +Inf\n'
        "n NaN\n"
        "this is not a metric line\n"
        'o{a="unterminated} 1\n'
        "p 3 1700000000000\n"
    )
    snap = parse_metrics(text)
    sample = snap.families["m"].samples[0]
    assert sample.labels == {"a": 'x"y', "b": "line\nbreak", "c": "back\\slash"}
    assert sample.value == math.inf
    assert math.isnan(snap.families["n"].samples[0].value)
    assert snap.value("p") == 3.0  # timestamp ignored
    assert len(snap.parse_errors) == 2


def test_diff_gives_counter_and_histogram_deltas() -> None:
    before = parse_metrics(
        "# TYPE vllm:prefix_cache_hits counter\n"
        'vllm:prefix_cache_hits_total{engine="0"} 100\nvllm:prefix_cache_hits_total{engine="1"} 50\n'
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_count 4\nvllm:time_to_first_token_seconds_sum 1.0\n"
        "# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 7\n",
        monotonic_s=10.0,
    )
    after = parse_metrics(
        "# TYPE vllm:prefix_cache_hits counter\n"
        'vllm:prefix_cache_hits_total{engine="0"} 484\nvllm:prefix_cache_hits_total{engine="1"} 50\n'
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_count 9\nvllm:time_to_first_token_seconds_sum 2.5\n"
        "# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total 2\n",
        monotonic_s=12.5,
    )
    d = diff(before, after)
    assert d.interval_s == 2.5
    assert d.get("vllm:prefix_cache_hits") == 384.0
    assert d.get("prefix_cache_hits_total") == 384.0
    assert d.get("vllm:time_to_first_token_seconds_count") == 5.0
    assert d.get("vllm:time_to_first_token_seconds_sum") == pytest.approx(1.5)
    assert d.get("vllm:num_preemptions") is None and "vllm:num_preemptions" in d.resets  # restart
    per_engine = diff(before, after, ["vllm:prefix_cache_hits"], engine="1")
    assert per_engine.get("vllm:prefix_cache_hits") == 0.0


def test_diff_across_old_names_uses_new_keys(old: MetricsSnapshot) -> None:
    later = parse_metrics(
        (DATA / "vllm-0.8-style-2engines.txt").read_text().replace("120.0", "220.0"), monotonic_s=160.0
    )
    d = diff(old, later, ["vllm:prefix_cache_hits", "vllm:prefix_cache_queries", "vllm:missing"])
    assert d.deltas == {"vllm:prefix_cache_hits": 100.0, "vllm:prefix_cache_queries": 0.0, "vllm:missing": None}
    assert d.interval_s == 60.0


def test_snapshot_round_trips_through_json(new: MetricsSnapshot) -> None:
    back = MetricsSnapshot.from_dict(new.to_dict())
    assert back.value("vllm:prefix_cache_hits") == 2688.0
    assert back.cache_config() == new.cache_config()
    assert back.histogram("vllm:time_to_first_token_seconds") == new.histogram("vllm:time_to_first_token_seconds")


def test_delta_displays_itself(old: MetricsSnapshot) -> None:
    html = diff(old, old, ["vllm:prefix_cache_hits"])._repr_html_()
    assert "vllm:prefix_cache_hits" in html and "<table>" in html
