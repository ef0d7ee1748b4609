"""Canary logic without a server: PNG, tool-call judging, nccl-tests parsing, log parsing, GPU step
from evidence, verdict and plan, and the registry's bounds."""

from __future__ import annotations

import json
import struct
import threading
import zlib
from pathlib import Path

import pytest

from vllm_runbooks.canary import (
    STEPS,
    VERDICTS,
    CanaryConfig,
    CanaryReport,
    Status,
    StepResult,
    ToolAccuracy,
    check_call,
    default_tool_schema_path,
    expansion_plan,
    failed,
    load_tool_suite,
    make_png,
    overall_verdict,
    parse_nccl_tests,
    passed,
    png_data_url,
    register,
    run_canary,
    skipped,
)
from vllm_runbooks.canary.serverlog import parse_server_log
from vllm_runbooks.client import ChatResult, Failure, FailureKind, ToolCall

DATA = Path(__file__).parent / "data" / "canary"


# -- PNG ------------------------------------------------------------------------------------
def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        out.append((kind, body))
        pos += 12 + length
    return out


def test_png_is_a_valid_rgb_image_with_its_pixels() -> None:
    png = make_png(20, 10, (1, 2, 3))
    chunks = _png_chunks(png)
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    w, h, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    assert (w, h, depth, colour) == (20, 10, 8, 2)
    raw = zlib.decompress(chunks[1][1])
    assert len(raw) == h * (1 + 3 * w)
    centre_row = raw[5 * (1 + 3 * w) : 6 * (1 + 3 * w)]
    assert centre_row[0] == 0 and centre_row[1 + 3 * 10 : 1 + 3 * 11] == bytes((1, 2, 3))
    assert png_data_url(png).startswith("data:image/png;base64,iVBORw0KGgo")


# -- tool-call judging ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def suite():  # type: ignore[no-untyped-def]
    return load_tool_suite(None)


def test_default_tool_schema_file_ships_and_loads(suite) -> None:  # type: ignore[no-untyped-def]
    assert default_tool_schema_path().is_file()
    assert suite.names() == ["get_weather", "set_alarm", "lookup_order"]
    assert all(t["function"]["strict"] for t in suite.tools)
    assert suite.response_schema["required"] == ["status", "replicas"]


def test_tool_suite_rejects_broken_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {"type": "nope"}}}]))
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        load_tool_suite(bad)
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(ValueError, match="non-empty 'tools'"):
        load_tool_suite(tmp_path / "empty.json")
    with pytest.raises(ValueError, match="cannot read"):
        load_tool_suite(tmp_path / "missing.json")
    ok = tmp_path / "list.json"
    ok.write_text(json.dumps([{"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}]))
    assert load_tool_suite(ok).names() == ["ping"]


@pytest.mark.parametrize(
    ("name", "args", "expected", "problem"),
    [
        ("get_weather", '{"city": "Paris", "unit": "celsius"}', None, None),
        ("get_weather", '{"city": "Berlin", "unit": "celsius"}', None, "schema"),
        ("set_alarm", '{"hour": 24, "minute": 0}', None, "schema"),
        ("set_alarm", '{"hour": 7}', None, "schema"),
        ("lookup_order", '{"order_id": "ab1234"}', None, "schema"),
        ("lookup_order", '{"order_id": "AB1234", "extra": 1}', None, "schema"),
        ("lookup_order", '{"order_id": "AB12', None, "invalid_json"),
        ("delete_everything", "{}", None, "unknown_tool"),
        ("get_weather", '{"city": "Paris", "unit": "celsius"}', "set_alarm", "wrong_name"),
    ],
)
def test_check_call_judges_each_problem(suite, name, args, expected, problem) -> None:  # type: ignore[no-untyped-def]
    check = check_call(ToolCall("id", name, args), suite, request=0, mode="named", stream=False, expected=expected)
    assert check.problem == problem, check.detail
    assert check.valid == (problem is None)


def _ok(calls: list[tuple[str, str]], finish: str = "tool_calls") -> ChatResult:
    return ChatResult(
        ok=True, finish_reason=finish, tool_calls=[ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)]
    )


def test_tool_accuracy_counts_and_rates(suite) -> None:  # type: ignore[no-untyped-def]
    acc = ToolAccuracy(threshold=0.9)
    acc.add_forced(0, "required", False, _ok([("get_weather", '{"city":"Lima","unit":"celsius"}')]), suite, None, None)
    acc.add_forced(1, "named", False, _ok([("set_alarm", '{"hour":1,"minute":2}')], "stop"), suite, "set_alarm", None)
    acc.add_forced(2, "required", True, _ok([("set_alarm", "not json")]), suite, None, None)
    acc.add_forced(3, "required", True, _ok([], "stop"), suite, None, None)
    failure = ChatResult(ok=False, failure=Failure(FailureKind.HTTP_STATUS, "HTTP 400", 400))
    acc.add_forced(4, "named", True, failure, suite, "lookup_order", "HTTP 400: bad")
    acc.add_no_call_probe("none", _ok([("get_weather", "{}")]), None)
    assert (acc.requests, acc.answered, acc.request_failures) == (5, 4, 1)
    assert (acc.calls, acc.valid_calls, acc.invalid_json, acc.missed_calls) == (3, 2, 1, 1)
    assert acc.schema_accuracy == pytest.approx(2 / 3, abs=1e-4)
    assert acc.call_rate == 0.75
    assert acc.finish_reasons == {"tool_calls": 2, "stop": 2}
    assert acc.finish_reason_mismatch == 1  # required answered with "stop"; named "stop" is normal
    assert acc.unexpected_calls == 1
    assert acc.by_mode["required/stream"] == {"requests": 2, "answered": 2, "calls": 1, "valid": 0}
    problems = " | ".join(acc.problems())
    assert "schema accuracy 66.7% (2/3)" in problems and "1 invalid JSON" in problems
    assert "1 of 6 requests failed (HTTP 400: bad)" in problems
    assert "no-call probes called a tool" in problems
    d = acc.to_dict()
    assert d["schema_accuracy"] == acc.schema_accuracy and len(d["checks"]) == 3
    assert ToolAccuracy.from_dict(d).checks[2].problem == "invalid_json"


def test_tool_accuracy_passes_at_threshold(suite) -> None:  # type: ignore[no-untyped-def]
    acc = ToolAccuracy(threshold=1.0)
    for i in range(4):
        acc.add_forced(i, "required", False, _ok([("set_alarm", '{"hour":3,"minute":4}')]), suite, None, None)
    acc.add_no_call_probe("none", ChatResult(ok=True, content="hi", finish_reason="stop"), None)
    assert acc.problems() == [] and acc.schema_accuracy == 1.0


# -- nccl-tests -------------------------------------------------------------------------------
def test_nccl_tests_real_output_parses() -> None:
    res = parse_nccl_tests((DATA / "nccl_all_reduce_2xA100.txt").read_text(), "sample")
    assert res.n_gpus == 2 and res.ranks == 2 and res.hosts == ["3767c65d25c4"]
    assert res.devices == ["NVIDIA A100-SXM4-80GB"] * 2
    assert [r.size_bytes for r in res.rows] == [134217728, 268435456, 536870912]
    assert res.rows[2].oop_busbw == 192.43 and res.rows[1].ip_busbw == 186.17
    assert res.avg_busbw_gbps == 179.465 and res.max_busbw_gbps == 192.43
    assert res.wrong_total == 0 and res.out_of_bounds == 0 and res.out_of_bounds_ok is True
    assert res.complete and res.problems() == []
    assert res.problems(min_busbw_gbps=200.0) == ["average bus bandwidth 179.465 GB/s below 200.0 GB/s"]


def test_nccl_tests_wrong_values_fail() -> None:
    res = parse_nccl_tests((DATA / "nccl_all_reduce_wrong_constructed.txt").read_text())
    assert res.wrong_total == 50 and res.wrong_rows == 1 and res.rows[2].ip_wrong is None
    assert res.out_of_bounds == 50 and res.out_of_bounds_ok is False
    problems = res.problems()
    assert "#wrong = 50 across 1 rows" in problems and "Out of bounds values : 50 FAILED" in problems


def test_nccl_tests_truncated_or_foreign_output() -> None:
    text = (DATA / "nccl_all_reduce_2xA100.txt").read_text().split("# Out of bounds")[0]
    assert "did not finish" in " ".join(parse_nccl_tests(text).problems())
    assert "no result rows" in parse_nccl_tests("hello\nworld\n").problems()[0]


def test_multi_gpu_step_reads_nccl_tests_file() -> None:
    ok = run_canary(steps=["multi_gpu"], nccl_tests_file=str(DATA / "nccl_all_reduce_2xA100.txt"))
    step = ok.steps[0]
    assert step.status == Status.PASS and "179.465 GB/s" in step.reason
    bad = run_canary(steps=["multi_gpu"], nccl_tests_file=str(DATA / "nccl_all_reduce_wrong_constructed.txt"))
    assert bad.steps[0].status == Status.FAIL and "#wrong = 50" in bad.steps[0].reason
    assert bad.verdict == "fail"


# -- server log ---------------------------------------------------------------------------------
def test_server_log_startup_and_load_lines() -> None:
    log = parse_server_log(DATA / "vllm-0.32-cpu-startup.log")
    assert log["startup_s"] == 32.0  # 22:02:28 first stamp → 22:03:00 "Starting vLLM server on"
    assert log["weights_load_s"] == 0.01 and log["engine_init_s"] == 0.73
    assert any("Loading weights took" in ln for ln in log["load_lines"])
    assert parse_server_log(DATA / "nope.log")["error"].startswith("cannot read server log")


def test_gzip_server_log_reads_like_the_plain_one_and_a_cut_one_says_so(tmp_path: Path) -> None:
    import gzip

    plain = parse_server_log(DATA / "vllm-0.32-cpu-startup.log")
    gz = tmp_path / "server.log.gz"
    data = gzip.compress((DATA / "vllm-0.32-cpu-startup.log").read_bytes())
    gz.write_bytes(data)
    got = parse_server_log(gz)
    assert {k: v for k, v in got.items() if k != "path"} == {k: v for k, v in plain.items() if k != "path"}
    assert got["startup_s"] == 32.0 and got["error"] is None
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert "partly unreadable" in parse_server_log(cut)["error"]


# -- GPU step from runbook 01 evidence -------------------------------------------------------
def _evidence(tmp_path: Path, gpus: list[dict], probe: dict | None) -> Path:
    items = {
        "nvidia": {
            "status": "ok" if gpus else "unavailable",
            "reason": None if gpus else "NVML init failed",
            "value": {"gpus": gpus, "driver_version": "575.57.08", "cuda_driver_version": "12.9"},
        },
        "image": {"status": "ok", "value": {"cuda_version": "13.0.1"}},
    }
    if probe is not None:
        items["cuda_probe"] = {"status": "ok", "value": probe}
    run = tmp_path / "run01"
    (run / "evidence").mkdir(parents=True)
    (run / "evidence" / "evidence.json").write_text(
        json.dumps({"schema": "evidence", "schema_version": 1, "items": items})
    )
    return run


H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}


def test_gpu_step_fails_with_the_in_image_probe_error(tmp_path: Path) -> None:
    err = "CUDA driver version is insufficient for CUDA runtime version"
    run = _evidence(tmp_path, [H100, {**H100, "index": 1}], {"ran": True, "ok": False, "error": err})
    report = run_canary(steps=["gpu_cuda", "multi_gpu"], evidence_dir=str(run), allreduce_timeout_s=5)
    gpu = report.step("gpu_cuda")
    assert gpu is not None and gpu.status == Status.FAIL
    assert err in gpu.reason and "2 × NVIDIA H100 80GB HBM3 (cc 9.0)" in gpu.reason and "12.9" in gpu.reason


def test_gpu_step_passes_on_probe_ok_and_skips_without_gpus(tmp_path: Path) -> None:
    run = _evidence(tmp_path, [H100], {"ran": True, "ok": True, "error": None})
    report = run_canary(steps=["gpu_cuda", "multi_gpu"], evidence_dir=str(run))
    assert report.step("gpu_cuda").status == Status.PASS  # type: ignore[union-attr]
    multi = report.step("multi_gpu")
    assert multi is not None and multi.status == Status.SKIP and multi.details["not_applicable"] is True
    assert report.verdict == "pass"  # a single GPU makes step 7 not applicable, not missing

    none = _evidence(tmp_path / "b", [], None)
    report = run_canary(steps=["gpu_cuda"], evidence_dir=str(none))
    assert report.steps[0].status == Status.SKIP and "NVML init failed" in report.steps[0].reason
    assert report.verdict == "incomplete"


def test_gpu_step_fails_on_unreadable_evidence(tmp_path: Path) -> None:
    report = run_canary(steps=["gpu_cuda"], evidence_dir=str(tmp_path))
    assert report.steps[0].status == Status.FAIL and "no evidence file" in report.steps[0].reason
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "evidence.json").write_text("{broken")
    report = run_canary(steps=["gpu_cuda"], evidence_dir=str(tmp_path))
    assert report.steps[0].status == Status.FAIL and "evidence.json: not readable JSON" in report.steps[0].reason


# -- verdict, plan, registry ------------------------------------------------------------------
def _step(name: str, status: Status, **details: object) -> StepResult:
    return StepResult(name, name, 1, status, "r", details=dict(details))


def test_verdict_and_expansion_plan() -> None:
    serving = [_step(n, Status.PASS) for n in ("model_load", "short_text", "tool_calling", "structured_agent")]
    assert overall_verdict(serving) == "pass"
    na = serving + [_step("image_input", Status.SKIP, not_applicable=True)]
    assert overall_verdict(na) == "pass"
    missing = serving + [_step("gpu_cuda", Status.SKIP)]
    assert overall_verdict(missing) == "incomplete"
    plan = expansion_plan(missing, "incomplete")
    assert [p.allowed for p in plan] == [True, False, False]
    assert any("gpu_cuda" in b for b in plan[1].blocking)
    broken = [_step("model_load", Status.FAIL)] + serving[1:]
    plan = expansion_plan(broken, overall_verdict(broken))
    assert overall_verdict(broken) == "fail" and not plan[0].allowed and "model_load did not pass" in plan[0].blocking
    assert overall_verdict([]) == "incomplete"


def test_registry_adds_a_step_without_touching_anything_else() -> None:
    @register("zz_custom", "Custom check", 99, needs_endpoint=False)
    def custom(ctx):  # type: ignore[no-untyped-def]
        ctx.time("custom", 0.5)
        return passed("custom ok", {"seen": ctx.config.tool_calls})

    @register("zz_broken", "Broken check", 99.5, needs_endpoint=False)
    def broken(ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    try:
        report = run_canary(steps=["zz_custom", "zz_broken"], tool_calls=3)
        custom_r, broken_r = report.steps
        assert (custom_r.status, custom_r.timings, custom_r.evidence) == (Status.PASS, {"custom": 0.5}, '{"seen": 3}')
        assert broken_r.status == Status.FAIL and broken_r.reason == "step raised RuntimeError: boom"
        assert report.verdict == "fail"
    finally:
        STEPS.remove("zz_custom")
        STEPS.remove("zz_broken")


def test_a_hung_step_is_abandoned_at_step_timeout() -> None:
    release = threading.Event()

    @register("zz_hang", "Hanging check", 98, needs_endpoint=False)
    def hang(ctx):  # type: ignore[no-untyped-def]
        release.wait(30)  # released by the test below, never by a timer
        return skipped("released")

    try:
        report = run_canary(steps=["zz_hang"], step_timeout_s=0.2)
        step = report.steps[0]
        assert step.status == Status.FAIL and "step_timeout_s=0.2" in step.reason
        assert step.duration_s < 5
    finally:
        release.set()
        STEPS.remove("zz_hang")


def test_report_round_trips_and_renders() -> None:
    report = run_canary(steps=["multi_gpu"], nccl_tests_file=str(DATA / "nccl_all_reduce_2xA100.txt"))
    again = CanaryReport.from_dict(json.loads(report.to_json()))
    assert again.steps[0].status == Status.PASS and again.plan[0].stage == report.plan[0].stage
    html = report._repr_html_()
    assert "Canary verdict" in html and "Multi-GPU communication" in html
    assert report.headline().figures["counts"] == {"passed": 1, "failed": 0, "skipped": 0}
    assert report.figure("latency").figure.data and report.figure("tool_accuracy").figure.layout.title.text
    assert "fail" in repr(failed("x")) and CanaryConfig(tool_calls=10_000).tool_calls == 200


def test_headline_verdict_is_only_ever_pass_fail_or_incomplete() -> None:
    serving = [_step(n, Status.PASS) for n in ("model_load", "short_text", "tool_calling", "structured_agent")]
    cases = {
        "pass": serving,
        "fail": [_step("model_load", Status.FAIL)],
        "incomplete": [_step("gpu_cuda", Status.SKIP)],
    }
    for expected, steps in cases.items():
        verdict = overall_verdict(steps)
        report = CanaryReport("http://x", None, "t", 0.0, verdict, steps)
        assert verdict == expected and report.headline().verdict == expected
    assert overall_verdict([]) == "incomplete"
    odd = CanaryReport("http://x", None, "t", 0.0, "PASS!", serving)  # e.g. a hand-edited report
    assert odd.headline().verdict == "incomplete" and set(VERDICTS) == {"pass", "fail", "incomplete"}


def test_save_report_writes_redacted_artefacts_and_never_overwrites(tmp_path: Path) -> None:
    secret = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
    steps = [_step("model_load", Status.FAIL), _step("short_text", Status.PASS)]
    steps[0].evidence = f"Authorization: Bearer {secret}"
    report = CanaryReport("http://x", "m", "2026-01-01T00:00:00Z", 1.0, overall_verdict(steps), steps)
    first = report.save(tmp_path)
    assert first == tmp_path / "canary" / "canary_report.json"
    saved = first.read_text()
    assert secret not in saved and CanaryReport.from_dict(json.loads(saved)).verdict == "fail"
    step_file = tmp_path / "canary" / "steps" / "model_load.json"
    assert secret not in step_file.read_text() and json.loads(step_file.read_text())["status"] == "fail"
    assert (tmp_path / "canary" / "steps" / "short_text.json").is_file()
    report.verdict = "pass"
    second = report.save(tmp_path)  # the cell run again: new files, the first untouched
    assert second is not None and second.name == "canary_report-2.json"
    assert first.read_text() == saved and (tmp_path / "canary" / "steps" / "model_load-2.json").is_file()
    assert report.save(None) is None
