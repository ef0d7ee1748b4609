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
