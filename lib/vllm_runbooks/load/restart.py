"""Restart stability: restart the server N times and time each return to healthy.

Why in the load check: a node that serves well once but takes ten minutes (or never) to come
back after a restart is not ready for a pool that restarts replicas on every rollout. Only when
asked (``restart_count`` > 0), with the operator's own command (``docker restart my-vllm``,
``kubectl delete pod …``) run without a shell, or the embedded target's own stop/start. Every
wait is bounded by ``timeout_s``.

A command returning is not proof that the server restarted: ``kubectl rollout restart`` returns at
once and the old pod keeps answering. A restart counts as done only when, after the command,
``/health`` was seen failing, or the server's identity changed (``/version``, or the process start
time from ``/metrics``' ``process_start_time_seconds``); else the attempt fails as "restart not
observed".
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    observed: str = ""  # the evidence that a restart happened: health dropped, identity changed


def server_identity(client: Any) -> str | None:
    """What changes when the server process is replaced: ``/version`` and the process start time.

    None when neither can be read (then only a health drop can prove a restart).
    """
    parts = []
    version = client.version(timeout_s=2.0)
    if version.ok and isinstance(version.data, dict) and version.data.get("version"):
        parts.append(f"version={version.data['version']}")
    scrape = client.metrics(timeout_s=3.0)
    start = scrape.snapshot.value("process_start_time_seconds") if scrape.ok and scrape.snapshot else None
    if start is not None:
        parts.append(f"process_start={start:.3f}")
    return " ".join(parts) or None


def wait_healthy(health: Callable[[], bool], deadline: float, interval_s: float = 0.5) -> bool:
    """Poll ``health`` until it is true or ``deadline`` (``time.monotonic``) passes."""
    while time.monotonic() < deadline:
        if health():
            return True
        time.sleep(min(interval_s, max(0.0, deadline - time.monotonic())))  # polling interval, not a sync
    return health()


def wait_restarted(
    health: Callable[[], bool],
    identity: Callable[[], str | None],
    before: str | None,
    deadline: float,
    interval_s: float = 0.5,
) -> tuple[bool, str]:
    """Poll until the server is healthy AND a restart was seen (health dropped, or the identity
    differs from ``before``), or ``deadline`` passes; returns (ok, what was observed or why not)."""
    dropped = False
    healthy = False
    while True:
        healthy = health()
        if not healthy:
            dropped = True
        elif dropped:
            return True, "health dropped, then came back"
        elif before is not None:
            now = identity()
            if now is not None and now != before:
                return True, f"server identity changed ({before} → {now})"
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(interval_s, left))  # polling interval, not a sync
    if not healthy:
        return False, "not healthy again"
    how = "process start time and /version unchanged" if before else "no /version or process start time to compare"
    return False, f"restart not observed: /health never failed and {how}"


def restart_with_command(
    command: str,
    health: Callable[[], bool],
    index: int,
    timeout_s: float,
    identity: Callable[[], str | None] | None = None,
) -> RestartAttempt:
    """Run ``command`` (split like a shell would, but no shell), then wait until the restart is
    observed and the server healthy (see the module's docstring)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return RestartAttempt(index, False, message=f"restart command does not parse: {exc}")
    if not argv:
        return RestartAttempt(index, False, message="restart command is empty")
    ident = identity or (lambda: None)
    before = ident()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
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
    ok, seen = wait_restarted(health, ident, before, deadline)
    return RestartAttempt(
        index,
        ok,
        seconds_to_healthy=round(time.monotonic() - t0, 2) if ok else None,
        command_s=command_s,
        returncode=0,
        message="" if ok else f"{seen} within {timeout_s:g} s of the restart command",
        observed=seen if ok else "",
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
    return RestartAttempt(
        index, True, seconds_to_healthy=took, command_s=took, returncode=0, observed="stopped, then started again"
    )


__all__ = [
    "RestartAttempt",
    "restart_embedded",
    "restart_with_command",
    "server_identity",
    "wait_healthy",
    "wait_restarted",
]
