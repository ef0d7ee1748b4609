"""Review #7: parameters the runbooks act on are never changed by redaction before use.

A command that would run with ``<redacted>`` in it is refused (exit 2, use an environment
variable); a path parameter holding ``key=...`` is used as given when it exists; and every
parameter of every shipped template is classified, so a new path parameter cannot be missed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_runbooks import redact
from vllm_runbooks.cli import exit_codes, main
from vllm_runbooks.execution import parameters, runner, templates

#: Parameters of the shipped templates that do NOT name files or folders the runbook reads.
#: A new parameter must be added here or be path-like (parameters.is_path_parameter): the test below
#: fails otherwise, so nobody forgets to decide.
NOT_PATHS = {
    "adopted_path",  # a decision path of runbook 02 (matches the naming rule; harmless: kept only if it exists)
    "allreduce_timeout_s",
    "api_key_env",
    "approvals_required",
    "approver_roles",
    "affected_services",  # runbook 06's change-board fields: names and levels, never files
    "change_type",
    "impact",
    "impact_reason",
    "planned_end",
    "planned_start",
    "risk",
    "risk_reason",
    "brand",
    "can_maintain_custom_build",
    "collector_timeout_s",
    "expected_gpu_count",
    "kernel_log_hours",
    "compat_libs",
    "compute_capability",
    "container",
    "context_margin_tokens",
    "driver_version",
    "endpoint",
    "few_nodes",
    "gpu_count",
    "gpu_name",
    "image",
    "image_cuda",
    "image_ref",
    "image_tools_requests",
    "input_words",
    "isolated_environment_available",
    "kv_stop_fraction",
    "latency_regression_pct",
    "launch_command",
    "level_requests",
    "requester",
    "level_seconds",
    "level_warmup_requests",
    "long_context_tokens",
    "maintenance_window_available",
    "max_concurrency",
    "max_error_rate",
    "max_requests",
    "max_restarts",
    "max_runs",
    "max_seconds",
    "max_tokens",
    "metrics_interval_s",
    "min_knee_concurrency",
    "min_requests_for_stop",
    "model",
    "node_timeout_s",
    "nvidia_require_cuda",
    "nvml",
    "pid",
    "probe_container",
    "probe_image",
    "profile",
    "ramp_factor",
    "ray_address",
    "recovery_deadline_hours",
    "reevaluate_days",
    "request_timeout_s",
    "requests",
    "restart_command",
    "restart_count",
    "restart_target",
    "restart_timeout_s",
    "retention_check",
    "rollback_store",  # recorded (redacted), never read
    "same_prefix_requests",
    "same_prefix_tokens",
    "saturation_max_efficiency",
    "saturation_slope",
    "saturation_window",
    "seed",
    "shared_nodes_can_stop",
    "shared_prompt_tokens",
    "slo_tpot_ms",
    "slo_ttft_ms",
    "stage_seconds",
    "stages",
    "step_timeout_s",
    "steps",
    "today",
    "tool_accuracy_drop",
    "tool_accuracy_threshold",
    "tool_calls",
    "want_prefix_caching",
    "watch_hours",
    "wave_size",
    "workers",
}

ADDED_BY_REVIEW = (
    "results_file",
    "baseline_dir",
    "record_of",
    "bundles",
    "runs_dir",
    "rules_file",
    "restart_target_root",
)


def _declared() -> dict[str, set[str]]:
    return {name: set(templates.parameter_defaults(path)) for name, path in templates.available_runbooks().items()}


def test_every_parameter_of_every_template_is_classified_path_or_not() -> None:
    declared = _declared()
    assert len(declared) >= 8
    unclassified = {
        (book, p)
        for book, params in declared.items()
        for p in params
        if not parameters.is_path_parameter(p) and p not in NOT_PATHS
    }
    assert not unclassified, (
        f"decide whether these name files (parameters.PATH_PARAMETERS) or not (NOT_PATHS): {unclassified}"
    )
    everything = set().union(*declared.values())
    stale = NOT_PATHS - everything
    assert not stale, f"NOT_PATHS lists parameters no template has: {stale}"


@pytest.mark.parametrize("key", ADDED_BY_REVIEW)
def test_path_parameters_with_key_equals_are_used_as_given(tmp_path: Path, key: str) -> None:
    real = tmp_path / "key=abc123def" / "thing"
    real.mkdir(parents=True)
    value: object = [str(real)] if key == "bundles" else str(real)
    raw = {key: value}
    params = redact.redact_parameters(raw)
    assert params != raw  # the redactor alone would break the path
    parameters.keep_real_paths(raw, params)
    assert params == raw


def test_a_path_that_does_not_exist_stays_redacted() -> None:
    raw = {"results_file": "/nowhere/key=abc123def/r.json"}
    params = redact.redact_parameters(raw)
    parameters.keep_real_paths(raw, params)
    assert "abc123def" not in str(params)


def test_restart_command_with_a_credential_is_refused_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    code = main(
        [
            "run",
            "load_check",
            "-r",
            "restart_command",
            "kubectl --token=abcdef1234567890 rollout restart deploy/vllm",
            "--run-dir",
            str(run_dir),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == exit_codes.REFUSED
    assert "restart_command" in err and "environment variable" in err
    assert "abcdef1234567890" not in err
    assert not run_dir.exists()


def test_restart_command_without_a_credential_is_not_refused() -> None:
    raw = {"restart_command": "docker restart my-vllm"}
    parameters.refuse_altered_targets(raw, redact.redact_parameters(raw))


def test_a_ray_address_with_credentials_is_refused_not_rewritten() -> None:
    raw = {"ray_address": "ray://admin:hunter2secret@head:10001"}
    with pytest.raises(runner.RunbookError, match="environment variable"):
        parameters.refuse_altered_targets(raw, redact.redact_parameters(raw))
