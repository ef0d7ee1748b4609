"""Round 3 hardening: hostile parameter files and values, lone surrogates, proxies from the
environment, and an API key pasted where its variable's NAME belongs.

Stub servers here are TEST DOUBLES (never a vLLM): a recorder that stands in for a corporate
proxy, and an endpoint whose replies carry lone surrogates (``\\ud800`` escapes in its JSON).
"""

from __future__ import annotations

import json
import os
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from vllm_runbooks import bounded
from vllm_runbooks.cli import exit_codes, main
from vllm_runbooks.client import EndpointClient, ToolCall
from vllm_runbooks.execution import parameters, runner
from vllm_runbooks.execution.junit import write_junit

#: A ten-fold alias bomb four levels deep: 10**4 strings from a few hundred bytes (the real one,
#: nine levels, took 34 s and 620 MB; this one is cheap enough to prove the refusal on old code).
BOMB = "\n".join(
    [
        'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]',
        "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
        "source: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
    ]
)
PASTED_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


# -- stub servers (test doubles) --------------------------------------------------------------
class Stub:
    """A loopback HTTP server answering with ``reply(handler, body) -> (status, ctype, bytes)``;
    it records every request line and its headers."""

    def __init__(self, reply: Callable[[BaseHTTPRequestHandler, bytes], tuple[int, str, bytes]]) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stub.requests.append((self.command, self.path, dict(self.headers)))
                status, ctype, data = reply(self, body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_CONNECT = _answer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _sse(*events: object) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


def _vllm_like(model_id: bytes = b"stub-model", content: bytes = b"up") -> Callable[..., tuple[int, str, bytes]]:
    """Replies shaped like vLLM's (health, models, version, chat plain and streamed), with the
    model id and content inserted as raw JSON string bodies (so ``\\ud800`` escapes go through)."""

    def reply(h: BaseHTTPRequestHandler, body: bytes) -> tuple[int, str, bytes]:
        path = h.path
        if path.endswith("/health"):
            return 200, "text/plain", b""
        if path.endswith("/v1/models"):
            return 200, "application/json", b'{"object": "list", "data": [{"id": "' + model_id + b'"}]}'
        if path.endswith("/version"):
            return 200, "application/json", b'{"version": "0.0-stub"}'
        if path.endswith("/chat/completions"):
            request = json.loads(body or b"{}")
            if request.get("stream"):
                chunk = b'{"model": "' + model_id + b'", "choices": [{"index": 0, "delta": {"content": "'
                chunk += content + b'"}, "finish_reason": "stop"}]}'
                usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
                return 200, "text/event-stream", _sse(chunk, usage, b"[DONE]")
            reply_body = b'{"model": "' + model_id + b'", "choices": [{"index": 0, "message": {"content": "'
            reply_body += content + b'"}, "finish_reason": "stop"}], "usage": {"completion_tokens": 1}}'
            return 200, "application/json", reply_body
        return 404, "application/json", b'{"error": {"message": "no such route \\udfff here"}}'

    return reply


@pytest.fixture()
def stub() -> Iterator[Stub]:
    server = Stub(_vllm_like(b"m\\ud800", b"up\\udfff"))
    yield server
    server.close()


def _no_surrogates(text: str) -> None:
    text.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate


def _junit_cases(path: Path) -> dict[str, ET.Element]:
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    return {f"{s.get('name')}/{c.get('name')}": c for s in root.iter("testsuite") for c in s.iter("testcase")}


# -- 8: YAML alias bombs and unbounded documents -----------------------------------------------
def test_alias_bomb_in_a_parameters_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB, encoding="utf-8")
    assert bomb.stat().st_size < 300
    with pytest.raises(runner.RunbookError, match=r"bomb.yaml.*(alias|anchor)"):
        parameters.load_param_file(bomb)
    t0 = time.monotonic()
    run_dir = tmp_path / "run"
    assert main(["run", "evidence_capture", "-f", str(bomb), "--run-dir", str(run_dir)]) == exit_codes.REFUSED
    assert time.monotonic() - t0 < 10
    assert "anchor" in capsys.readouterr().err
    assert not run_dir.exists()


def test_an_anchor_alone_is_refused_too() -> None:
    with pytest.raises(ValueError, match=r"line 1.*anchor"):
        bounded.loads_yaml("source: &one /data/bundle\n", "params.yaml")
    with pytest.raises(ValueError, match="alias"):
        bounded.loads_yaml("- *nowhere\n")


def test_node_count_and_nesting_are_capped(tmp_path: Path) -> None:
    # nine nodes: the mapping, keys a and b, the list and its two items, the inner mapping, c, d
    assert bounded.loads_yaml("a: [1, 2]\nb: {c: d}\n", max_nodes=9) == {"a": [1, 2], "b": {"c": "d"}}
    with pytest.raises(ValueError, match="more than 8 nodes"):
        bounded.loads_yaml("a: [1, 2]\nb: {c: d}\n", max_nodes=8)
    big = tmp_path / "many.yaml"
    big.write_text("log_paths: [" + "a," * bounded.MAX_YAML_NODES + "a]\n", encoding="utf-8")
    with pytest.raises(runner.RunbookError, match=f"more than {bounded.MAX_YAML_NODES} nodes"):
        parameters.load_param_file(big)
    deep = tmp_path / "deep.yaml"
    deep.write_text("source: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(runner.RunbookError, match="nested more than"):
        parameters.load_param_file(deep)


def test_a_huge_number_is_a_refusal_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("collector_timeout_s: " + "9" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(runner.RunbookError, match="p.yaml"):
        parameters.load_param_file(path)


def test_other_user_handed_yaml_goes_through_the_bounded_loader(tmp_path: Path) -> None:
    from vllm_runbooks.history import load_rules
    from vllm_runbooks.logs import load_signatures

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB, encoding="utf-8")
    for load in (load_rules, load_signatures):
        with pytest.raises(ValueError, match="anchor"):
            load(bomb)
    assert load_rules().rules and load_signatures().signatures  # the shipped files still load


# -- 9: lone surrogates ------------------------------------------------------------------------
def test_lone_surrogates_from_the_endpoint_become_replacement_characters(stub: Stub) -> None:
    with EndpointClient(stub.url, api_key_env=None) as c:
        assert c.models().model_ids == ["m\ufffd"]
        plain = c.chat([{"role": "user", "content": "hi"}])
        streamed = c.chat_stream([{"role": "user", "content": "hi"}])
        missing = c.completion("hi")  # 404 with a surrogate escape in the error message
    assert plain.ok and plain.content == "up\ufffd" and plain.model == "m\ufffd"
    assert streamed.ok and streamed.content == "up\ufffd", streamed.failure
    assert missing.failure is not None and missing.failure.error_message == "no such route \ufffd here"
    for record in (plain, streamed, missing):
        _no_surrogates(record.to_json())
    # a valid pair is kept; escaped backslashes are not mistaken for an escape
    call = ToolCall("1", "f", '{"a": "\\ud83d\\ude00", "b": "\\\\ud800", "c": "\\ud800"}')
    value, err = call.parsed_arguments()
    assert err is None and value == {"a": "\U0001f600", "b": "\\ud800", "c": "\ufffd"}


def test_a_streamed_tool_call_escape_split_across_chunks_is_cleaned() -> None:
    def chunk(args: str) -> dict[str, Any]:
        call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": args}}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    server = Stub(lambda h, b: (200, "text/event-stream", _sse(chunk('{"x": "\\ud8'), chunk('00"}'), b"[DONE]")))
    try:
        with EndpointClient(server.url, api_key_env=None, model="m") as c:
            result = c.chat_stream([{"role": "user", "content": "hi"}])
    finally:
        server.close()
    assert result.ok and result.tool_calls[0].parsed_arguments() == ({"x": "\ufffd"}, None)
    _no_surrogates(result.to_json())


def test_canary_report_from_a_surrogate_endpoint_is_utf8(stub: Stub) -> None:
    from vllm_runbooks.canary import run_canary

    report = run_canary(endpoint=stub.url, steps=["model_load", "short_text"], request_timeout_s=5, api_key_env=None)
    assert report.model == "m\ufffd"
    assert [s.status.value for s in report.steps] == ["pass", "pass"], [s.reason for s in report.steps]
    _no_surrogates(report.to_json())


def test_lone_surrogate_in_a_parameter_value_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    declared = {"source": "local", "log_paths": []}
    with pytest.raises(runner.RunbookError, match=r"'log_paths'.*not valid Unicode"):
        parameters.check_parameters("r", declared, {"log_paths": ["/ok", "/bad\udcff"]})
    run_dir, junit = tmp_path / "run", tmp_path / "ci" / "junit.xml"
    argv = ["run", "evidence_capture", "-p", "source", "x\udcff", "--run-dir", str(run_dir), "--junit-xml", str(junit)]
    assert main(argv) == exit_codes.REFUSED
    assert "not valid Unicode" in capsys.readouterr().err
    assert not run_dir.exists()
    message = _junit_cases(junit)["evidence_capture/execution"].find("error").get("message")  # type: ignore[union-attr]
    assert "not valid Unicode" in message
    params = tmp_path / "p.yaml"
    params.write_text('source: "bundle-\\ud800"\n', encoding="utf-8")
    with pytest.raises(runner.RunbookError, match=r"p.yaml: a value is not valid Unicode \(.source.: U\+D800"):
        parameters.load_param_file(params)


@pytest.mark.parametrize("option", ["--run-dir", "--runs-dir"])
def test_non_utf8_run_dir_is_refused_before_anything_is_written(
    tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/run-\xff")  # '\udcff': how Python reads such bytes
    junit = tmp_path / "junit.xml"
    assert main(["run", "evidence_capture", option, bad, "--junit-xml", str(junit)]) == exit_codes.REFUSED
    assert "UTF-8" in capsys.readouterr().err
    assert not os.path.exists(os.fsencode(bad))
    assert "UTF-8" in _junit_cases(junit)["evidence_capture/execution"].find("error").get("message")  # type: ignore[union-attr]


def _never_run(what: str) -> Callable[..., None]:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{what} ran: the refusal came too late")

    return refuse


def test_suite_refusals_write_junit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_runbooks.execution import suite

    monkeypatch.setattr(suite, "run_suite", _never_run("the suite"))
    params, junit = tmp_path / "suite.yaml", tmp_path / "suite.xml"
    params.write_text('shared:\n  endpoint: "http://127.0.0.1:1/\\udfff"\n', encoding="utf-8")
    argv = ["suite", "-f", str(params), "--run-dir", str(tmp_path / "run"), "--junit-xml", str(junit)]
    assert main(argv) == exit_codes.REFUSED
    assert "not valid Unicode" in _junit_cases(junit)["suite/execution"].find("error").get("message")  # type: ignore[union-attr]
    junit.unlink()
    bad_dir = os.fsdecode(os.fsencode(str(tmp_path)) + b"/s-\xfe")
    params.write_text("shared:\n  endpoint: http://127.0.0.1:1\n", encoding="utf-8")
    assert main(["suite", "-f", str(params), "--run-dir", bad_dir, "--junit-xml", str(junit)]) == exit_codes.REFUSED
    assert not os.path.exists(os.fsencode(bad_dir))
    assert "UTF-8" in _junit_cases(junit)["suite/execution"].find("error").get("message")  # type: ignore[union-attr]


def test_junit_is_written_when_the_run_crashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kernel died \udcff")

    monkeypatch.setattr(runner, "run_runbook", crash)
    junit = tmp_path / "crash.xml"
    with pytest.raises(RuntimeError):
        main(["run", "evidence_capture", "--run-dir", str(tmp_path / "run"), "--junit-xml", str(junit)])
    error = _junit_cases(junit)["evidence_capture/execution"].find("error")
    assert error is not None and "RuntimeError: kernel died" in error.get("message", "")


def test_junit_text_with_lone_surrogates_is_written(tmp_path: Path) -> None:
    path = write_junit(tmp_path / "j.xml", [{"name": "x\udcff", "status": "refused", "error": "bad \udcff value"}])
    assert "bad \ufffd value" in _junit_cases(path)["x\ufffd/execution"].find("error").get("message")  # type: ignore[union-attr]


def test_bad_parameters_file_for_run_still_writes_junit(tmp_path: Path) -> None:
    bad, junit = tmp_path / "bad.yaml", tmp_path / "j.xml"
    bad.write_text("source: [unclosed\n", encoding="utf-8")
    argv = ["run", "evidence_capture", "-f", str(bad), "--run-dir", str(tmp_path / "r"), "--junit-xml", str(junit)]
    assert main(argv) == exit_codes.REFUSED
    assert "not valid YAML" in _junit_cases(junit)["evidence_capture/execution"].find("error").get("message")  # type: ignore[union-attr]


# -- 11: proxies from the environment are never used --------------------------------------------
@pytest.fixture()
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    """A 'corporate proxy' that records what it is sent and answers 502; every proxy variable
    points at it and NO_PROXY is unset, as on a host that routes everything through one."""
    recorder = Stub(lambda h, b: (502, "text/plain", b"proxy says no"))
    for name in PROXY_VARS:
        monkeypatch.setenv(name, recorder.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    yield recorder
    recorder.close()


def test_client_never_sends_to_a_proxy_from_the_environment(proxy: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = Stub(_vllm_like())
    monkeypatch.setenv("R3_PROXY_TEST_KEY", "r3-secret-bearer-value")
    try:
        with EndpointClient(endpoint.url, api_key_env="R3_PROXY_TEST_KEY", model="stub-model") as c:
            assert c.models().model_ids == ["stub-model"]
            assert c.chat_stream([{"role": "user", "content": "hi"}]).ok
    finally:
        endpoint.close()
    assert proxy.requests == []
    assert [p for _, p, _ in endpoint.requests] == ["/v1/models", "/v1/chat/completions"]
    assert all(h.get("Authorization") == "Bearer r3-secret-bearer-value" for _, _, h in endpoint.requests)


def test_canary_steps_go_straight_to_the_endpoint_and_say_so(proxy: Stub) -> None:
    from vllm_runbooks.canary import run_canary

    endpoint = Stub(_vllm_like())
    try:
        report = run_canary(
            endpoint=endpoint.url,
            steps=["model_load", "access_control", "agent_retry"],
            request_timeout_s=5,
            api_key_env=None,
        )
    finally:
        endpoint.close()
    assert proxy.requests == []
    paths = [p for _, p, _ in endpoint.requests]
    assert paths.count("/v1/models") >= 3  # model_load + access_control's two raw requests
    assert "/v1/chat/completions" in paths  # agent_retry's abandoned stream, sent with its own client
    load = report.step("model_load")
    assert load is not None and load.details["env_proxies_ignored"] == sorted(PROXY_VARS)
    assert "environment proxies ignored" in load.reason
    assert proxy.url not in report.to_json()  # the proxy URL (it may carry a password) is not recorded


# -- 12: the key pasted where the variable's NAME belongs ----------------------------------------
@pytest.mark.parametrize(
    "value", [PASTED_KEY, "Bearer abc", "1ABC", "A" * 129, "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3"]
)
def test_api_key_env_that_is_not_a_variable_name_is_refused_without_echo(value: str) -> None:
    declared = {"api_key_env": "VLLM_API_KEY", "endpoint": "http://127.0.0.1:8000"}
    with pytest.raises(runner.RunbookError, match="api_key_env.*NAME of an environment variable") as info:
        parameters.check_parameters("canary_validation", declared, {"api_key_env": value})
    assert value not in str(info.value) and value[:8] not in str(info.value)


def test_api_key_env_names_and_none_pass() -> None:
    declared = {"api_key_env": "VLLM_API_KEY"}
    for ok in ("VLLM_API_KEY", "_K", "a" * 128, None, ""):
        assert parameters.check_parameters("c", declared, {"api_key_env": ok}) == {"api_key_env": ok}
    with pytest.raises(runner.RunbookError, match="NAME of an environment variable") as info:
        parameters.check_parameters("c", declared, {"api_key_env": 123456789012})
    assert "123456789012" not in str(info.value)


def test_pasted_key_is_refused_by_the_cli_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", _never_run("the notebook"))
    run_dir = tmp_path / "run"
    argv = ["run", "canary_validation", "-r", "endpoint", "http://127.0.0.1:1", "-r", "api_key_env", PASTED_KEY]
    assert main([*argv, "--run-dir", str(run_dir)]) == exit_codes.REFUSED
    err = capsys.readouterr().err
    assert "api_key_env" in err and PASTED_KEY not in err and PASTED_KEY[:10] not in err
    assert not run_dir.exists()


def test_pasted_key_in_a_suite_file_is_refused_up_front(tmp_path: Path) -> None:
    params = tmp_path / "suite.yaml"
    params.write_text(f"shared:\n  endpoint: http://127.0.0.1:1\ncanary_validation:\n  api_key_env: {PASTED_KEY}\n")
    with pytest.raises(runner.RunbookError, match="api_key_env") as info:
        parameters.load_param_file(params)
    assert PASTED_KEY not in str(info.value)
    params.write_text(f"shared:\n  api_key_env: {PASTED_KEY}\n")
    with pytest.raises(runner.RunbookError, match="shared.api_key_env"):
        parameters.load_param_file(params)


# -- end to end: runbook 03 against a surrogate endpoint behind an environment proxy -------------
@pytest.mark.slow
def test_canary_runbook_keeps_its_report_with_surrogates_and_a_proxy(stub: Stub, proxy: Stub, tmp_path: Path) -> None:
    params, run_dir, junit = tmp_path / "p.yaml", tmp_path / "run", tmp_path / "canary.xml"
    params.write_text(
        json.dumps({"endpoint": stub.url, "steps": ["model_load", "short_text", "access_control"], "api_key_env": None})
    )
    argv = ["run", "canary_validation", "-f", str(params), "--run-dir", str(run_dir), "--junit-xml", str(junit)]
    assert main(argv) == exit_codes.OK
    report = json.loads((run_dir / "canary" / "canary_report.json").read_text(encoding="utf-8"))
    assert report["model"] == "m\ufffd"
    assert proxy.requests == []
    assert junit.is_file()
