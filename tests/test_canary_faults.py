"""Canary steps against faults a real vLLM cannot be made to show.

Two TEST DOUBLES, neither of them a vLLM:
- tests/fault_server.py (shared): hang, HTTP 500, malformed SSE, a stream cut mid-way;
- ``ScriptedToolServer`` below: an httpx.MockTransport that answers tool requests with the
  broken tool calls a misconfigured parser produces (unknown names, invalid JSON, schema
  violations, a call when told not to), so the accuracy tallies are checked end to end through
  the real client.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fault_server import FaultServer
from vllm_runbooks.canary import STEPS, Status, register, run_canary, skipped
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.scraps import read_scraps

ENDPOINT_STEPS = ("model_load", "short_text", "image_input", "tool_calling", "structured_agent")


@pytest.fixture(scope="module")
def faults() -> Iterator[FaultServer]:
    server = FaultServer().start()
    yield server
    server.close()


def _run(faults: FaultServer, fault: str, **kw: object):  # type: ignore[no-untyped-def]
    return run_canary(
        endpoint=faults.base_url(fault),
        request_timeout_s=0.5,
        step_timeout_s=30,
        tool_calls=4,
        steps=list(ENDPOINT_STEPS),
        **kw,
    )


def test_hang_fails_every_step_with_a_timeout_and_stays_bounded(faults: FaultServer) -> None:
    report = _run(faults, "hang")
    assert report.verdict == "fail"
    for step in report.steps:
        assert step.status == Status.FAIL, step
        assert "timeout" in step.reason, step.reason
    tools = report.step("tool_calling")
    assert tools is not None and "aborted after 2 consecutive transport failures" in tools.reason
    assert tools.details["accuracy"]["requests"] == 2  # the dead endpoint did not get all 4
    assert report.duration_s < 20  # 0.5 s per request, never the step budget


def test_http_500_fails_with_the_servers_message(faults: FaultServer) -> None:
    report = _run(faults, "status500")
    for step in report.steps:
        assert step.status == Status.FAIL
        assert "HTTP 500: EngineCore encountered an issue: out of blocks" in step.reason, step.reason
    # a 500 on an image request is a failure, never mistaken for a text-only refusal
    assert report.step("image_input").reason.startswith("image request failed")  # type: ignore[union-attr]


def test_malformed_sse_fails_the_streamed_requests(faults: FaultServer) -> None:
    report = _run(faults, "malformed_sse")
    text = report.step("short_text")
    assert text is not None and text.status == Status.FAIL
    assert "stream: malformed_sse: data is not JSON" in text.reason
    tools = report.step("tool_calling")
    assert tools is not None and tools.status == Status.FAIL
    assert any("malformed_sse" in m for m in tools.details["accuracy"]["failure_messages"])
    assert all(s.status == Status.FAIL for s in report.steps)


def test_stream_cut_midway_is_reported_as_incomplete_stream(faults: FaultServer) -> None:
    report = _run(faults, "cut_stream")
    text = report.step("short_text")
    assert text is not None and text.status == Status.FAIL
    assert "stream: stream_incomplete: connection closed mid-stream" in text.reason
    tools = report.step("tool_calling")
    assert tools is not None and any("stream_incomplete" in m for m in tools.details["accuracy"]["failure_messages"])
    assert all(s.status == Status.FAIL for s in report.steps)


def test_wrong_expected_model_fails_model_load(faults: FaultServer) -> None:
    report = run_canary(endpoint=faults.base_url("ok"), model="kimi-k3", steps=["model_load"], request_timeout_s=2)
    step = report.steps[0]
    assert step.status == Status.FAIL
    assert "expected model 'kimi-k3' is not served; /v1/models lists ['fault-double']" in step.reason


# -- an abandoned step is cancelled, not left running ------------------------------------------
def _join_abandoned(step: str) -> bool:
    """Wait (bounded) for an abandoned step's worker thread; True when it has ended."""
    for t in [t for t in threading.enumerate() if t.name == f"canary-{step}"]:
        t.join(timeout=5)
    return not any(t.name == f"canary-{step}" for t in threading.enumerate())


def _chat_requests(server: FaultServer) -> int:
    return sum(1 for _, path, _ in server.requests if path.endswith("/chat/completions"))


def test_hung_tool_step_is_abandoned_and_sends_nothing_more() -> None:
    """request_timeout_s=30 but step_timeout_s=0.5: the step ends at 0.5 s, its held request dies
    with it (the worker thread ends within seconds, not 30 s) and no further request is sent."""
    local = FaultServer().start()
    try:
        report = run_canary(
            endpoint=local.base_url("hang"),
            model="m",
            steps=["tool_calling"],
            tool_calls=6,
            request_timeout_s=30,
            step_timeout_s=0.5,
        )
        step = report.steps[0]
        assert step.status == Status.FAIL and step.duration_s < 2.5, step
        assert "step_timeout_s=0.5" in step.reason or "cancelled at the step deadline" in step.reason, step.reason
        assert _join_abandoned("tool_calling"), "the abandoned step kept running"
        assert _chat_requests(local) == 1  # the held one; nothing after the deadline
        assert local.hung.is_set()
    finally:
        local.close()


def test_a_step_that_ignores_cancellation_still_cannot_send() -> None:
    """Even a step loop that never checks ``ctx.cancelled`` is stopped: its own client is aborted."""
    local = FaultServer().start()
    sent: list[str] = []

    @register("zz_greedy", "Greedy step", 97)
    def greedy(ctx):  # type: ignore[no-untyped-def]
        for _ in range(50):  # would be 50 requests of up to 30 s each
            r = ctx.client.chat([{"role": "user", "content": "hi"}], timeout_s=30)
            sent.append(r.failure.kind.value if r.failure else "ok")
        return skipped("finished")

    try:
        report = run_canary(endpoint=local.base_url("trickle"), model="m", steps=["zz_greedy"], step_timeout_s=0.5)
        assert report.steps[0].status == Status.FAIL and "abandoned" in report.steps[0].reason
        assert report.verdict == "fail" and report.headline().verdict == "fail"
        assert _join_abandoned("zz_greedy")
        assert _chat_requests(local) == 1
        assert sent[0] == "cancelled" and set(sent) == {"cancelled"}  # the in-flight one died, the rest never left
    finally:
        STEPS.remove("zz_greedy")
        local.close()


# -- TEST DOUBLE: scripted tool-call answers ----------------------------------------------------
class ScriptedToolServer:
    """Answers /v1/chat/completions with scripted tool calls, plain or streamed (TEST DOUBLE)."""

    CALLS = [
        ("get_weather", '{"city": "Paris", "unit": "celsius"}'),  # valid
        ("get_weather", '{"city": "Atlantis", "unit": "celsius"}'),  # schema: enum
        ("set_alarm", '{"hour": 7, "minute": '),  # invalid JSON
        ("rm_rf", "{}"),  # unknown tool
    ]

    def __init__(self) -> None:
        self.n = 0
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "scripted"}]})
        body = json.loads(request.content)
        self.bodies.append(body)
        forced = body.get("tool_choice") not in (None, "none") and body.get("tools")
        calls = []
        if forced or body.get("tool_choice") == "none":  # "none" is answered with a call: a broken server
            name, args = self.CALLS[self.n % len(self.CALLS)]
            self.n += 1
            calls = [{"id": f"call_{self.n}", "type": "function", "function": {"name": name, "arguments": args}}]
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            msg = {"role": "assistant", "content": None if calls else "hi", "tool_calls": calls}
            return httpx.Response(
                200, json={"model": "scripted", "choices": [{"message": msg, "finish_reason": finish}]}
            )
        chunks = [{"choices": [{"delta": {"role": "assistant"}}]}]
        if calls:
            tc = calls[0]
            head = {"index": 0, "id": tc["id"], "function": {"name": tc["function"]["name"], "arguments": ""}}
            tail = {"index": 0, "function": {"arguments": tc["function"]["arguments"]}}
            chunks.append({"choices": [{"delta": {"tool_calls": [head]}}]})
            chunks.append({"choices": [{"delta": {"tool_calls": [tail]}}]})
        else:
            chunks.append({"choices": [{"delta": {"content": "hi"}}]})
        chunks.append({"choices": [{"delta": {}, "finish_reason": finish}]})
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})


def test_broken_tool_calls_are_counted_by_kind() -> None:
    server = ScriptedToolServer()
    report = run_canary(
        endpoint="http://double", steps=["tool_calling"], tool_calls=8, transport=httpx.MockTransport(server)
    )
    step = report.steps[0]
    acc = step.details["accuracy"]
    assert step.status == Status.FAIL
    assert (acc["calls"], acc["valid_calls"]) == (8, 2)
    # requests alternate required / named(get_weather, set_alarm, lookup_order, ...); the double cycles
    # its four calls, so: 1 enum violation, 2 invalid JSON, 2 unknown names, 1 call to a tool not asked for
    assert (acc["schema_errors"], acc["invalid_json"], acc["unknown_tool_names"], acc["wrong_name"]) == (1, 2, 2, 1)
    assert acc["unexpected_calls"] == 1 and acc["no_call_probes"] == 2
    assert acc["schema_accuracy"] == 0.25
    assert "schema accuracy 25.0% (2/8) below 95%" in step.reason
    assert "1 of 2 no-call probes called a tool" in step.reason
    # the requests themselves were what the vendor verifiers send
    forced = [b for b in server.bodies if b.get("tool_choice") not in (None, "none")]
    assert {json.dumps(b["tool_choice"]) for b in forced} >= {
        '"required"',
        json.dumps({"type": "function", "function": {"name": "get_weather"}}),
    }
    assert all(b["parallel_tool_calls"] is False for b in forced)
    assert sum(1 for b in forced if b.get("stream")) == 4


# -- the notebook completes against every fault -----------------------------------------------
@pytest.mark.slow
def test_runbook_03_completes_against_the_fault_server(faults: FaultServer, tmp_path: Path) -> None:
    result = run_runbook(
        "canary_validation",
        {"endpoint": faults.base_url("status500"), "request_timeout_s": 1.0, "step_timeout_s": 30.0, "tool_calls": 4},
        tmp_path / "run",
    )
    assert result.status == "ok", result.error
    assert result.headline is not None and result.headline["verdict"] == "fail"
    figures = result.headline["figures"]
    # every step that talks to the endpoint fails (5 of the seed's, agent retry, access control, monitoring)
    assert figures["steps"]["model_load"] == "fail" and figures["counts"]["failed"] == 8
    scraps = read_scraps(result.notebook)
    assert "HTTP 500" in scraps["canary_short_text"]["reason"]
    assert (tmp_path / "run" / "canary" / "canary_report.json").is_file()
