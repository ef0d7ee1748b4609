"""Target lifecycle: clear typed failures, state on disk, the CLI, the cached model."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from vllm_runbooks.cli import main
from vllm_runbooks.cli.target import EXIT_CODES
from vllm_runbooks.client import EndpointClient
from vllm_runbooks.target import (
    ModelSpec,
    TargetConfig,
    ensure_model,
    install_status,
    start_target,
    stop_target,
    target_status,
)
from vllm_runbooks.target.server import STATE_FILE, _proc_start_time


def test_busy_port_is_reported_not_raised(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        h = start_target("busy", port=port, root=tmp_path)
    assert not h.ok and h.failure is not None and h.failure.kind == "port_busy"
    assert str(port) in h.failure.message
    assert "failed: port_busy" in repr(h)


def test_missing_install_is_reported(tmp_path: Path) -> None:
    h = start_target("noinstall", root=tmp_path, python=str(tmp_path / "no-such-python"))
    assert not h.ok and h.failure is not None and h.failure.kind == "not_installed"
    assert "install_target.sh" in h.failure.message
    assert not install_status(str(tmp_path / "no-such-python")).ok


def test_stale_state_is_cleared_by_stop(tmp_path: Path) -> None:
    sdir = tmp_path / "ghost"
    sdir.mkdir()
    # pid 1 exists but its start time will not match: a recycled pid must never be signalled
    state = {"pid": 1, "pid_start_time": "-1", "port": 1, "base_url": "http://127.0.0.1:1"}
    (sdir / STATE_FILE).write_text(json.dumps(state))
    assert target_status("ghost", root=tmp_path).state == "stale"
    res = stop_target("ghost", root=tmp_path)
    assert res.ok and not res.was_running
    assert not (sdir / STATE_FILE).exists()
    assert target_status("ghost", root=tmp_path).state == "stopped"


def test_stop_when_nothing_runs(tmp_path: Path) -> None:
    res = stop_target("never", root=tmp_path)
    assert res.ok and not res.was_running and res.signal is None


def test_config_args() -> None:
    args = TargetConfig().server_args()
    for flag in ("--enforce-eager", "--enable-prompt-tokens-details", "--enable-auto-tool-choice"):
        assert flag in args
    assert args[args.index("--tool-call-parser") + 1] == "hermes"
    assert args[args.index("--kv-cache-memory-bytes") + 1] == str(256 * 1024 * 1024)
    bare = TargetConfig(prefix_caching=False, tool_parser=False).server_args()
    assert "--no-enable-prefix-caching" in bare and "--enable-auto-tool-choice" not in bare
    assert "--tool-call-parser" not in bare


def test_model_spec_key_changes_with_inputs() -> None:
    assert ModelSpec().key() == ModelSpec().key()
    assert ModelSpec(seed=1).key() != ModelSpec().key()


@pytest.mark.server
@pytest.mark.slow
def test_model_build_is_deterministic_and_cached(tmp_path: Path) -> None:
    spec = ModelSpec(seed=7)
    first = ensure_model(spec, root=tmp_path / "a")
    assert first.ok and first.built, first.error
    again = ensure_model(spec, root=tmp_path / "a")
    assert again.ok and not again.built and again.path == first.path
    other = ensure_model(spec, root=tmp_path / "b")
    info_a = json.loads((Path(first.path) / "build_info.json").read_text())
    info_b = json.loads((Path(other.path) / "build_info.json").read_text())
    assert info_a["files"] == info_b["files"]  # byte-identical rebuild
    assert info_a["biased_tokens"] > 0
    tok = json.loads((Path(first.path) / "tokenizer.json").read_text())
    added = {t["content"]: t["special"] for t in tok["added_tokens"]}
    assert added["<tool_call>"] is False and added["<|im_end|>"] is True
    assert "tools" in (Path(first.path) / "chat_template.jinja").read_text()


@pytest.mark.server
@pytest.mark.slow
def test_crash_during_startup_reports_log_tail(tmp_path: Path) -> None:
    # The tiny model has 4096 positions; vLLM refuses a longer context and exits.
    h = start_target("crash", TargetConfig(max_model_len=1_000_000), root=tmp_path, startup_timeout_s=240)
    assert not h.ok and h.failure is not None
    assert h.failure.kind == "crashed" and h.failure.exit_code not in (None, 0)
    assert "max_model_len" in h.failure.log_tail or "max-model-len" in h.failure.log_tail
    assert "Error" in h.failure.message  # the root cause, not just "exited with code 1"
    assert target_status("crash", root=tmp_path).state == "stopped"


@pytest.mark.server
@pytest.mark.slow
def test_cli_start_status_reuse_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VLLM_RUNBOOKS_CACHE", str(tmp_path))
    try:
        assert main(["target", "start", "--name", "cli", "--no-prefix-caching"]) == 0
        url = capsys.readouterr().out.strip()
        assert url.startswith("http://127.0.0.1:")
        with EndpointClient(url) as c:
            assert c.health().ok
            cfg = c.metrics().snapshot.cache_config()  # type: ignore[union-attr]
            assert cfg["enable_prefix_caching"] == "False"

        assert main(["target", "status", "--name", "cli"]) == 0
        assert "running" in capsys.readouterr().out
        state = json.loads((tmp_path / "target" / "cli" / STATE_FILE).read_text())
        assert state["pid_start_time"] == _proc_start_time(state["pid"])
        assert (tmp_path / "target" / "cli" / "server.log").stat().st_size > 0

        # same settings: reused, same URL; other settings: refused with a clear message
        assert main(["target", "start", "--name", "cli", "--no-prefix-caching"]) == 0
        assert capsys.readouterr().out.strip() == url
        assert main(["target", "start", "--name", "cli"]) == EXIT_CODES["already_running"]
        assert "already running" in capsys.readouterr().err

        assert main(["target", "stop", "--name", "cli"]) == 0
        assert "stopped (SIGTERM" in capsys.readouterr().out
        with pytest.raises(ProcessLookupError):
            os.killpg(state["pid"], 0)  # the whole group (engine core, workers) is gone
        assert main(["target", "status", "--name", "cli"]) == 1
        with EndpointClient(url, timeout_s=2) as c:
            assert c.health().failure.kind == "connection_refused"  # type: ignore[union-attr]
    finally:
        stop_target("cli", root=tmp_path / "target")


def test_failed_handle_displays_reason(tmp_path: Path) -> None:
    h = start_target("noinstall", root=tmp_path, python=str(tmp_path / "no-such-python"))
    html = h._repr_html_()
    assert "not started" in html and "not_installed" in html
