"""The load engine: timing, framing, error classes, caps and stop conditions.

Servers: tests/fault_server.py (TEST DOUBLE for error bodies and hangs a real vLLM cannot be made
to show) and benchmarks/stream_server.py (BENCHMARK DOUBLE: a vLLM-shaped stream with injected
TTFT on an absolute schedule). Real-vLLM behaviour is tested in test_load_server.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from fault_server import FaultServer
from vllm_runbooks.load.engine import LoadSpec, Payload, Target, arrival_offsets, run_load
from vllm_runbooks.load.errors import ErrorClass, classify, parse_rules
from vllm_runbooks.load.records import summarise
from vllm_runbooks.load.transport import Connection, Sink
from vllm_runbooks.target.server import free_port

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from stream_server import StreamServer  # noqa: E402

CHAT = Payload({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True})


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultServer]:
    server = FaultServer().start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def stream50() -> Iterator[StreamServer]:
    server = StreamServer(ttft_ms=50, itl_ms=2).start_in_thread()
    yield server
    server.close()


def test_stream_timing_and_counts(stream50: StreamServer) -> None:
    run = run_load(stream50.base_url, [CHAT], LoadSpec(requests=6, concurrency=2, max_seconds=20))
    assert run.ended_by == "completed" and len(run.records) == 6
    for r in run.records:
        assert r.ok and r.status == 200 and r.output_tokens == 8 and r.prompt_tokens == 8
        assert 0.049 <= r.ttft_s < 0.2, r.ttft_s
        # one gap per later content chunk; they span first → last content chunk, within TTFT → end
        assert len(r.itl_s) == 7 and min(r.itl_s) >= 0 and sum(r.itl_s) <= r.e2e_s - r.ttft_s + 1e-9
        assert r.tpot_s is not None and r.e2e_s >= r.ttft_s
    # the server's absolute schedule puts the last token 7 x 2 ms after the first; a busy machine may
    # deliver a whole stream in one read (gaps of 0), but not every stream of the run
    assert max(sum(r.itl_s) for r in run.records) >= 0.010
    s = summarise(run.records)
    assert s.completed == 6 and s.failed == 0 and s.ttft_ms["p50"] >= 49
    assert run.connects == 2  # keep-alive: one connection per worker, reused


@pytest.mark.parametrize(
    ("fault", "cls", "status"),
    [
        ("status503", ErrorClass.QUEUE_FULL, 503),
        ("nccl500", ErrorClass.COMMUNICATION, 500),
        ("oom500", ErrorClass.OOM, 500),
        ("context400", ErrorClass.CONTEXT_LENGTH, 400),
        ("status500", ErrorClass.OOM, 500),  # "out of blocks": KV cache exhausted
        ("stream_error", ErrorClass.SERVER_ERROR, 200),
        ("cut_stream", ErrorClass.CONNECTION, 200),
        ("close_stream", ErrorClass.SERVER_ERROR, 200),
        ("malformed_sse", ErrorClass.SERVER_ERROR, 200),
    ],
)
def test_faults_are_classed(faults: FaultServer, fault: str, cls: ErrorClass, status: int) -> None:
    run = run_load(faults.base_url(fault), [CHAT], LoadSpec(requests=3, concurrency=2, request_timeout_s=5))
    assert len(run.records) == 3
    for r in run.records:
        assert not r.ok and r.error_class == cls.value and r.status == status, r
    if status != 200:
        assert run.records[0].error_excerpt  # the server's own words are kept


def test_hang_is_a_timeout_bounded_by_the_deadline(faults: FaultServer) -> None:
    run = run_load(faults.base_url("hang"), [CHAT], LoadSpec(requests=2, concurrency=2, request_timeout_s=0.5))
    assert [r.error_class for r in run.records] == ["timeout", "timeout"]
    assert run.duration_s < 3


def test_refused_endpoint_is_connection_class() -> None:
    port = free_port()
    run = run_load(f"http://127.0.0.1:{port}", [CHAT], LoadSpec(requests=3, concurrency=1))
    assert [r.error_class for r in run.records] == ["connection"] * 3


def test_stop_condition_ends_the_run_early(faults: FaultServer) -> None:
    def stop(live):  # error rate over 50 % after three requests
        return "error rate" if live.done >= 3 and live.error_rate > 0.5 else None

    run = run_load(faults.base_url("status503"), [CHAT], LoadSpec(requests=200, concurrency=1), stop=stop)
    assert run.ended_by == "stop: error rate" and len(run.records) == 3


def test_max_seconds_cuts_in_flight_requests(faults: FaultServer) -> None:
    run = run_load(faults.base_url("hang"), [CHAT], LoadSpec(requests=50, concurrency=4, max_seconds=0.5))
    assert run.ended_by == "max_seconds" and run.cut == 4
    s = summarise(run.records)
    assert s.requests == 0 and s.failed == 0 and s.cut == 4  # cut requests are not errors


def test_warmup_excluded_from_statistics(stream50: StreamServer) -> None:
    run = run_load(stream50.base_url, [CHAT], LoadSpec(requests=4, concurrency=1, warmup=2))
    assert [r.warmup for r in run.records] == [True, True, False, False]
    assert summarise(run.records).requests == 2


def test_rate_schedule_is_seeded_and_bounded(stream50: StreamServer) -> None:
    a = arrival_offsets(200, 50.0, "poisson", seed=3)
    assert a == arrival_offsets(200, 50.0, "poisson", seed=3) and a != arrival_offsets(200, 50.0, seed=4)
    assert 2.0 < a[-1] < 6.0  # mean gap 20 ms
    g = arrival_offsets(200, 50.0, "gamma", gamma_shape=0.5, seed=3)
    assert all(y >= x for x, y in zip(g, g[1:], strict=False))
    c = arrival_offsets(5, 10.0, "constant")
    assert c == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError):
        arrival_offsets(3, 0.0)
    run = run_load(stream50.base_url, [CHAT], LoadSpec(requests=5, concurrency=5, rate=100.0, arrival="constant"))
    assert [r.scheduled_s for r in run.records] == pytest.approx([0.0, 0.01, 0.02, 0.03, 0.04])
    assert all(r.ok for r in run.records)


def test_api_key_is_sent_and_masked(faults: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOAD_TEST_KEY", "sk-load-secret-123456")
    target = Target(faults.base_url("echo_auth"), api_key_env="LOAD_TEST_KEY")
    run = run_load(target, [CHAT], LoadSpec(requests=1, concurrency=1))
    rec = run.records[0]
    assert rec.status == 401 and rec.error_class == "bad_request"
    assert "sk-load-secret" not in json.dumps(rec.to_dict()) and "***" in rec.error_excerpt
    assert "sk-load-secret" not in repr(target)


class _Collect(Sink):
    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.done = False
        self.failed: tuple[str, str] | None = None

    def on_headers(self, now, status, headers):
        self.status = status

    def on_event(self, now, payload):
        self.events.append(payload)

    def on_body(self, data):
        pass

    def on_done(self, now):
        self.done = True

    def on_fail(self, now, kind, message):
        self.failed = (kind, message)


class _FakeTransport:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def _feed(pieces: list[bytes]) -> _Collect:
    conn = Connection(1 << 20)
    conn.connection_made(_FakeTransport())  # type: ignore[arg-type]
    sink = _Collect()
    conn.send(b"", sink)
    for piece in pieces:
        conn.data_received(piece)
    return sink


def test_framing_split_reads_crlf_and_multiline_data() -> None:
    body = b'data: {"a": 1}\r\n\r\n: comment\r\nevent: x\r\ndata: {"b":\r\ndata: 2}\r\n\r\ndata: [DONE]\r\n\r\n'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    raw = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" + chunked
    whole = _feed([raw])
    split = _feed([raw[i : i + 7] for i in range(0, len(raw), 7)])
    for sink in (whole, split):
        assert sink.done and sink.failed is None
        assert sink.events == [b'{"a": 1}', b'{"b":\n2}', b"[DONE]"]


def test_framing_refuses_garbage_and_oversize() -> None:
    bad = _feed([b"NOT HTTP\r\n\r\n"])
    assert bad.failed and bad.failed[0] == "protocol"
    conn = Connection(100)
    conn.connection_made(_FakeTransport())  # type: ignore[arg-type]
    sink = _Collect()
    conn.send(b"", sink)
    conn.data_received(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    conn.data_received(b"ffff\r\n" + b"x" * 70000)
    assert sink.failed and sink.failed[0] == "too_large"


def test_error_rules_are_data_and_bad_rules_are_named() -> None:
    assert classify(503) == ErrorClass.QUEUE_FULL
    assert classify(500, "NCCL WARN Net : Connection closed by remote peer") == ErrorClass.COMMUNICATION
    assert classify(None, "", "timeout") == ErrorClass.TIMEOUT
    assert classify(418) == ErrorClass.BAD_REQUEST
    with pytest.raises(ValueError, match="rule 0"):
        parse_rules({"rules": [{"class": "nonsense"}]})


def test_cli_load_prints_one_json_summary(stream50: StreamServer, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    cmd = [
        sys.executable, "-m", "vllm_runbooks.cli", "load", "--endpoint", stream50.base_url, "--concurrency", "4",
        "--requests", "20", "--max-tokens", "4", "--format", "json", "--save-records", str(records),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["completed"] == 20 and out["failed"] == 0 and out["requests_per_s"] > 0
    assert set(out["ttft_ms"]) == {"mean", "p50", "p95", "p99"} and out["client_cpu_s"] >= 0
    assert len(records.read_text().splitlines()) == 20
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert again.returncode == 2 and "never overwrite" in again.stderr


def test_completions_api_is_timed_like_chat(stream50: StreamServer) -> None:
    from vllm_runbooks.load.workload import short_prompts

    payloads = short_prompts("m", api="completions", max_tokens=4, count=2)
    assert payloads[0].path == "/v1/completions" and "prompt" in payloads[0].body
    run = run_load(stream50.base_url, payloads, LoadSpec(requests=2, concurrency=1))
    for r in run.records:
        assert r.ok and r.api == "completions" and r.output_tokens == 4 and r.ttft_s >= 0.049 and len(r.itl_s) == 3
