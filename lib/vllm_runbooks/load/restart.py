"""Restart stability: restart the server N times and time each return to healthy.

Why in the load check: a node that serves well once but takes ten minutes (or never) to come
back after a restart is not ready for a pool that restarts replicas on every rollout. Only when
asked (``restart_count`` > 0), with the operator's own command (``docker restart my-vllm``,
``kubectl delete pod …``) run without a shell, or the embedded target's own stop/start. Every
wait is bounded by ``timeout_s``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..records import Record
from ..redact import redact_text


@dataclass
class RestartAttempt(Record):
    """One restart: did the server come back, and how long until ``/health`` answered 200."""

    SCHEMA = "load_restart_attempt"
    index: int
    ok: bool
    seconds_to_healthy: float | None = None
    command_s: float | None = None
    returncode: int | None = None
    message: str = ""


def wait_healthy(health: Callable[[], bool], deadline: float, interval_s: float = 0.5) -> bool:
    """Poll ``health`` until it is true or ``deadline`` (``time.monotonic``) passes."""
    while time.monotonic() < deadline:
        if health():
            return True
        time.sleep(min(interval_s, max(0.0, deadline - time.monotonic())))  # polling interval, not a sync
    return health()


def restart_with_command(command: str, health: Callable[[], bool], index: int, timeout_s: float) -> RestartAttempt:
    """Run ``command`` (split like a shell would, but no shell), then wait for health."""
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return RestartAttempt(index, False, message=f"restart command does not parse: {exc}")
    if not argv:
        return RestartAttempt(index, False, message="restart command is empty")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, errors="replace")
    except subprocess.TimeoutExpired:
        return RestartAttempt(index, False, command_s=round(time.monotonic() - t0, 2), message="command timed out")
    except OSError as exc:
        return RestartAttempt(index, False, message=f"cannot run restart command: {exc}")
    command_s = round(time.monotonic() - t0, 2)
    if proc.returncode != 0:
        tail = redact_text((proc.stderr or proc.stdout or "")[-400:])
        return RestartAttempt(index, False, command_s=command_s, returncode=proc.returncode, message=tail)
    ok = wait_healthy(health, deadline)
    return RestartAttempt(
        index,
        ok,
        seconds_to_healthy=round(time.monotonic() - t0, 2) if ok else None,
        command_s=command_s,
        returncode=0,
        message="" if ok else f"not healthy within {timeout_s:g} s of the restart",
    )


def restart_embedded(name: str, index: int, timeout_s: float, root: str | Path | None = None) -> RestartAttempt:
    """Stop and start the embedded target ``name`` with its own settings and port."""
    from ..target import TargetConfig, start_target, stop_target, target_status

    t0 = time.monotonic()
    status = target_status(name, root=Path(root) if root else None)
    try:
        state = json.loads((Path(status.state_dir) / "state.json").read_text(encoding="utf-8"))
        raw = dict(state.get("config") or {})
        raw["extra_args"] = tuple(raw.get("extra_args") or ())
        config = TargetConfig(**raw)
    except (OSError, ValueError, TypeError) as exc:
        return RestartAttempt(index, False, message=f"embedded target {name!r} has no readable state: {exc}")
    port = status.port
    stopped = stop_target(name, root=Path(root) if root else None)
    if not stopped.ok:
        return RestartAttempt(index, False, message=f"stop failed: {stopped.failure}")
    if port:  # connections the server closed at shutdown hold its port in TIME_WAIT for up to a minute
        from ..target.server import port_in_use

        wait_healthy(lambda: not port_in_use(port), min(t0 + timeout_s, time.monotonic() + 75.0))
    handle = start_target(name, config, port=port, root=Path(root) if root else None, startup_timeout_s=timeout_s)
    took = round(time.monotonic() - t0, 2)
    if not handle.ok:
        f = handle.failure
        return RestartAttempt(index, False, command_s=took, message=f"start failed: {f.kind if f else '?'}")
    return RestartAttempt(index, True, seconds_to_healthy=took, command_s=took, returncode=0)


__all__ = ["RestartAttempt", "restart_embedded", "restart_with_command", "wait_healthy"]
