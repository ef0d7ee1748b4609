"""Pytest plugin: session fixtures that run the real vLLM CPU target, one server per configuration.

Why a factory keyed by configuration: tests for tools, prefix caching and eviction each need a
server started differently, and a 2-core machine can afford one start (~40-60 s) per
configuration per session, not per test. Servers run on free ports with their state and logs
under the session's temporary directory, and are stopped at session end.

Ask for a server by preset name or by ``TargetConfig``::

    def test_x(target_factory):
        handle = target_factory("small_kv")                      # PRESETS name
        handle = target_factory(TargetConfig(max_num_seqs=2))    # any configuration

Shorthands (function-scoped, cheap once the server runs): ``target`` (default preset),
``target_client`` (an EndpointClient on it), ``target_no_tool_parser``,
``target_no_prefix_caching``, ``target_small_kv``. Do not keep a handle across tests: at most
``VLLM_RUNBOOKS_MAX_TARGETS`` (default 3) servers run at once, so one may be restarted.
A server that fails to start fails the requesting test with the log tail.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vllm_runbooks.client import EndpointClient
from vllm_runbooks.target import PRESETS, TargetConfig, TargetHandle, start_target, stop_target

TargetFactory = Callable[[str | TargetConfig], TargetHandle]


#: at most this many servers run at once; the least recently requested one is stopped to make room
#: and restarted on its next request. One per preset by default: a server holds about 2.2 GB and
#: idles at ~0 % CPU (measured on the 2-core CI machine), while each restart costs 30-50 s, and
#: with fewer slots than presets the server tests evicted and restarted each other.
MAX_RUNNING = int(os.environ.get("VLLM_RUNBOOKS_MAX_TARGETS", str(len(PRESETS))))


@pytest.fixture(scope="session")
def target_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TargetFactory]:
    root = Path(tmp_path_factory.mktemp("targets"))
    running: OrderedDict[TargetConfig, TargetHandle] = OrderedDict()  # least recently used first
    names: dict[TargetConfig, str] = {}
    lock = threading.Lock()

    def get(config: str | TargetConfig = "default") -> TargetHandle:
        if isinstance(config, str):
            if config not in PRESETS:
                raise KeyError(f"unknown target preset {config!r}; known: {sorted(PRESETS)}")
            preset_name, cfg = config, PRESETS[config]
        else:
            preset_name, cfg = None, config
        with lock:
            if cfg in running:
                running.move_to_end(cfg)
                handle = running[cfg]
            else:
                while len(running) >= MAX_RUNNING:
                    old_cfg, _ = running.popitem(last=False)
                    stop_target(names[old_cfg], root=root, grace_s=20)
                name = names.setdefault(cfg, preset_name or f"config{len(names)}")
                handle = start_target(name, cfg, root=root, startup_timeout_s=300)
                if handle.ok:
                    running[cfg] = handle
        if not handle.ok:
            f = handle.failure
            pytest.fail(
                f"vLLM target {handle.name!r} did not start: {f.kind if f else '?'}: "
                f"{f.message if f else ''}\n--- log tail ---\n{f.log_tail if f else ''}",
                pytrace=False,
            )
        return handle

    yield get

    for cfg in list(running):
        stop_target(names[cfg], root=root, grace_s=20)


@pytest.fixture
def target(target_factory: TargetFactory) -> TargetHandle:
    return target_factory("default")


@pytest.fixture
def target_no_tool_parser(target_factory: TargetFactory) -> TargetHandle:
    return target_factory("no_tool_parser")


@pytest.fixture
def target_no_prefix_caching(target_factory: TargetFactory) -> TargetHandle:
    return target_factory("no_prefix_caching")


@pytest.fixture
def target_small_kv(target_factory: TargetFactory) -> TargetHandle:
    return target_factory("small_kv")


@pytest.fixture
def target_client(target: TargetHandle) -> Iterator[EndpointClient]:
    with EndpointClient(target.base_url, model=target.model, timeout_s=60) as client:
        yield client
