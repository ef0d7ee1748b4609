"""Hardening, round 3, of the load engine, ``vllm-runbooks load`` and runbook 05.

6. a negative (or non-hex, or absurd) chunk size is a protocol error, not a loop that never yields;
   deadlines are checked inside the read loops, not only by callbacks of a blocked event loop.
7. one SSE event cut into a million one-byte chunks is read in linear time, and one event is capped.
14. every numeric flag of ``load`` (and the engine's ``LoadSpec``, the workload builder, runbook 05's
    ``Config``) is finite and inside one documented table of bounds; refused with exit code 2.
10. a restart counts only when the server's identity changed and held, or health dropped and came
    back; two replicas behind a load balancer answering in turn are not a restart.

Doubles: ``HostileServer`` extends tests/fault_server.py's TEST DOUBLE (127.0.0.1, port 0) with
replies no real vLLM sends. Whatever could hang on the unfixed code runs in a child interpreter
killed after a hard timeout, so this file never hangs and never leaves a spinning thread behind.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from fault_server import CHUNK, FaultServer
from vllm_runbooks.cli import exit_codes
from vllm_runbooks.target.server import free_port

HEAD_SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
#: the one SSE event of finding 7: 1,000,000 bytes, each in its own chunk (6 MB on the wire)
BYTEWISE_EVENT = b"data: " + b"x" * (1_000_000 - 8) + b"\n\n"
BIG_EVENT_BYTES = 2 * 2**20


class HostileServer(FaultServer):
    """TEST DOUBLE: FaultServer plus this round's hostile replies (GETs answer like a healthy server).

    ``/negchunk``: a chunked reply whose chunk size is ``-6``. ``/bytewise``: one SSE event of 1 MB
    in one-byte chunks. ``/bigevent``: the first POST gets one 2 MiB event, the rest a good stream.
    ``/twin``: two replicas behind a load balancer — ``/metrics`` alternates between two process
    start times on successive reads, ``/health`` is always 200.
    """

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0
        self.metrics_reads = 0
        self._bytewise: bytes | None = None

    def url(self, route: str) -> str:
        return f"http://127.0.0.1:{self.port}/{route}"

    @staticmethod
    def _raw(h: BaseHTTPRequestHandler, data: bytes) -> None:
        h.wfile.write(data)
        h.wfile.flush()

    def _fault_negchunk(self, h: BaseHTTPRequestHandler) -> None:
        if h.command == "GET":
            return self._fault_ok(h)
        self._raw(h, HEAD_SSE + b"-6\r\nhello\r\n")  # then the connection stays open, silent

    def _fault_bytewise(self, h: BaseHTTPRequestHandler) -> None:
        if h.command == "GET":
            return self._fault_ok(h)
        if self._bytewise is None:
            self._bytewise = b"".join(
                b"1\r\n" + BYTEWISE_EVENT[i : i + 1] + b"\r\n" for i in range(len(BYTEWISE_EVENT))
            )
        self._raw(h, HEAD_SSE + self._bytewise + b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")

    def _fault_bigevent(self, h: BaseHTTPRequestHandler) -> None:
        if h.command == "GET":
            return self._fault_ok(h)
        with self.mix_lock:
            first = self.posts == 0
            self.posts += 1
        self._start_sse(h)
        if first:
            event = b"data: " + b"y" * BIG_EVENT_BYTES + b"\n\n"
            for i in range(0, len(event), 65536):
                piece = event[i : i + 65536]
                self._raw(h, b"%x\r\n%s\r\n" % (len(piece), piece))
        else:
            self._chunk(h, f"data: {json.dumps(CHUNK)}\n\n")
        self._chunk(h, "data: [DONE]\n\n")
        self._chunk(h, "")

    def _fault_twin(self, h: BaseHTTPRequestHandler) -> None:
        if h.path.endswith("/metrics"):
            with self.mix_lock:
                replica = self.metrics_reads % 2
                self.metrics_reads += 1
            start = (1_700_000_000.5, 1_700_000_123.25)[replica]
            body = f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {start}\n"
            self._send(h, 200, body.encode(), "text/plain; version=0.0.4")
        elif h.path.endswith("/version"):
            self._send(h, 200, b'{"version": "0.11.0"}')
        else:
            self._fault_ok(h)


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    server = HostileServer().start()
    yield server
    server.close()


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    """A child that regresses to the 900 MB prompt must not take the shared machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


def _child(code: str, timeout_s: float) -> dict:
    """Run ``code`` in a fresh interpreter, killed after ``timeout_s``; its last stdout line is JSON."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=REPO_ROOT,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout_s:g} s (killed): a loop that never ends, or a quadratic one")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cli(args: list[str], timeout_s: float = 30.0) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "vllm_runbooks.cli", "load", *args]
    try:
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_ROOT, preexec_fn=_limit_memory
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"vllm-runbooks load {' '.join(args)} still running after {timeout_s:g} s (killed)")


#: feeds raw bytes to one Connection in one call each (no event loop: a spin would never yield)
FEED = """
import json, time
from vllm_runbooks.load.transport import Connection, Sink

class Collect(Sink):
    def __init__(self):
        self.events, self.done, self.failed = [], False, None
    def on_headers(self, now, status, headers): pass
    def on_event(self, now, payload): self.events.append(payload)
    def on_body(self, data): pass
    def on_done(self, now): self.done = True
    def on_fail(self, now, kind, message): self.failed = [kind, message]

class Fake:
    def write(self, data): pass
    def close(self): pass

def feed(pieces, max_bytes=1 << 20, **send):
    conn = Connection(max_bytes)
    conn.connection_made(Fake())
    sink = Collect()
    conn.send(b"", sink, **send)
    for piece in pieces:
        conn.data_received(piece)
    return sink
"""


# -- 6. malformed chunk sizes; deadlines inside the read loops ------------------------------------
@pytest.mark.parametrize(
    "size_line",
    [b"-6", b"zz", b"+6", b"0x6", b"6_0", b"fffffffffffffffffffff", b"7fffffff", b""],
    ids=["negative", "non-hex", "plus-sign", "0x-prefix", "underscore", "absurd", "over-the-cap", "empty"],
)
def test_a_malformed_chunk_size_is_a_protocol_error(size_line: bytes) -> None:
    out = _child(
        FEED
        + f"""
sink = feed([{HEAD_SSE!r} + {size_line!r} + b"\\r\\nhello\\r\\n"])
print(json.dumps({{"failed": sink.failed, "done": sink.done}}))
""",
        timeout_s=20,
    )
    assert out["failed"] and out["failed"][0] == "protocol", out
    assert "chunk size" in out["failed"][1], out


def test_chunk_data_must_end_with_crlf() -> None:
    out = _child(
        FEED
        + f"""
sink = feed([{HEAD_SSE!r} + b"5\\r\\nhelloXX6\\r\\n"])
print(json.dumps({{"failed": sink.failed}}))
""",
        timeout_s=20,
    )
    assert out["failed"] and out["failed"][0] == "protocol", out


def test_the_deadline_is_checked_inside_a_read_loop_that_never_yields() -> None:
    """Three million events arrive in one read: working through them takes seconds, so the request
    deadline (0.2 s) must end the loop itself — a timer callback could not run until it returned."""
    out = _child(
        FEED
        + f"""
events = b"data: {{}}\\n\\n" * 3_000_000
body = b"%x\\r\\n%s\\r\\n" % (len(events), events)
t0 = time.perf_counter()
sink = feed([{HEAD_SSE!r} + body], max_bytes=64 << 20, deadline=t0 + 0.2)
print(json.dumps({{"failed": sink.failed, "events": len(sink.events), "took": time.perf_counter() - t0}}))
""",
        timeout_s=60,
    )
    assert out["failed"] and out["failed"][0] == "timeout", out
    assert out["events"] < 3_000_000 and out["took"] < 1.5, out


def test_cli_load_records_a_negative_chunk_size_and_goes_on(hostile: HostileServer) -> None:
    proc = _cli(
        ["--endpoint", hostile.url("negchunk"), "--model", "m", "--requests", "3", "--concurrency", "1",
         "--timeout", "2", "--max-seconds", "5", "--format", "json"],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sent"] == 3 and out["failed"] == 3 and out["failed_by_class"] == {"server_error": 3}, out
    assert out["ended_by"] == "completed" and out["duration_s"] < 2, out


def test_runbook_05_records_a_negative_chunk_size_and_ends(hostile: HostileServer) -> None:
    out = _child(
        f"""
import json
from vllm_runbooks.load.stage import Config, run
cfg = Config(endpoint={hostile.url("negchunk")!r}, model="fault-double", stages=["health", "single_short"],
             request_timeout_s=2, stage_seconds=5, max_seconds=20, metrics_interval_s=0, nvml=False)
res = run(cfg, quiet=True)
print(json.dumps({{"verdict": res.verdict, "stages": {{s.stage: s.status.value for s in res.stages}},
                  "records": [r.to_dict() for r in res.records]}}))
""",
        timeout_s=40,
    )
    assert out["stages"] == {"health": "pass", "single_short": "fail"}, out
    assert out["verdict"] == "failing"
    (rec,) = out["records"]
    assert rec["error_kind"] == "protocol" and rec["error_class"] == "server_error", rec
    assert rec["e2e_s"] < 1.0, rec


# -- 7. one event in a million one-byte chunks; the event cap --------------------------------------
def test_a_million_one_byte_chunks_in_one_event_take_linear_time(hostile: HostileServer) -> None:
    """Before: > 300 s for this one request (each byte re-searched the whole event), whatever the
    deadline. Now: read to its end in seconds; and with a 2 s deadline, ended by it."""
    out = _child(
        f"""
import json, time
from vllm_runbooks.load.engine import LoadSpec, Payload, run_load
chat = Payload({{"model": "m", "messages": [], "max_tokens": 8, "stream": True}})
out = {{}}
for timeout in (30, 2):
    run = run_load({hostile.url("bytewise")!r}, [chat], LoadSpec(requests=1, concurrency=1, request_timeout_s=timeout))
    out[timeout] = {{"cpu": run.client_cpu_s, "record": run.records[0].to_dict()}}
print(json.dumps(out))
""",
        timeout_s=60,
    )
    whole, bounded = out["30"], out["2"]
    # the 1 MB "event" is not JSON, and [DONE] came after it: the reply was read to its end
    assert whole["record"]["error_kind"] == "malformed" and whole["cpu"] < 15, whole
    assert bounded["record"]["error_kind"] in ("malformed", "timeout"), bounded
    assert bounded["record"]["e2e_s"] < 2.5 and bounded["cpu"] < 3.0, bounded


def test_one_event_over_the_cap_is_an_error_and_the_run_goes_on(hostile: HostileServer) -> None:
    from vllm_runbooks.load.engine import LoadSpec, Payload, run_load
    from vllm_runbooks.load.transport import MAX_EVENT_BYTES

    assert MAX_EVENT_BYTES < BIG_EVENT_BYTES
    chat = Payload({"model": "m", "messages": [], "max_tokens": 8, "stream": True})
    run = run_load(hostile.url("bigevent"), [chat], LoadSpec(requests=3, concurrency=1, request_timeout_s=10))
    first, *rest = run.records
    assert not first.ok and first.error_kind == "too_large" and first.error_class == "server_error", first
    assert "event" in first.error_excerpt
    assert [r.ok for r in rest] == [True, True], rest


def test_crlf_split_across_one_byte_chunks_still_frames_events() -> None:
    body = b'data: {"a": 1}\r\n\r\n: comment\r\nevent: x\r\ndata: {"b":\r\ndata: 2}\r\n\r\ndata: [DONE]\r\n\r\n'
    chunks = b"".join(b"1\r\n" + body[i : i + 1] + b"\r\n" for i in range(len(body)))
    out = _child(
        FEED
        + f"""
sink = feed([{HEAD_SSE!r} + {chunks!r} + b"0\\r\\n\\r\\n"])
print(json.dumps({{"events": [e.decode() for e in sink.events], "done": sink.done, "failed": sink.failed}}))
""",
        timeout_s=20,
    )
    assert out == {"events": ['{"a": 1}', '{"b":\n2}', "[DONE]"], "done": True, "failed": None}


# -- 14. absurd numbers, refused with exit code 2 naming the flag ---------------------------------
ABSURD = [
    ("--input-words", "100000000", []),
    ("--gamma-shape", "nan", ["--rate", "5", "--arrival", "gamma"]),
    ("--gamma-shape", "0", ["--rate", "5", "--arrival", "gamma"]),
    ("--timeout", "nan", []),
    ("--timeout", "inf", []),
    ("--max-seconds", "nan", []),
    ("--max-seconds", "inf", []),
    ("--concurrency", "1000000", []),
    ("--requests", "1000000000", []),
    ("--rate", "nan", []),
    ("--rate", "inf", []),
    ("--max-tokens", "1000000000", []),
    ("--warmup", "-1", []),
    ("--seed", "-1", []),
]


@pytest.mark.parametrize(("flag", "value", "more"), ABSURD, ids=[f"{f}={v}" for f, v, _ in ABSURD])
def test_cli_load_refuses_absurd_numbers_naming_the_flag(flag: str, value: str, more: list[str]) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens: a refusal must come before any request
    t0 = time.monotonic()
    proc = _cli(["--endpoint", endpoint, "--model", "m", flag, value, *more], timeout_s=20)
    assert proc.returncode == exit_codes.REFUSED, (proc.returncode, proc.stdout, proc.stderr)
    assert flag in proc.stderr and "load.limits" in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 15


def test_cli_load_refuses_warmup_that_leaves_nothing_to_measure() -> None:
    proc = _cli(["--endpoint", "http://127.0.0.1:1", "--model", "m", "--requests", "5", "--warmup", "5"])
    assert proc.returncode == exit_codes.REFUSED and "--warmup" in proc.stderr, proc.stderr


def test_one_table_of_bounds_serves_the_command_and_runbook_05() -> None:
    from vllm_runbooks.load import limits, stage

    assert stage.LIMITS is limits.LIMITS
    for flag, name in limits.CLI_FLAGS.items():
        assert flag.startswith("--") and (name in limits.LIMITS or name in limits.ENGINE_LIMITS), flag
    # every numeric flag of the command is in the table
    import argparse

    from vllm_runbooks.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    load = sub.choices["load"]
    numeric = {a.option_strings[0] for a in load._actions if a.type in (int, float)}
    assert numeric == set(limits.CLI_FLAGS), numeric ^ set(limits.CLI_FLAGS)


def test_runbook_05_and_the_engine_refuse_the_same_values() -> None:
    from vllm_runbooks.load.engine import LoadSpec, Payload, run_load
    from vllm_runbooks.load.stage import Config, run
    from vllm_runbooks.load.workload import short_prompts

    res = run(Config(endpoint="http://127.0.0.1:1", seed=-1), quiet=True)
    assert res.verdict == "inconclusive" and not res.stages and "seed=-1 is outside its limits" in res.reason
    with pytest.raises(ValueError, match="input_words"):
        short_prompts("m", input_words=10_000_000, count=1)
    with pytest.raises(ValueError, match="max_tokens"):
        short_prompts("m", max_tokens=10**9, count=1)
    assert any("gamma_shape" in p for p in LoadSpec(rate=5, arrival="gamma", gamma_shape=math.nan).problems())
    assert any("request_timeout_s" in p for p in LoadSpec(request_timeout_s=math.inf).problems())
    assert LoadSpec().problems() == []
    chat = Payload({"model": "m", "messages": [], "stream": True})
    with pytest.raises(ValueError, match="concurrency"):
        run_load("http://127.0.0.1:1", [chat], LoadSpec(requests=2, concurrency=10**6))


def test_a_nan_gamma_shape_cannot_hang_the_schedule() -> None:
    out = _child(
        """
import json, math
from vllm_runbooks.load.engine import arrival_offsets
try:
    arrival_offsets(3, 5.0, "gamma", gamma_shape=math.nan)
    print(json.dumps({"raised": None}))
except ValueError as exc:
    print(json.dumps({"raised": str(exc)}))
""",
        timeout_s=20,
    )
    assert out["raised"] and "gamma_shape" in out["raised"], out


# -- 10. a restart that did not happen does not count ----------------------------------------------
def _twin_client(hostile: HostileServer):
    from vllm_runbooks.client import EndpointClient

    return EndpointClient(hostile.url("twin"), timeout_s=5)


def test_two_replicas_answering_in_turn_are_not_a_restart(hostile: HostileServer) -> None:
    from vllm_runbooks.load.restart import restart_with_command, server_identity

    with _twin_client(hostile) as client:
        att = restart_with_command(
            "true", lambda: client.health(timeout_s=2.0).ok, 1, 2.5, identity=lambda: server_identity(client)
        )
    assert not att.ok and att.seconds_to_healthy is None and not att.observed, att
    assert "not proven" in att.message, att.message
    seen = set(att.identities_before) | set(att.identities_after)
    assert any("1700000000.500" in s for s in seen) and any("1700000123.250" in s for s in seen), att


def test_runbook_05_does_not_tick_restarts_a_load_balancer_faked(hostile: HostileServer) -> None:
    from vllm_runbooks.load.stage import Config, run

    cfg = Config(
        endpoint=hostile.url("twin"),
        stages=["health"],
        restart_count=2,
        restart_command="true",
        restart_timeout_s=2.5,
        metrics_interval_s=0,
        nvml=False,
    )
    health = run(cfg, quiet=True).stage("health")
    assert health.status.value == "fail", health.reason
    assert "restarts healthy again in" not in health.reason and "not proven" in health.reason, health.reason
    first = health.details["restarts"][0]
    assert first["ok"] is False and first["observed"] == "" and first["identities_before"], first


def test_a_new_identity_sooner_than_plausible_is_not_proven(tmp_path: Path) -> None:
    from vllm_runbooks.load.restart import restart_with_command

    marker = tmp_path / "restarted"
    command = f'{sys.executable} -c "import pathlib; pathlib.Path({str(marker)!r}).touch()"'
    att = restart_with_command(command, lambda: True, 1, 3.0, identity=lambda: "B" if marker.exists() else "A")
    assert marker.exists() and not att.ok and "not proven" in att.message, att
    assert "faster than" in att.message and att.identities_after[:1] == ["B"], att


def test_a_restart_whose_new_identity_holds_counts(tmp_path: Path) -> None:
    """The command takes 1.2 s (the double's restart duration); then the identity is new, and stays."""
    from vllm_runbooks.load.restart import restart_with_command

    marker = tmp_path / "restarted"
    command = f'{sys.executable} -c "import pathlib, time; time.sleep(1.2); pathlib.Path({str(marker)!r}).touch()"'
    reads: list[str] = []
    lock = threading.Lock()

    def identity() -> str:
        value = "B" if marker.exists() else "A"
        with lock:
            reads.append(value)
        return value

    att = restart_with_command(command, lambda: True, 1, 10.0, identity=identity)
    assert att.ok and "identity changed" in att.observed, att
    assert att.identities_before == ["A"] and att.identities_after == ["B"], att
    assert reads[-3:] == ["B", "B", "B"]  # it held over consecutive reads
    assert att.seconds_to_healthy is not None and att.seconds_to_healthy >= 1.2


def test_cli_load_refuses_a_key_pasted_as_api_key_env_without_echoing_it(capsys: pytest.CaptureFixture[str]) -> None:
    from vllm_runbooks.cli import main

    pasted = "sk-live-9f8e7d6c5b4a3f2e1d0c9b8a"
    assert main(["load", "--endpoint", "http://127.0.0.1:9", "--api-key-env", pasted]) == 2
    err = capsys.readouterr().err
    assert "--api-key-env" in err and pasted not in err and pasted[:8] not in err
