"""The one registry (issue 22 item 1): collectors, canary steps and load stages share it, and a taken
name is refused instead of silently replacing the part registered first."""

from __future__ import annotations

import importlib

import pytest

from vllm_runbooks.canary import registry as canary_registry
from vllm_runbooks.evidence import registry as evidence_registry
from vllm_runbooks.load import registry as load_registry
from vllm_runbooks.registry import DuplicateName, Registry


def test_the_three_kinds_of_parts_are_one_registry_each_with_their_builtins() -> None:
    assert all(
        isinstance(r, Registry) for r in (evidence_registry.COLLECTORS, canary_registry.STEPS, load_registry.STAGES)
    )
    assert {"nvidia", "kernel_log", "hardware"} <= {c.name for c in evidence_registry.registered_collectors()}
    steps = [s.name for s in canary_registry.registered_steps()]
    assert steps[0] == "gpu_cuda" and steps[-1] == "gpu_health" and "multi_gpu" in steps
    assert [s.name for s in load_registry.registered_stages()][0] == "health"


@pytest.mark.parametrize(
    "register, name",
    [
        (lambda: canary_registry.register("short_text", "Mine", 3.5), "short_text"),
        (lambda: evidence_registry.register("nvidia", "Mine", order=1), "nvidia"),
        (lambda: load_registry.register("ramp", "Mine", 5), "ramp"),
    ],
)
def test_a_taken_name_is_refused_and_the_builtin_stays(register, name) -> None:  # type: ignore[no-untyped-def]
    registries = (canary_registry.STEPS, evidence_registry.COLLECTORS, load_registry.STAGES)
    load_registry.registered_stages()  # the built-in stages are registered on first use
    before = next(r[name] for r in registries if name in r)

    def mine(ctx):  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(DuplicateName, match=f"'{name}' is registered already"):
        register()(mine)
    assert next(r[name] for r in registries if name in r) is before


def test_importing_a_module_again_is_not_a_duplicate() -> None:
    module = importlib.import_module("vllm_runbooks.canary.steps.access")
    first = canary_registry.STEPS["access_control"]
    importlib.reload(module)  # the same definitions run again: they replace themselves
    assert canary_registry.STEPS["access_control"].fn is not first.fn
    assert canary_registry.STEPS["access_control"].title == first.title


def test_a_temporary_part_is_gone_after_its_block() -> None:
    reg: Registry = Registry("thing")
    part = load_registry.Stage("zz_temp", "Temporary", 99, lambda ctx: None)
    with reg.temporarily(part):
        assert reg.ordered() == [part]
    assert "zz_temp" not in reg and reg.ordered() == []


def test_the_multi_gpu_check_serves_the_canary_and_the_load_check_without_a_fake_context() -> None:
    from pathlib import Path

    from vllm_runbooks.canary import run_canary
    from vllm_runbooks.canary.steps.gpu import communication_check

    nccl = str(Path(__file__).parent / "data" / "canary" / "nccl_all_reduce_2xA100.txt")
    step = run_canary(steps=["multi_gpu"], nccl_tests_file=nccl).step("multi_gpu")
    direct = communication_check(nccl, None, 5.0)
    assert step.status.value == direct.status.value == "pass" and step.reason == direct.reason
    none = communication_check(None, ([], "no GPU here", None), 5.0)
    assert none.status.value == "skip" and "0 GPU(s) (no GPU here)" in none.reason
    import inspect

    from vllm_runbooks.load import builtin_stages

    assert "CanaryConfig" not in inspect.getsource(builtin_stages)  # runbook 05 builds no canary context
