"""Restart stability: restart the server N times and time each return to healthy.

Why in the load check: a node that serves well once but takes ten minutes (or never) to come
back after a restart is not ready for a pool that restarts replicas on every rollout. Only when
asked (``restart_count`` > 0), with the operator's own command (``docker restart my-vllm``,
``kubectl delete pod …``) run without a shell, or the embedded target's own stop/start. Every
wait is bounded by ``timeout_s``.

A command returning is not proof that the server restarted: ``kubectl rollout restart`` returns at
once and the old pod keeps answering, and behind a load balancer two replicas answer in turn, so
the process start time (``/metrics``' ``process_start_time_seconds``) flips on every read. A
restart is proven only when, after the command, ``/health`` was seen failing and then answering,
or the server's identity (``/version`` and the process start time) changed to a value not seen
before the command AND stayed that value over ``IDENTITY_READS`` consecutive reads, no sooner than
``MIN_RESTART_S`` after the command (no process loads a model that fast; another replica answers at
once). An identity that already varied over the reads before the command proves nothing. Anything
else is "not proven" — never counted as healthy — and the identities read are kept in the attempt.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import Record
from ..redact import redact_text

#: consecutive reads a new identity must hold (a load balancer alternates between replicas)
IDENTITY_READS = 3
#: a new identity sooner than this after the command is not a restart (a replica answering)
MIN_RESTART_S = 1.0
#: distinct identities kept per attempt, before and after the command
MAX_IDENTITIES = 10


@dataclass
class RestartAttempt(Record):
    """One restart: was it proven, did the server come back, and how long until ``/health`` answered.

    ``ok`` only when proven and healthy again; ``status``: ``healthy``, ``not_proven`` (healthy,
    but nothing showed a restart), ``unhealthy`` or ``failed`` (the command itself).
    """

    SCHEMA = "load_restart_attempt"
    index: int
    ok: bool
    seconds_to_healthy: float | None = None
    command_s: float | None = None
    returncode: int | None = None
    message: str = ""
    observed: str = ""  # the evidence that a restart happened: health dropped, identity changed
    status: str = ""
    identities_before: list[str] = field(default_factory=list)  # distinct, in the order read
    identities_after: list[str] = field(default_factory=list)


@dataclass
class Observation:
    """What the wait after a restart command saw: proven or not, why, the identities read."""

    ok: bool
    text: str
    status: str  # healthy | not_proven | unhealthy
    seen: list[str] = field(default_factory=list)


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


def _distinct(values: Sequence[str | None]) -> list[str]:
    out: list[str] = []
    for v in values:
        if v is not None and v not in out and len(out) < MAX_IDENTITIES:
            out.append(v)
    return out


def wait_restarted(
    health: Callable[[], bool],
    identity: Callable[[], str | None],
    before: str | None | Sequence[str | None],
    deadline: float,
    interval_s: float = 0.5,
    *,
    started: float | None = None,
    reads: int = IDENTITY_READS,
    min_restart_s: float = MIN_RESTART_S,
) -> Observation:
    """Poll until the server is healthy AND a restart is proven (see the module's docstring), or
    ``deadline`` (``time.monotonic``) passes. ``before``: the identities read before the command;
    ``started``: when the command began (``time.monotonic``), for the plausibility bound."""
    baseline = [before] if before is None or isinstance(before, str) else list(before)
    known = set(_distinct(baseline))
    stable = len(known) == 1  # one identity before the command: a change of it can mean something
    t0 = time.monotonic() if started is None else started
    seen: list[str | None] = []
    dropped = healthy = False
    streak_value: str | None = None
    streak, streak_at = 0, 0.0
    while True:
        healthy = health()
        if not healthy:
            dropped, streak = True, 0
        elif dropped:
            return Observation(True, "health dropped, then came back", "healthy", _distinct(seen))
        else:
            now = identity()
            seen.append(now)
            if now is None or now in known:
                streak = 0
            elif now == streak_value and streak:
                streak += 1
            else:
                streak_value, streak, streak_at = now, 1, time.monotonic()
            if stable and streak >= reads:
                before_txt = next(iter(known))
                after_s = streak_at - t0
                if after_s < min_restart_s:
                    return Observation(
                        False,
                        f"restart not proven: the identity changed ({before_txt} → {streak_value}) "
                        f"{after_s:.2f} s after the command, faster than a restart can be "
                        f"(under {min_restart_s:g} s: another replica answering?)",
                        "not_proven",
                        _distinct(seen),
                    )
                return Observation(
                    True,
                    f"server identity changed ({before_txt} → {streak_value}) {after_s:.1f} s after the "
                    f"command and held over {reads} reads",
                    "healthy",
                    _distinct(seen),
                )
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(interval_s, left))  # polling interval, not a sync
    if not healthy:
        return Observation(False, "not healthy again", "unhealthy", _distinct(seen))
    if not known:
        how = "there is no /version or process start time to compare"
    elif not stable:
        how = (
            f"the identity already took {len(known)} values over {len(baseline)} reads before the command "
            "(replicas behind a load balancer?), so a change of it proves nothing"
        )
    elif any(v is not None and v not in known for v in seen):
        how = f"a new identity never held over {reads} consecutive reads"
    else:
        how = "the process start time and /version are unchanged"
    return Observation(
        False, f"restart not observed (not proven): /health never failed and {how}", "not_proven", _distinct(seen)
    )


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
    before = [ident() for _ in range(IDENTITY_READS)]  # more than one value: a balancer, not a server
    ids_before = _distinct(before)
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, errors="replace")
    except subprocess.TimeoutExpired:
        took = round(time.monotonic() - t0, 2)
        return RestartAttempt(
            index, False, command_s=took, message="command timed out", status="failed", identities_before=ids_before
        )
    except OSError as exc:
        return RestartAttempt(
            index, False, message=f"cannot run restart command: {exc}", status="failed", identities_before=ids_before
        )
    command_s = round(time.monotonic() - t0, 2)
    if proc.returncode != 0:
        tail = redact_text((proc.stderr or proc.stdout or "")[-400:])
        return RestartAttempt(
            index,
            False,
            command_s=command_s,
            returncode=proc.returncode,
            message=tail,
            status="failed",
            identities_before=ids_before,
        )
    seen = wait_restarted(health, ident, before, deadline, started=t0)
    return RestartAttempt(
        index,
        seen.ok,
        seconds_to_healthy=round(time.monotonic() - t0, 2) if seen.ok else None,
        command_s=command_s,
        returncode=0,
        message="" if seen.ok else f"{seen.text} within {timeout_s:g} s of the restart command",
        observed=seen.text if seen.ok else "",
        status=seen.status,
        identities_before=ids_before,
        identities_after=seen.seen,
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
        index,
        True,
        seconds_to_healthy=took,
        command_s=took,
        returncode=0,
        observed="stopped, then started again",
        status="healthy",
    )


__all__ = [
    "IDENTITY_READS",
    "MIN_RESTART_S",
    "Observation",
    "RestartAttempt",
    "restart_embedded",
    "restart_with_command",
    "server_identity",
    "wait_healthy",
    "wait_restarted",
]
