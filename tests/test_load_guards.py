"""Runbook 05's guards: settings ceilings, restarts that must be observed, the restart time given
back to the load budget, and whether the target concurrency was verified.

Doubles: benchmarks/stream_server.py (BENCHMARK DOUBLE: a vLLM-shaped stream server that never
restarts — the case of ``kubectl rollout restart`` returning while the old pod keeps answering) and
plain callables standing in for ``/health`` and the server's identity (a real server cannot be made
to restart on cue in a unit test; the embedded target's real stop/start is in test_load_server.py).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from conftest import REPO_ROOT
from vllm_runbooks.client import EndpointClient
from vllm_runbooks.load.builtin_stages import _restarts, target_concurrency_check
from vllm_runbooks.load.engine import Target
from vllm_runbooks.load.registry import Budget, StageContext
from vllm_runbooks.load.restart import restart_with_command
from vllm_runbooks.load.stage import LIMITS, Config, run

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from stream_server import StreamServer  # noqa: E402

NOOP = f"{sys.executable} -c pass"  # a restart command that returns 0 and restarts nothing


@pytest.fixture(scope="module")
def never_restarts() -> Iterator[StreamServer]:
    s = StreamServer(ttft_ms=1, itl_ms=0.1).start_in_thread()
    yield s
    s.close()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_requests", 10_000_000),
        ("max_seconds", 7 * 86400.0),
        ("max_concurrency", 100_000),
        ("max_restarts", 1000),
        ("restart_count", 1000),
        ("restart_timeout_s", 1e9),
        ("level_seconds", float("nan")),
        ("max_tokens", 10**9),
    ],
)
def test_settings_over_their_ceiling_are_refused_naming_the_limit(name: str, value: float) -> None:
    res = run(Config(endpoint="http://127.0.0.1:1", **{name: value}), quiet=True)
    high = LIMITS[name][1]
    assert res.verdict == "inconclusive" and not res.stages and not res.records
    assert f"{name}={value!r} is outside its limits" in res.reason and f"{high:g}" in res.reason, res.reason


def test_non_numbers_and_defaults() -> None:
    assert Config().problems() == []  # the defaults sit inside every limit
    bad = Config(endpoint="http://127.0.0.1:1", max_requests="many", metrics_interval_s=0.001).problems()  # type: ignore[arg-type]
    assert any("max_requests must be a number" in p for p in bad)
    assert any("metrics_interval_s" in p for p in bad)


def test_a_restart_command_that_changes_nothing_is_not_a_restart() -> None:
    att = restart_with_command(NOOP, lambda: True, 1, 1.0, identity=lambda: "version=0.11 process_start=1.000")
    assert not att.ok and "restart not observed" in att.message and att.seconds_to_healthy is None


def test_a_restart_counts_when_health_dropped_or_identity_changed() -> None:
    seen = iter([False, False, True])
    att = restart_with_command(NOOP, lambda: next(seen, True), 1, 10.0)
    assert att.ok and "health dropped" in att.observed
    # a new identity counts when it holds over several reads, seen no sooner than a restart can be
    slow = f"{sys.executable} -c 'import time; time.sleep(1.1)'"
    ids = iter(["process_start=1.000"] * 3)
    att = restart_with_command(slow, lambda: True, 2, 10.0, identity=lambda: next(ids, "process_start=99.000"))
    assert att.ok and "identity changed" in att.observed and "99.000" in att.observed
    att = restart_with_command(NOOP, lambda: False, 3, 0.6)
    assert not att.ok and "not healthy" in att.message


def test_the_health_stage_fails_a_restart_it_did_not_see(never_restarts: StreamServer) -> None:
    cfg = Config(
        endpoint=never_restarts.base_url,
        stages=["health"],
        restart_count=1,
        restart_command=NOOP,
        restart_timeout_s=1.0,
    )
    res = run(cfg, quiet=True)
    health = res.stage("health")
    assert health.status.value == "fail" and "restart not observed" in health.reason, health.reason
    assert health.details["restarts"][0]["ok"] is False


def test_the_whole_restart_attempt_is_given_back_to_the_load_budget(never_restarts: StreamServer) -> None:
    cfg = Config(endpoint=never_restarts.base_url, restart_count=2, restart_command=NOOP, restart_timeout_s=0.8)
    target = Target(never_restarts.base_url)
    client = EndpointClient(target.base_url, timeout_s=5)
    budget = Budget(10, 100.0)
    ctx = StageContext(cfg, target, client, budget, 0.0)
    try:
        attempts = _restarts(ctx)
    finally:
        ctx.client.close()
    assert len(attempts) == 1 and not attempts[0].ok  # the first unobserved restart ends the series
    # the attempt waited its full 0.8 s for a restart to show; the command itself took ~0.05 s
    assert budget.seconds_left > 99.7, budget.seconds_left


def test_target_concurrency_is_verified_only_at_the_target_and_uncut() -> None:
    ok = target_concurrency_check(16, 16, None, None, "reached max_concurrency 16")
    assert ok["verified"] and "warning" not in ok
    low = target_concurrency_check(16, 4, None, None, "concurrency 8: p95 TTFT over the SLO")
    assert not low["verified"] and "below the target concurrency 16" in low["reason"]
    cut = target_concurrency_check(16, 16, 16, "24 requests asked, 3 left under max_requests=40", "…")
    assert not cut["verified"] and "global cap" in cut["reason"] and "max_requests" in cut["warning"]
    none = target_concurrency_check(16, None, None, None, "…")
    assert not none["verified"]


def test_the_in_flight_stop_and_the_level_table_use_one_p95() -> None:
    """Eight TTFTs where nearest-rank (2.5 s) and interpolated (1.66 s) p95 fall either side of a 2 s
    SLO: the stop rule must not stop a level whose own figures then show it under the SLO."""
    from vllm_runbooks.load.engine import Live
    from vllm_runbooks.load.records import RequestRecord, summarise

    ttfts = [0.1] * 7 + [2.5]
    cfg = Config(endpoint="http://127.0.0.1:1", slo_ttft_ms=2000.0, min_requests_for_stop=8)
    target = Target("http://127.0.0.1:1")
    ctx = StageContext(cfg, target, EndpointClient(target.base_url), Budget(10, 10.0), 0.0)
    live = Live(done=8, ok=8, ttfts=list(ttfts))
    level_p95 = summarise([RequestRecord(i, ok=True, ttft_s=t, e2e_s=t) for i, t in enumerate(ttfts)]).ttft_ms["p95"]
    stopped = ctx.stop_rules(1)(live)
    ctx.client.close()
    assert level_p95 is not None and (level_p95 > 2000.0) == (stopped is not None), (level_p95, stopped)


def test_load_tables_are_shown_through_the_shared_display_helpers() -> None:
    from vllm_runbooks import display
    from vllm_runbooks.load import result as load_result
    from vllm_runbooks.load.result import LoadCheckResult

    assert not hasattr(load_result, "Html")  # no package keeps its own HTML helpers
    view = LoadCheckResult(source="x").stage_table()
    assert isinstance(view, display.HtmlView) and "(none)" in view._repr_html_()
