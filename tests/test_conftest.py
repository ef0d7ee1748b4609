"""The test scheduler's grouping (tests/conftest.py): real-server modules share one worker."""

from __future__ import annotations

from conftest import uses_real_target


def test_modules_that_ask_for_a_real_server_are_found() -> None:
    # by a test's parameters, by a module fixture's parameters, by request.getfixturevalue
    for module in ("tests/test_canary_server.py", "tests/test_prefix_cache_server.py", "tests/test_html_offline.py"):
        assert uses_real_target(module), module


def test_modules_without_a_real_server_stay_apart() -> None:
    for module in ("tests/test_logs_signatures.py", "tests/test_fleet_ray.py", "tests/no_such_module.py"):
        assert not uses_real_target(module), module


class _XdistConfig:
    """The two options the scheduler hook and xdist's LoadScopeScheduling read (a stand-in config)."""

    def __init__(self, dist: str) -> None:
        self.dist = dist

    def getoption(self, name: str) -> str:
        assert name == "dist", name
        return self.dist

    def getvalue(self, name: str) -> list[str]:
        assert name == "tx", name
        return ["2*popen"]


def test_the_scheduler_puts_every_server_module_in_one_scope_and_keeps_other_modules_whole() -> None:
    from conftest import pytest_xdist_make_scheduler

    sched = pytest_xdist_make_scheduler(_XdistConfig("loadgroup"), None)
    scope = sched._split_scope
    servers = {scope("tests/test_canary_server.py::test_a"), scope("tests/test_prefix_cache_server.py::test_b[x]")}
    assert servers == {"real-vllm-target"}
    assert (
        scope("tests/test_fleet_ray.py::test_a")
        == scope("tests/test_fleet_ray.py::test_b")
        == "tests/test_fleet_ray.py"
    )
    assert scope("tests/test_logs_signatures.py::test_a") != scope("tests/test_fleet_ray.py::test_a")
    # any other --dist mode keeps xdist's own scheduler
    assert pytest_xdist_make_scheduler(_XdistConfig("load"), None) is None
