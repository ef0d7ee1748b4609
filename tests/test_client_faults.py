"""The client turns every transport and protocol fault into the right typed failure.

Faults come from tests/fault_server.py, a TEST DOUBLE for what a real vLLM cannot be made to do.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator

import pytest

from fault_server import FaultServer, big_metrics_body
from vllm_runbooks.client import EndpointClient, FailureKind, _lines
from vllm_runbooks.target.server import free_port

MSGS = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultServer]:
    server = FaultServer().start()
    yield server
    server.close()


def client(faults: FaultServer, fault: str, **kw: object) -> EndpointClient:
    return EndpointClient(faults.base_url(fault), model="m", **kw)  # type: ignore[arg-type]


def test_ok_route_is_ok(faults: FaultServer) -> None:
    with client(faults, "ok") as c:
        assert c.health().ok
        assert c.models().model_ids == ["fault-double"]


def test_connection_refused() -> None:
    port = free_port()  # nothing listens there once the probe socket closed
    with EndpointClient(f"http://127.0.0.1:{port}", model="m") as c:
        for result in (c.health(), c.models()):
            assert not result.ok
            assert result.failure is not None and result.failure.kind == FailureKind.CONNECTION_REFUSED
        chat = c.chat_stream(MSGS)
        assert not chat.ok and chat.failure is not None
        assert chat.failure.kind == FailureKind.CONNECTION_REFUSED


def test_hang_times_out_quickly(faults: FaultServer) -> None:
    with client(faults, "hang", timeout_s=0.3) as c:
        r = c.models()
        assert not r.ok and r.failure is not None and r.failure.kind == FailureKind.TIMEOUT
        assert r.elapsed_s < 5
        s = c.chat_stream(MSGS, total_timeout_s=0.3)
        assert not s.ok and s.failure is not None and s.failure.kind == FailureKind.TIMEOUT
        assert s.e2e_s < 5


def test_released_hang_completes() -> None:
    """The hang is released by an Event, so the same route can also succeed: no timers involved."""
    local = FaultServer().start()
    out: dict[str, object] = {}
    try:
        with client(local, "hang", timeout_s=30) as c:
            t = threading.Thread(target=lambda: out.setdefault("r", c.models()))
            t.start()
            assert local.hung.wait(timeout=10), "request never reached the server"
            local.release()
            t.join(timeout=10)
    finally:
        local.close()
    r = out["r"]
    assert r.ok, r  # type: ignore[attr-defined]


def test_http_500_keeps_status_and_body(faults: FaultServer) -> None:
    with client(faults, "status500") as c:
        r = c.chat(MSGS)
        assert not r.ok and r.failure is not None
        assert r.failure.kind == FailureKind.HTTP_STATUS and r.failure.status_code == 500
        assert "out of blocks" in r.failure.body_excerpt
        assert r.failure.error_message == "EngineCore encountered an issue: out of blocks"
        s = c.chat_stream(MSGS)
        assert s.failure is not None and s.failure.kind == FailureKind.HTTP_STATUS
        assert s.status_code == 500 and "out of blocks" in s.failure.body_excerpt


def test_nonsense_json(faults: FaultServer) -> None:
    with client(faults, "nonsense_json") as c:
        r = c.chat(MSGS)
        assert not r.ok and r.failure is not None and r.failure.kind == FailureKind.MALFORMED_JSON
        assert r.failure.status_code == 200 and "nonsense" in r.failure.body_excerpt


def test_malformed_sse(faults: FaultServer) -> None:
    with client(faults, "malformed_sse") as c:
        s = c.chat_stream(MSGS)
        assert not s.ok and s.failure is not None and s.failure.kind == FailureKind.MALFORMED_SSE
        assert "not json" in s.failure.body_excerpt
        assert s.content == "tok" and s.chunks == 1  # what arrived before the fault is kept


@pytest.mark.parametrize("fault", ["cut_stream", "close_stream"])
def test_stream_without_done(faults: FaultServer, fault: str) -> None:
    with client(faults, fault) as c:
        s = c.chat_stream(MSGS)
        assert not s.ok and not s.done
        assert s.failure is not None and s.failure.kind == FailureKind.STREAM_INCOMPLETE
        assert s.content == "tokTOKtok".lower() and s.chunks == 3
        assert s.ttft_s is not None and len(s.inter_token_s) == 2


def test_error_object_inside_stream(faults: FaultServer) -> None:
    with client(faults, "stream_error") as c:
        s = c.chat_stream(MSGS)
        assert s.failure is not None and s.failure.kind == FailureKind.STREAM_ERROR
        assert s.failure.error_message == "request aborted by engine"


def test_metrics_that_are_not_prometheus(faults: FaultServer) -> None:
    with client(faults, "bad_metrics") as c:
        m = c.metrics()
        assert not m.ok and m.failure is not None and m.failure.kind == FailureKind.MALFORMED_JSON


def test_api_key_read_from_named_env_and_never_leaked(faults: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("RUNBOOK_TEST_KEY", secret)
    with client(faults, "echo_auth", api_key_env="RUNBOOK_TEST_KEY") as c:
        r = c.chat(MSGS)
        s = c.chat_stream(MSGS)
        text = repr(c) + repr(r) + r.to_json() + repr(s) + s.to_json()
    sent = faults.requests[-1][2]
    assert sent.get("Authorization") == f"Bearer {secret}"  # it was used ...
    assert r.failure is not None and r.failure.status_code == 401
    assert "***" in r.failure.body_excerpt
    assert secret not in text  # ... and appears nowhere in results or reprs
    assert "RUNBOOK_TEST_KEY" in repr(c)  # only the variable's name is shown


def test_no_key_when_env_unset(faults: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    with client(faults, "ok") as c:
        c.models()
    assert "Authorization" not in faults.requests[-1][2]


def test_results_serialise_to_plain_json(faults: FaultServer) -> None:
    with client(faults, "status500") as c:
        data = json.loads(c.chat_stream(MSGS).to_json())
    assert data["failure"]["kind"] == "http_status" and data["schema"] == "client_chat_result"


def test_results_display_themselves(faults: FaultServer) -> None:
    with client(faults, "status500") as c:
        html = c.chat(MSGS)._repr_html_()
    assert "http_status" in html and "out of blocks" in html and "<table>" in html


# -- total deadline, byte cap, abort -----------------------------------------------------------
TRICKLE_TIMEOUT_S = 1.0
TRICKLE_MARGIN_S = 0.75  # one 0.05 s gap between bytes, plus scheduling on a loaded 2-core box

PLAIN_CALLS = {
    "models": lambda c: c.models(),
    "metrics": lambda c: c.metrics(),
    "tokenize": lambda c: c.tokenize("hi"),
    "chat": lambda c: c.chat(MSGS),
}


@pytest.mark.timeout(60)  # a regression must fail, not trickle on for the suite's 900 s
@pytest.mark.parametrize("call", sorted(PLAIN_CALLS))
def test_trickling_reply_is_cut_at_the_total_deadline(faults: FaultServer, call: str) -> None:
    """One byte every 0.05 s never trips a per-read timeout; only a total deadline ends the call."""
    with client(faults, "trickle", timeout_s=TRICKLE_TIMEOUT_S) as c:
        t0 = time.monotonic()
        r = PLAIN_CALLS[call](c)
        took = time.monotonic() - t0
    assert not r.ok and r.failure is not None, r
    assert r.failure.kind == FailureKind.TIMEOUT and r.failure.status_code == 200, r.failure
    assert "total deadline of 1 s" in r.failure.message
    received = int(re.search(r"\((\d+) bytes received\)", r.failure.message).group(1))  # type: ignore[union-attr]
    assert received >= 5  # the server really was sending all along
    assert TRICKLE_TIMEOUT_S <= took < TRICKLE_TIMEOUT_S + TRICKLE_MARGIN_S, took


@pytest.mark.timeout(60)  # a regression must fail, not trickle on for the suite's 900 s
def test_trickling_stream_is_cut_at_its_total_limit(faults: FaultServer) -> None:
    """No newline ever arrives: the stream is still cut at total_timeout_s, not left waiting for a line."""
    with client(faults, "trickle", timeout_s=30) as c:
        t0 = time.monotonic()
        s = c.chat_stream(MSGS, total_timeout_s=TRICKLE_TIMEOUT_S)
        took = time.monotonic() - t0
    assert s.failure is not None and s.failure.kind == FailureKind.STREAM_TIMEOUT, s.failure
    assert TRICKLE_TIMEOUT_S <= took < TRICKLE_TIMEOUT_S + TRICKLE_MARGIN_S, took


def test_metrics_of_several_megabytes_are_read_whole(faults: FaultServer) -> None:
    with client(faults, "big_metrics") as c:
        m = c.metrics()
    assert m.ok and m.snapshot is not None, m.failure
    family = m.snapshot.families["vllm:fault_double_seconds"]
    assert len(big_metrics_body()) > 5 * 2**20 and len(family.samples) > 50_000


@pytest.mark.timeout(60)  # a regression must fail, not trickle on for the suite's 900 s
def test_body_over_the_cap_is_a_typed_failure(faults: FaultServer) -> None:
    with client(faults, "big_metrics", max_body_bytes=2**20) as c:
        m = c.metrics()
    assert not m.ok and m.failure is not None and m.failure.kind == FailureKind.BODY_TOO_LARGE
    assert "1 MiB cap (max_body_bytes=1048576)" in m.failure.message
    with client(faults, "trickle", max_body_bytes=16, timeout_s=30) as c:  # no Content-Length: counted
        t0 = time.monotonic()
        r = c.models()
        s = c.chat_stream(MSGS)
    assert r.failure is not None and r.failure.kind == FailureKind.BODY_TOO_LARGE, r.failure
    assert s.failure is not None and s.failure.kind == FailureKind.BODY_TOO_LARGE, s.failure
    assert "reply body exceeds the 16 byte cap (max_body_bytes=16); 17 bytes seen" in s.failure.message
    assert time.monotonic() - t0 < 10  # 17 bytes at 0.05 s each, twice; never the 30 s timeout


@pytest.mark.timeout(60)  # a regression must fail, not trickle on for the suite's 900 s
@pytest.mark.parametrize("fault", ["hang", "trickle"])
def test_abort_ends_the_call_in_flight_and_sends_nothing_more(fault: str) -> None:
    """abort() from another thread: the held request ends now (not at its 30 s timeout), and later
    calls return ``cancelled`` without reaching the server."""
    local = FaultServer().start()
    out: dict[str, object] = {}
    try:
        c = client(local, fault, timeout_s=30)
        t = threading.Thread(target=lambda: out.setdefault("r", c.models()))
        t.start()
        assert (local.hung if fault == "hang" else local.trickling).wait(timeout=10), "request never arrived"
        t0 = time.monotonic()
        c.abort()
        t.join(timeout=5)
        assert not t.is_alive(), "the request in flight survived abort()"
        assert time.monotonic() - t0 < 5
        sent = len(local.requests)
        later = (c.models(), c.chat(MSGS), c.chat_stream(MSGS), c.metrics())
        assert len(local.requests) == sent == 1
    finally:
        local.close()
    r = out["r"]
    assert r.failure is not None and r.failure.kind == FailureKind.CANCELLED, r.failure  # type: ignore[attr-defined]
    assert all(x.failure is not None and x.failure.kind == FailureKind.CANCELLED for x in later)


def test_stream_lines_split_across_chunks_as_sse_allows() -> None:
    """CRLF split between two reads, CR alone, LF, a multibyte character cut in half, no final newline."""
    chunks = [b"data: a\r", b"\ndata: b\r\r", b"data: \xc3", b"\xa9t\xc3\xa9\n\ndata: c"]
    assert list(_lines(iter(chunks))) == ["data: a", "data: b", "", "data: été", "", "data: c"]
