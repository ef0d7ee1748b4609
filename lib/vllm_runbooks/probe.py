#!/usr/bin/env python3
"""Evidence probe: freeze the raw facts of a GPU node into a bundle directory.

Standard library only, because it must run on a broken node where nothing can be installed:

    vllm-runbooks probe --write-script probe_node.py     # on a machine with vllm-runbooks
    scp probe_node.py node:/tmp/ && ssh node python3 /tmp/probe_node.py --out /tmp/bundle

The written script inlines ``redact.py`` (and ``compression.py``, the compressed-log opener), so
redaction runs before any byte is written. A plain copy of this file also works when both sit
next to it; without them it refuses to run rather than write unredacted secrets.

The same capture table serves ``source=local`` in runbook 01 (``capture()``), so a bundle and a
local run are read by the same parsers. File names are documented in docs/BUNDLE.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

PROBE_VERSION = 1


# --- shared modules (inlined by --write-script; see _load_sibling) --------------------------
# BEGIN-SHARED-LOADER
def _load_sibling(name: str) -> Any:
    """Import one shared stdlib-only module (redact, compression): package first, then a sibling file."""
    import importlib

    try:
        return importlib.import_module(f"vllm_runbooks.{name}")
    except ImportError:
        pass
    here = Path(__file__).resolve().parent / f"{name}.py"
    if here.is_file():
        import importlib.util

        spec = importlib.util.spec_from_file_location(f"_vllm_runbooks_{name}", here)
        if spec and spec.loader:
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    return None


_redact = _load_sibling("redact")
_compression = _load_sibling("compression")
# END-SHARED-LOADER
#: The package modules the probe needs, each inlined by --write-script (stdlib-only, all of them).
SHARED_MODULES = ("redact", "compression")


DEFAULT_TIMEOUT_S = 20.0
COLLECT_ENV_TIMEOUT_S = 120.0  # only with --collect-env: it imports torch and vLLM
CAPTURE_THREADS = 8
MAX_CAPTURE_BYTES = 16 * 1024 * 1024  # one command's stdout kept in memory
LOG_CAP_BYTES = 8 * 1024 * 1024  # stored per log: head + tail halves
FIRST_ERRORS = 20

ERROR_LINE = re.compile(
    r"(?:\bERROR\b|\bCRITICAL\b|\bFATAL\b|Traceback \(most recent call last\)|\w+Error:|"
    r"\w+Exception:|CUDA error|NCCL error|\bfailed\b|out of memory|Segmentation fault|core dumped|"
    r"driver on your system is too old|CUDA initialization: |insufficient for CUDA)",
    re.I,
)

INTERESTING_ENV = re.compile(
    r"^(NCCL_|GLOO_|UCX_|VLLM_|CUDA_|NVIDIA_|NV_|HF_|HUGGING_FACE|TORCH|PYTORCH_|OMP_|"
    r"LD_LIBRARY_PATH$|TRANSFORMERS_|TP_SOCKET|MASTER_|RANK$|WORLD_SIZE$|LOCAL_RANK$)"
)

CUDA_PROBE_SCRIPT = (
    "import ctypes,sys\n"
    "try:\n"
    "    lib=ctypes.CDLL('libcuda.so.1')\n"
    "    r=lib.cuInit(0); v=ctypes.c_int(0); lib.cuDriverGetVersion(ctypes.byref(v))\n"
    "    print('cuInit', r, 'cuDriverGetVersion', v.value)\n"
    "except OSError as e:\n"
    "    print('libcuda load failed:', e)\n"
    "try:\n"
    "    import torch\n"
    "    print('torch', torch.__version__, 'cuda', torch.version.cuda)\n"
    "    print('is_available', torch.cuda.is_available()); torch.zeros(1).cuda(); print('CUDA_OK')\n"
    "except Exception as e:\n"
    "    print(type(e).__name__+':', e); sys.exit(3)\n"
)

# Facts about the Python that runs vLLM, read WITHOUT importing vLLM or torch: package versions
# from their version files and dist-info, torch's CUDA from the text of torch/version.py. Takes a
# few tens of milliseconds where ``python -m vllm.collect_env`` takes 7-18 s (it imports torch and
# vLLM and shells out). Runs in the target interpreter (``--python``); Python >= 3.8, stdlib only.
PYTHON_ENV_SCRIPT = r"""
import json, os, re, sys
from importlib import util
try:
    from importlib import metadata
except ImportError:
    metadata = None

def text(path, limit=65536):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""

def assigned(src, name):
    m = re.search(r"^[ \t]*%s[ \t]*(?::[^=\n]*)?=[ \t]*(?:\w+[ \t]*=[ \t]*)?(['\"])([!-~]{1,100}?)\1" % name, src, re.M)
    return m.group(2) if m else None

def dist_of(top, where):
    if metadata is not None:
        try:
            return top, metadata.version(top)
        except Exception:
            pass
    parent = os.path.dirname(where)
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return None, None
    for entry in entries:
        m = re.match(r"^(%s[-_.][A-Za-z0-9_.]+|%s)-([!-~]+)\.dist-info$" % (top, top), entry, re.I)
        if m and top in text(os.path.join(parent, entry, "top_level.txt"), 4096).split():
            return m.group(1), m.group(2)
    return None, None

def package(top, version_file, fields):
    try:
        spec = util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    where = list(spec.submodule_search_locations)[0]
    src = text(os.path.join(where, version_file))
    out = {"location": where, "version": assigned(src, "__version__") or assigned(src, "version")}
    out["distribution"], out["distribution_version"] = dist_of(top, where)
    out["version"] = out["version"] or out["distribution_version"]
    for key, names in fields.items():
        out[key] = next((v for v in (assigned(src, n) for n in names) if v), None)
    return out

print(json.dumps({
    "python": {"version": sys.version.split()[0], "executable": sys.executable,
               "implementation": sys.implementation.name},
    "vllm": package("vllm", "_version.py", {"commit": ["__commit_id__", "commit_id"]}),
    "torch": package("torch", "version.py", {"cuda": ["cuda"], "git_version": ["git_version"]}),
}, indent=2))
"""


@dataclass
class Captured:
    """One raw artefact (already redacted) or the reason it could not be captured."""

    name: str
    status: str  # "ok" | "partial" | "unavailable"
    data: bytes | None = None
    reason: str | None = None
    argv: list[str] = field(default_factory=list)
    rc: int | None = None
    duration_s: float = 0.0

    def meta(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("data")
        d["bytes"] = len(self.data) if self.data is not None else None
        return d


@dataclass
class Options:
    """What to capture; mirrors the runbook parameters that reach the node."""

    image: str | None = None
    container: str | None = None
    log_paths: list[str] = field(default_factory=list)
    launch_command: str | None = None
    pid: int | None = None
    endpoint: str | None = None
    probe_image: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    python: str = sys.executable or "python3"
    collect_env: bool = False  # python -m vllm.collect_env: 7-18 s; python-env.json has the versions
    kernel_log_hours: float = 72.0  # lookback of the Xid / SXid scan (journalctl --since)


# --- bounded primitives ---------------------------------------------------------------------
def run(argv: list[str], timeout_s: float, stdout_path: Path | None = None) -> Captured:
    """Run a command with a hard timeout (whole process group killed) and an output cap."""
    name = argv[0]
    t0 = time.monotonic()
    if shutil.which(name) is None:
        return Captured(name, "unavailable", reason=f"{name} not found on PATH", argv=argv)
    out_f = open(stdout_path, "wb") if stdout_path else None  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out_f or subprocess.PIPE,
            stderr=subprocess.STDOUT if out_f else subprocess.PIPE,
            start_new_session=True,
        )
    except PermissionError as e:
        return Captured(name, "unavailable", reason=f"permission denied running {name}: {e}", argv=argv)
    except OSError as e:
        return Captured(name, "unavailable", reason=f"could not run {name}: {e}", argv=argv)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        return Captured(
            name,
            "unavailable",
            reason=f"{shlex.join(argv)} timed out after {timeout_s:g}s",
            argv=argv,
            duration_s=time.monotonic() - t0,
        )
    finally:
        if out_f:
            out_f.close()
    dt = time.monotonic() - t0
    out = out or b""
    err_text = (err or b"").decode("utf-8", "replace").strip()
    if len(out) > MAX_CAPTURE_BYTES:
        out = out[:MAX_CAPTURE_BYTES] + b"\n[vllm-runbooks: output truncated]\n"
    if proc.returncode != 0:
        reason = f"{shlex.join(argv)} exited {proc.returncode}"
        if err_text or out.strip():
            reason += ": " + (err_text or out.decode("utf-8", "replace")).strip().splitlines()[-1][:300]
        status = "partial" if out.strip() else "unavailable"
        return Captured(
            name,
            status,
            data=out or None,
            reason=_redact_str(reason),
            argv=argv,
            rc=proc.returncode,
            duration_s=dt,
        )
    return Captured(
        name,
        "ok",
        data=out,
        argv=argv,
        rc=0,
        duration_s=dt,
        reason=_redact_str(err_text[:300]) if err_text else None,
    )


def read_path(path: str | Path, max_bytes: int = MAX_CAPTURE_BYTES) -> Captured:
    """Read a small system file; missing file and permission problems become reasons."""
    p = Path(path)
    t0 = time.monotonic()
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        return Captured(str(p), "unavailable", reason=f"{p} does not exist")
    except PermissionError:
        return Captured(str(p), "unavailable", reason=f"permission denied reading {p}")
    except OSError as e:
        return Captured(str(p), "unavailable", reason=f"could not read {p}: {e}")
    if len(data) > max_bytes:
        data = data[:max_bytes]
    return Captured(str(p), "ok", data=data, duration_s=time.monotonic() - t0)


def _redact_str(text: str) -> str:
    return _redact.redact_text(text) if _redact else text


def redact_bytes(name: str, data: bytes) -> bytes:
    """Redact one artefact by its kind: JSON structurally, everything else as text."""
    text = data.decode("utf-8", "replace")
    if name.endswith(".json"):
        try:
            return (json.dumps(_redact.redact_obj(json.loads(text)), indent=4, ensure_ascii=False) + "\n").encode()
        except (ValueError, RecursionError):  # not JSON, or nested too deeply: redacted as text
            return _redact.redact_text(text).encode()
    if name in {"env.txt", "environ"} or name.endswith(".env"):
        return _redact.redact_env_text(text).encode()  # a value may span lines (a private key)
    return _redact.redact_text(text).encode()


# --- the capture table ----------------------------------------------------------------------
NVIDIA_QUERY = (
    "index,name,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,uuid,persistence_mode,mig.mode.current"
)

FILES: dict[str, str] = {
    "os-release": "/etc/os-release",
    "proc-meminfo.txt": "/proc/meminfo",
    "proc-uptime.txt": "/proc/uptime",
    "proc-driver-nvidia-version.txt": "/proc/driver/nvidia/version",
    "nvidia-container-toolkit-config.toml": "/etc/nvidia-container-runtime/config.toml",
}

COMMANDS: dict[str, list[str]] = {
    "uname.txt": ["uname", "-a"],
    "nproc.txt": ["nproc"],
    "nvidia-smi-q.xml": ["nvidia-smi", "-q", "-x"],
    "nvidia-smi.txt": ["nvidia-smi"],
    "nvidia-smi-query.csv": ["nvidia-smi", f"--query-gpu={NVIDIA_QUERY}", "--format=csv"],
    "nvidia-smi-topo.txt": ["nvidia-smi", "topo", "-m"],
    "nvidia-smi-nvlink.txt": ["nvidia-smi", "nvlink", "-s"],
    "docker-version.json": ["docker", "version", "--format", "{{json .}}"],
    "docker-info.json": ["docker", "info", "--format", "{{json .}}"],
    "nvidia-ctk-version.txt": ["nvidia-ctk", "--version"],
    "nvidia-container-cli-version.txt": ["nvidia-container-cli", "--version"],
    "shm.txt": ["df", "-k", "/dev/shm"],
    # Fabric: the service's state, its version (must equal the driver's) and IMEX where installed
    "fabric-manager.txt": [
        "systemctl",
        "show",
        "nvidia-fabricmanager",
        "--no-pager",
        "--property=LoadState,ActiveState,SubState,UnitFileState,ExecMainStatus",
    ],
    "fabric-manager-version.txt": ["nv-fabricmanager", "--version"],
    "imex-status.txt": ["nvidia-imex-ctl", "-N"],
}

# Everything a bundle may hold (besides logs/); docs/BUNDLE.md explains each.
BUNDLE_FILES: tuple[str, ...] = (
    *FILES,
    *COMMANDS,
    "image-inspect.json",
    "container-inspect.json",
    "container-logs.txt",
    "python-env.json",
    "collect_env.txt",
    "env.txt",
    "launch-command.txt",
    "vllm-version.json",
    "rdma-devices.txt",
    "cuda-probe.txt",
    "kernel-log.txt",
    "nvswitch-devices.txt",
    "disk-free.txt",
)


def capture(name: str, opts: Options) -> Captured:
    """Capture one bundle file on this machine, redacted. Never raises."""
    try:
        got = _capture_raw(name, opts)
    except Exception as e:  # a probe must never die on one artefact
        got = Captured(name, "unavailable", reason=f"probe error: {type(e).__name__}: {e}")
    got.name = name
    if got.data is not None:
        got.data = redact_bytes(name, got.data)
    if got.reason:
        got.reason = _redact_str(got.reason)
    got.argv = _redact.redact_argv(got.argv) if got.argv else []
    return got


def _capture_raw(name: str, opts: Options) -> Captured:
    t = opts.timeout_s
    if name in FILES:
        return read_path(FILES[name])
    if name == "docker-info.json":
        got = run(COMMANDS[name], t)
        if got.data:  # without a daemon docker still prints JSON, with ServerErrors
            try:
                errs = json.loads(got.data).get("ServerErrors")
            except (ValueError, AttributeError):
                errs = None
            if errs:
                got.status, got.reason = "unavailable", "docker daemon not reachable: " + "; ".join(errs)
        return got
    if name in COMMANDS:
        return run(COMMANDS[name], t)
    if name == "image-inspect.json":
        if not opts.image:
            return Captured(name, "unavailable", reason="no image given")
        return run(["docker", "image", "inspect", opts.image], t)
    if name == "container-inspect.json":
        if not opts.container:
            return Captured(name, "unavailable", reason="no container given")
        return run(["docker", "inspect", "--type", "container", opts.container], t)
    if name == "container-logs.txt":
        if not opts.container:
            return Captured(name, "unavailable", reason="no container given")
        return run(["docker", "logs", "--timestamps", opts.container], max(t, 60.0))
    if name == "python-env.json":
        return run([opts.python, "-c", PYTHON_ENV_SCRIPT], t)
    if name == "collect_env.txt":
        if not opts.collect_env:
            why = "skipped: not requested (--collect-env); python-env.json has the versions"
            return Captured(name, "unavailable", reason=why)
        return run([opts.python, "-m", "vllm.collect_env"], max(t, COLLECT_ENV_TIMEOUT_S))
    if name == "env.txt":
        pid = opts.pid or (None if opts.launch_command or opts.container else _detected_pid())
        if pid:
            got = read_path(f"/proc/{pid}/environ")
            got.argv = [f"/proc/{pid}/environ" + ("" if opts.pid else " (auto-detected vLLM process)")]
            if got.data:
                got.data = got.data.replace(b"\0", b"\n")
            return got
        lines = [f"{k}={v}" for k, v in sorted(os.environ.items()) if INTERESTING_ENV.match(k)]
        return Captured(name, "ok", data="\n".join(lines).encode(), argv=["<probe environment>"])
    if name == "launch-command.txt":
        if opts.launch_command:
            return Captured(name, "ok", data=opts.launch_command.encode(), argv=["<parameter>"])
        pid = opts.pid or (None if opts.container else _detected_pid())
        if pid:
            got = read_path(f"/proc/{pid}/cmdline")
            if got.data:
                got.data = shlex.join(
                    a.decode("utf-8", "replace") for a in got.data.rstrip(b"\0").split(b"\0")
                ).encode()
            got.argv = [f"/proc/{pid}/cmdline" + ("" if opts.pid else " (auto-detected vLLM process)")]
            return got
        return Captured(
            name, "unavailable", reason="no launch command, container or pid given, and no running vLLM process found"
        )
    if name == "vllm-version.json":
        return (
            http_get_version(opts.endpoint, t)
            if opts.endpoint
            else Captured(name, "unavailable", reason="no endpoint given")
        )
    if name == "kernel-log.txt":
        return kernel_log(opts.kernel_log_hours, t)
    if name == "nvswitch-devices.txt":
        return nvswitch_devices()
    if name == "disk-free.txt":
        return disk_free(opts)
    if name == "rdma-devices.txt":
        base = Path("/sys/class/infiniband")
        if not base.exists():
            return Captured(name, "ok", data=b"", reason="/sys/class/infiniband absent: no RDMA devices")
        try:
            return Captured(name, "ok", data="\n".join(sorted(p.name for p in base.iterdir())).encode())
        except OSError as e:
            return Captured(name, "unavailable", reason=f"cannot list {base}: {e}")
    if name == "cuda-probe.txt":
        if not opts.probe_image:
            return Captured(name, "unavailable", reason="probe_image not requested")
        if not opts.image:
            return Captured(name, "unavailable", reason="probe_image needs an image")
        return run(
            [
                "docker",
                "run",
                "--rm",
                "--gpus",
                "all",
                "--entrypoint",
                "python3",
                opts.image,
                "-c",
                CUDA_PROBE_SCRIPT,
            ],
            max(t, 120.0),
        )
    return Captured(name, "unavailable", reason=f"unknown bundle file {name}")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is reported as the endpoint's answer, never followed to another host."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


#: Straight to the endpoint: no proxy from the environment (it would see the request), no redirect.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def http_get_version(endpoint: str, timeout_s: float) -> Captured:
    """GET <endpoint>/version with a timeout; vLLM answers {"version": "..."}."""
    url = endpoint.rstrip("/")
    if not url.endswith("/version"):
        url += "/version"
    t0 = time.monotonic()
    if not re.match(r"^https?://", url):
        return Captured("vllm-version.json", "unavailable", reason=f"endpoint is not http(s): {_redact_str(url)}")
    try:
        with _DIRECT.open(url, timeout=timeout_s) as resp:  # http(s) only, checked above
            data = resp.read(65536)
    except urllib.error.HTTPError as e:
        return Captured(
            "vllm-version.json",
            "unavailable",
            reason=f"GET {_redact_str(url)}: HTTP {e.code}",
            duration_s=time.monotonic() - t0,
        )
    except (urllib.error.URLError, OSError, ValueError) as e:
        return Captured(
            "vllm-version.json",
            "unavailable",
            reason=f"GET {_redact_str(url)} failed: {getattr(e, 'reason', e)}",
            duration_s=time.monotonic() - t0,
        )
    return Captured("vllm-version.json", "ok", data=data, argv=["GET", url], duration_s=time.monotonic() - t0)


# --- kernel log: NVRM Xid / NVSwitch SXid lines, bounded in bytes, lines and time ----------------
#: A kernel line worth keeping: Xid / SXid events and the "fallen off the bus" / GPU-at lines around them.
KERNEL_LOG_LINE = re.compile(rb"NVRM: (?:Xid|GPU at|GPU [0-9a-fA-F:.]+: )|SXid|fallen off the bus")
_KERNEL_MARKERS = (b"NVRM", b"SXid", b"fallen off")
_KERNEL_KEY = re.compile(rb"(?:Xid|SXid) \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+)")
KERNEL_LOG_READ_BYTES = 256 * 1024 * 1024  # of journal output scanned, at most
KERNEL_LOG_LINE_BYTES = 4096  # of one kept line
KERNEL_LOG_KEEP_LINES = 4000  # kept whole; past it only the first line of each (device, code)
KERNEL_LOG_MAX_KEYS = 2000
_DENIED = re.compile(
    r"insufficient permissions|not seeing messages from other users|Operation not permitted|Permission denied",
    re.I,
)


def scan_filtered(
    argv: list[str],
    timeout_s: float,
    max_bytes: int = KERNEL_LOG_READ_BYTES,
    keep_lines: int = KERNEL_LOG_KEEP_LINES,
) -> tuple[list[bytes], dict[str, Any]]:
    """Stream a command's output and keep only kernel-log lines that name an Xid / SXid event.

    Why streamed: a journal can be gigabytes; the command is read in 1 MiB chunks, a chunk without
    a marker is only counted, and reading stops at ``max_bytes`` or ``timeout_s`` (the whole process
    group is killed then), so neither a huge nor a hanging journal holds the probe. Past
    ``keep_lines`` only the first line of each new (device, code) is kept, so a flood of one Xid
    cannot push a rarer one out.
    """
    import select
    import tempfile

    stats: dict[str, Any] = {"argv": argv, "lines": 0, "bytes": 0, "kept": 0, "dropped": 0, "stopped": None}
    kept: list[bytes] = []
    keys: set[bytes] = set()
    if shutil.which(argv[0]) is None:
        stats["error"] = f"{argv[0]} not found on PATH"
        return kept, stats
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, start_new_session=True
            )
        except OSError as e:
            stats["error"] = f"could not run {argv[0]}: {e}"
            return kept, stats
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        partial = b""

        def take(line: bytes) -> None:
            if not any(m in line for m in _KERNEL_MARKERS) or not KERNEL_LOG_LINE.search(line):
                return
            line = line[:KERNEL_LOG_LINE_BYTES]
            m = _KERNEL_KEY.search(line)
            key = m.group(1).lower() + b"|" + m.group(2) if m else b""
            if len(kept) < keep_lines or (key and key not in keys and len(keys) < KERNEL_LOG_MAX_KEYS):
                kept.append(line)
                if key:
                    keys.add(key)
            else:
                stats["dropped"] += 1

        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    stats["stopped"] = f"time bound {timeout_s:g} s reached"
                    break
                if stats["bytes"] >= max_bytes:
                    stats["stopped"] = f"byte bound {max_bytes} reached"
                    break
                ready, _, _ = select.select([fd], [], [], min(left, 1.0))
                if not ready:
                    continue
                chunk = os.read(fd, 1024 * 1024)
                if not chunk:
                    break
                stats["bytes"] += len(chunk)
                buf = partial + chunk
                cut = buf.rfind(b"\n")
                if cut < 0:
                    # one line longer than a chunk: keep its head only, never the whole of it
                    partial = buf[: KERNEL_LOG_LINE_BYTES * 4]
                    continue
                whole, partial = buf[:cut], buf[cut + 1 :][: KERNEL_LOG_LINE_BYTES * 4]
                stats["lines"] += whole.count(b"\n") + 1
                if any(m in whole for m in _KERNEL_MARKERS):
                    for line in whole.split(b"\n"):
                        take(line)
            if partial and not stats["stopped"]:
                stats["lines"] += 1
                take(partial)
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
            proc.stdout.close()
            proc.wait()
        err.seek(0)
        err_text = err.read(4096).decode("utf-8", "replace").strip()
    stats["rc"] = proc.returncode
    stats["kept"] = len(kept)
    stats["duration_s"] = round(time.monotonic() - t0, 3)
    if err_text:
        stats["stderr"] = err_text.splitlines()[-1][:300]
    if _DENIED.search(err_text):
        stats["denied"] = True
    return kept, stats


def _kernel_sources(hours: float) -> list[list[str]]:
    """journalctl over the lookback window (every boot in it), then the kernel ring buffer."""
    return [
        [
            "journalctl",
            "_TRANSPORT=kernel",
            f"--since=-{max(1, int(round(hours)))}h",
            "-o",
            "short-iso",
            "--no-pager",
            "-q",
        ],
        ["dmesg", "-T"],
    ]


def kernel_log(hours: float, timeout_s: float) -> Captured:
    """kernel-log.txt: a JSON header line, then the Xid / SXid lines of the lookback window.

    journalctl first (it spans reboots); the ring buffer (``dmesg -T``, this boot only) when the
    journal is missing, refused or empty. A missing tool or a permission refusal is a reason, never
    an exception; a scan cut by its bounds is ``partial`` and says which bound.
    """
    t0 = time.monotonic()
    reasons: list[str] = []
    for argv in _kernel_sources(hours):
        kept, stats = scan_filtered(argv, timeout_s)
        if stats.get("error"):
            reasons.append(stats["error"])
            continue
        if stats.get("denied"):
            reasons.append(f"permission denied: {shlex.join(argv)}: {stats.get('stderr', '')}".strip())
            continue
        if stats["stopped"] and not stats["lines"]:
            reasons.append(f"{shlex.join(argv)}: no output before its {stats['stopped']} (a hung journal?)")
            continue
        if stats["rc"] not in (0, None, -9) and not stats["lines"]:
            reasons.append(f"{shlex.join(argv)} exited {stats['rc']}: {stats.get('stderr', '')}".strip())
            continue
        if not stats["lines"] and argv[0] == "journalctl":
            reasons.append("journalctl returned no kernel lines for the window (no persistent journal?)")
            continue
        header = {
            "source": argv[0],
            "argv": argv,
            "lookback_h": hours if argv[0] == "journalctl" else None,
            "scanned_lines": stats["lines"],
            "scanned_bytes": stats["bytes"],
            "kept": stats["kept"],
            "dropped": stats["dropped"],
            "stopped": stats["stopped"],
            "notes": reasons,
        }
        data = b"# vllm-runbooks kernel-log " + json.dumps(header).encode() + b"\n" + b"".join(k + b"\n" for k in kept)
        why = "; ".join(reasons + ([f"scan stopped: {stats['stopped']}"] if stats["stopped"] else [])) or None
        return Captured(
            "kernel-log.txt",
            "partial" if stats["stopped"] else "ok",
            data=data,
            reason=why,
            argv=argv,
            rc=stats["rc"],
            duration_s=time.monotonic() - t0,
        )
    why = "; ".join(reasons) or "no kernel log source"
    return Captured("kernel-log.txt", "unavailable", reason=why, duration_s=time.monotonic() - t0)


def nvswitch_devices() -> Captured:
    """nvswitch-devices.txt: NVSwitch device nodes (/dev/nvidia-nvswitch*), one per line; empty: none."""
    try:
        names = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia-nvswitch"))[:256]
    except OSError as e:
        return Captured("nvswitch-devices.txt", "unavailable", reason=f"cannot list /dev: {e}")
    return Captured("nvswitch-devices.txt", "ok", data="\n".join(names).encode(), argv=["ls /dev/nvidia-nvswitch*"])


#: Environment variables that name where weights and caches land (Hugging Face and vLLM).
CACHE_ENV = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "VLLM_CACHE_ROOT")


def model_paths(launch_command: str | None, env: dict[str, str]) -> list[tuple[str, str]]:
    """(path, why) for the filesystems that must hold the weights: --download-dir, a local model
    path, the cache variables, the host side of ``-v HOST:CONTAINER`` mounts, and the default cache."""
    out: list[tuple[str, str]] = []
    try:
        argv = shlex.split(launch_command or "")
    except ValueError:
        argv = (launch_command or "").split()
    for i, tok in enumerate(argv):
        head, eq, val = tok.partition("=")
        nxt = val if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if head == "--download-dir" and nxt:
            out.append((nxt, "--download-dir"))
        elif head == "--model" and nxt.startswith("/"):
            out.append((nxt, "--model (local path)"))
        elif head in ("-v", "--volume") and ":" in nxt and nxt.startswith("/"):
            host, _, ctr = nxt.partition(":")
            out.append((host, f"docker -v host side of {ctr.split(':')[0]}"))
        elif re.match(r"^[A-Z_]+=", tok) and tok.split("=", 1)[0] in CACHE_ENV:
            out.append((tok.split("=", 1)[1], tok.split("=", 1)[0]))
    for k in CACHE_ENV:
        if env.get(k):
            out.append((env[k], k))
    out.append((os.path.expanduser("~/.cache/huggingface"), "default Hugging Face cache"))
    seen: set[str] = set()
    uniq = []
    for path, why in out:
        if path not in seen and len(uniq) < 16:
            seen.add(path)
            uniq.append((path, why))
    return uniq


def model_id(launch_command: str | None) -> str | None:
    """The Hugging Face id the launch serves (``--model X`` or the first ``org/name`` argument), or None."""
    try:
        argv = shlex.split(launch_command or "")
    except ValueError:
        return None
    for i, tok in enumerate(argv):
        if tok == "--model" and i + 1 < len(argv):
            return argv[i + 1]
        if tok.startswith("--model="):
            return tok.split("=", 1)[1]
    return next((t for t in argv if re.fullmatch(r"[\w.-]+/[\w.-]+", t)), None)


def disk_free(opts: Options) -> Captured:
    """disk-free.txt: ``df -P -k`` of each model/cache path (its nearest existing parent), headed ``== path\twhy``.

    A ``+ cached: DIR`` line says the model's Hugging Face cache folder already exists there (its
    size is not measured: that would read the whole checkpoint).
    """
    parts: list[str] = []
    mid = model_id(opts.launch_command)
    for path, why in model_paths(opts.launch_command, dict(os.environ)):
        probe_at = Path(path)
        while not probe_at.exists() and probe_at != probe_at.parent:
            probe_at = probe_at.parent
        got = run(["df", "-P", "-k", str(probe_at)], opts.timeout_s)
        body = (got.data or b"").decode("utf-8", "replace").strip() or f"! {got.reason}"
        cached = ""
        if mid and "/" in mid and not mid.startswith("/"):
            folder = "models--" + mid.replace("/", "--")
            for where in (Path(path) / "hub" / folder, Path(path) / folder):
                if where.is_dir():
                    cached = f"\n+ cached: {where}"
                    break
        parts.append(f"== {path}\t{why}\t(df of {probe_at})\n{body}{cached}")
    return Captured("disk-free.txt", "ok", data=("\n".join(parts) + "\n").encode(), argv=["df -P -k <model paths>"])


# --- logs: streamed, redacted, capped -------------------------------------------------------
def open_log_stream(path: str | Path) -> BinaryIO:
    """Open a plain or compressed log (by magic bytes, not by name); the caller closes it."""
    return decompressing(open(path, "rb"))  # noqa: SIM115 - closed by the caller, or below on refusal


def decompressing(f: Any) -> Any:
    """``f``, or a decompressing reader over it: the shared opener (compression.py), closing ``f`` if refused.

    A zstd log where ``zstandard`` is missing raises OSError; a cut zstd stream raises EOFError
    when it ends short, so :func:`store_log` records "log ends early".
    """
    try:
        return _compression.decompressing(f)
    except BaseException:
        f.close()
        raise


#: Longest piece of one line read into memory; the rest of a longer line is skipped (counted).
LINE_READ_BYTES = 64 * 1024 + 1
#: Bytes read from one log (after decompression) before only its tail is kept.
LOG_READ_BYTES = 512 * 1024 * 1024
_READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, ValueError)
try:
    import zlib as _zlib

    _READ_ERRORS += (_zlib.error,)
except ImportError:  # pragma: no cover - zlib is part of every CPython build that has gzip
    pass


def _plain_file(stream: Any) -> bool:
    """A seekable file on disk (not a decompressor or a tar member): its tail can be read directly."""
    raw = getattr(stream, "raw", None)
    return isinstance(raw, io.FileIO) and stream.seekable()


#: Lines redacted together in ``store_log`` (at most this many, or this many characters).
BATCH_LINES = 512
BATCH_CHARS = 256 * 1024


def store_log(
    stream: BinaryIO,
    dest: Path | BinaryIO,
    cap_bytes: int = LOG_CAP_BYTES,
    first_errors: int = FIRST_ERRORS,
    max_seconds: float | None = None,
    max_read_bytes: int = LOG_READ_BYTES,
) -> dict[str, Any]:
    """Copy a log line by line through redaction into ``dest``, keeping head and tail.

    Bounded in every way a hostile log can push: a line is read at most ``LINE_READ_BYTES`` at a
    time (the rest of a longer line is skipped and counted); reading stops after ``max_seconds``
    or ``max_read_bytes`` — a plain file then jumps to its last ``cap_bytes // 2`` bytes, so head
    and tail are both kept; a stream that breaks (a truncated .gz or tarball) keeps what was read.
    When the redacted text exceeds ``cap_bytes`` the middle is dropped and a marker line says how
    much. Returns the log summary; ``stopped`` says why reading ended early, if it did.
    """
    from collections import deque

    redactor = _redact.LineRedactor()
    head_cap = cap_bytes // 2
    tail: deque[bytes] = deque()
    tail_bytes = 0
    head_bytes = 0
    lines = nbytes = dropped_lines = dropped_bytes = 0
    non_utf8 = False
    stopped: str | None = None
    skipped_bytes = 0
    errors: list[dict[str, Any]] = []
    deadline = time.monotonic() + max_seconds if max_seconds else None
    jumped = False
    # Lines read but not yet redacted: redacted together (``LineRedactor.many``), a bounded batch.
    pending: list[tuple[str, int | None]] = []
    pending_chars = 0
    last_to_tail = False

    def flush() -> None:
        nonlocal head_bytes, tail_bytes, dropped_lines, dropped_bytes, pending_chars, last_to_tail
        first = lines - len(pending) + 1
        for n, red in enumerate(redactor.many(pending), first):
            if len(errors) < first_errors and ERROR_LINE.search(red):
                errors.append({"line": n, "text": red[:500]})
            enc = (red + "\n").encode()
            if head_bytes + len(enc) <= head_cap and not tail:
                out.write(enc)
                head_bytes += len(enc)
                last_to_tail = False
                continue
            tail.append(enc)
            tail_bytes += len(enc)
            while tail_bytes > cap_bytes - head_cap and len(tail) > 1:
                gone = tail.popleft()
                tail_bytes -= len(gone)
                dropped_lines += 1
                dropped_bytes += len(gone)
            last_to_tail = True
        pending.clear()
        pending_chars = 0

    def readline() -> bytes:
        return stream.readline(LINE_READ_BYTES)

    out = dest if not isinstance(dest, str | Path) else None
    if out is None:
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        out = open(dest, "wb")  # noqa: SIM115 - closed below
    try:
        while True:
            if not jumped and (
                (deadline is not None and time.monotonic() > deadline) or nbytes + skipped_bytes >= max_read_bytes
            ):
                why = (
                    f"read stopped after {max_seconds:g} s"
                    if deadline is not None and time.monotonic() > deadline
                    else f"read stopped after {max_read_bytes} bytes"
                )
                if _plain_file(stream):
                    try:
                        size = os.fstat(stream.fileno()).st_size
                        pos = stream.tell()
                        start = max(pos, size - head_cap)
                        if start > pos:
                            skipped_bytes += start - pos
                            stream.seek(start)
                            stream.readline(LINE_READ_BYTES)  # to a line start
                        stopped = f"{why}; the last {size - start} bytes (the tail) were read"
                        jumped = True
                        deadline = time.monotonic() + max(5.0, (max_seconds or 5.0))
                        continue
                    except OSError:
                        pass
                stopped = f"{why}; the rest of the log was not read"
                break
            if jumped and deadline is not None and time.monotonic() > deadline:
                stopped = (stopped or "") + "; tail read stopped at its time bound"
                break
            try:
                raw = readline()
            except _READ_ERRORS as e:
                stopped = f"log ends early: {type(e).__name__}: {e} (truncated or damaged?); what came before is kept"
                break
            if not raw:
                break
            lines += 1
            nbytes += len(raw)
            long_line = 0
            if len(raw) >= LINE_READ_BYTES and not raw.endswith(b"\n"):
                long_line = len(raw)
                try:  # skip the rest of an over-long line, bounded by the same time limit
                    while True:
                        more = stream.readline(1024 * 1024)
                        if not more:
                            break
                        long_line += len(more)
                        nbytes += len(more)
                        if more.endswith(b"\n") or (deadline is not None and time.monotonic() > deadline):
                            break
                        if nbytes >= max_read_bytes:
                            break
                except _READ_ERRORS as e:
                    stopped = f"log ends early inside a long line: {type(e).__name__}: {e}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                non_utf8 = True
                text = raw.decode("utf-8", "replace")
            text = text.rstrip("\r\n")
            pending.append((text, long_line or None))
            pending_chars += len(text)
            if (stopped and not jumped) or pending_chars >= BATCH_CHARS or len(pending) >= BATCH_LINES:
                flush()
                if stopped and not jumped and last_to_tail:
                    break
        flush()
        if dropped_lines or skipped_bytes:
            skipped = f" and {skipped_bytes} unread bytes" if skipped_bytes else ""
            out.write(
                f"[vllm-runbooks: {dropped_lines} lines ({dropped_bytes} bytes){skipped} omitted from the "
                f"middle of this log; stored head and tail only, cap {cap_bytes} bytes]\n".encode()
            )
        for enc in tail:
            out.write(enc)
        if stopped:
            out.write(f"[vllm-runbooks: {stopped}]\n".encode())
    finally:
        if out is not dest:
            out.close()
    return {
        "lines": lines,
        "bytes": nbytes,
        "truncated": bool(dropped_lines or skipped_bytes or stopped),
        "omitted_lines": dropped_lines,
        "unread_bytes": skipped_bytes,
        "stopped": stopped,
        "non_utf8": non_utf8,
        "first_errors": errors,
    }


def safe_log_name(name: str) -> str:
    """A flat, harmless file name for a stored log (no dirs, no dot-files, no compression suffix).

    Stored logs are decompressed, so a kept ``.gz`` / ``.bz2`` / ``.xz`` / ``.zst`` suffix would
    tell the reader of the bundle something false about the file.
    """
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name).lstrip(".") or "log"
    return re.sub(r"\.(gz|bz2|xz|zst|zstd)$", "", base) or "log"


# --- bundle writer --------------------------------------------------------------------------
def _write_new(path: Path, data: bytes) -> None:
    """Write a bundle file whole under a temporary name, then rename: a killed probe leaves no half file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bundle(out: Path, opts: Options, make_tar: bool = False) -> dict[str, Any]:
    """Capture everything into ``out`` (a new or empty directory) and write probe.json."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty; the probe never overwrites a bundle")
    if make_tar and out.with_name(out.name + ".tar.gz").exists():
        raise FileExistsError(f"{out.name}.tar.gz exists; the probe never overwrites a bundle")
    out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "probe_version": PROBE_VERSION,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "params": _redact.redact_parameters(
            {
                "image": opts.image,
                "container": opts.container,
                "log_paths": opts.log_paths,
                "launch_command": opts.launch_command,
                "pid": opts.pid,
                "endpoint": opts.endpoint,
                "probe_image": opts.probe_image,
                "timeout_s": opts.timeout_s,
                "kernel_log_hours": opts.kernel_log_hours,
            }
        ),
        "captures": {},
        "logs": {},
    }
    # The captures are independent commands and reads, each bounded by its own timeout: run them
    # side by side, so the bundle takes as long as the slowest one, not the sum of all.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=CAPTURE_THREADS) as pool:
        captured = list(pool.map(lambda name: capture(name, opts), BUNDLE_FILES))
    for i, name in enumerate(BUNDLE_FILES):
        got = captured[i]
        meta["captures"][name] = got.meta()
        if got.data is not None:
            _write_new(out / name, got.data)
    for path in opts.log_paths:
        dest = out / "logs" / safe_log_name(path)
        n = 1
        while dest.name in meta["logs"]:  # two logs of one name (a/vllm.log, b/vllm.log) both kept
            n += 1
            dest = out / "logs" / f"{Path(safe_log_name(path)).stem}-{n}{Path(safe_log_name(path)).suffix}"
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            with open_log_stream(path) as stream:
                meta["logs"][dest.name] = {"source": _redact_str(str(path)), **store_log(stream, tmp)}
            os.replace(tmp, dest)
        except (OSError, EOFError) as e:
            meta["logs"][dest.name] = {"source": _redact_str(str(path)), "error": _redact_str(str(e))}
        finally:
            if tmp.exists():
                tmp.unlink()
    _write_new(out / "probe.json", (json.dumps(meta, indent=2) + "\n").encode())
    if make_tar:
        tar_path = out.with_name(out.name + ".tar.gz")
        with tarfile.open(tar_path, "x:gz") as tf:  # "x": an existing bundle tarball is never replaced
            tf.add(out, arcname=out.name)
        meta["tar"] = str(tar_path)
    return meta


def find_vllm_processes(proc: str = "/proc") -> list[int]:
    """PIDs whose command line is a vLLM server (`vllm serve …` or the OpenAI api_server module)."""
    found = []
    for entry in os.listdir(proc) if os.path.isdir(proc) else []:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(os.path.join(proc, entry, "cmdline"), "rb") as handle:
                argv = [a.decode("utf-8", "replace") for a in handle.read(65536).split(b"\0") if a]
        except OSError:
            continue
        serve = any(os.path.basename(a) == "vllm" and b == "serve" for a, b in zip(argv, argv[1:], strict=False))
        if serve or "vllm.entrypoints.openai.api_server" in argv:
            found.append(int(entry))
    return sorted(found)


def _detected_pid() -> int | None:
    """The API server when one vLLM runs here (the lowest pid: engine workers are its children)."""
    pids = find_vllm_processes()
    return pids[0] if pids else None


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(prog="probe.py", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="bundle directory to create (must be new or empty)")
    p.add_argument("--image", help="image reference to docker-inspect")
    p.add_argument("--container", help="container name or id to inspect and take logs from")
    p.add_argument("--log", action="append", default=[], dest="log_paths", help="log file (plain or .gz)")
    p.add_argument("--launch-command", help="the vLLM launch command as typed (redacted before writing)")
    p.add_argument("--pid", type=int, help="running vLLM process: read its cmdline and environ")
    p.add_argument("--endpoint", help="vLLM base URL, e.g. http://127.0.0.1:8000 (GET /version)")
    p.add_argument("--probe-image", action="store_true", help="start the image once with a CUDA init check")
    p.add_argument(
        "--python",
        default=sys.executable or "python3",
        help="the Python that runs vLLM, when it is not this one: its vLLM/torch versions go to python-env.json",
    )
    p.add_argument(
        "--collect-env",
        action="store_true",
        help="also run `PYTHON -m vllm.collect_env` into collect_env.txt (slow: it imports torch and vLLM, "
        f"7-18 s; bounded by max(--timeout, {COLLECT_ENV_TIMEOUT_S:g} s)); off by default",
    )
    p.add_argument(
        "--kernel-log-hours",
        type=float,
        default=72.0,
        help="lookback of the kernel-log Xid / SXid scan (journalctl --since); dmesg covers this boot only",
    )
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per command")
    p.add_argument("--tar", action="store_true", help="also write OUT.tar.gz")
    return p


def options_from_args(args: argparse.Namespace) -> Options:
    return Options(
        image=args.image,
        container=args.container,
        log_paths=list(args.log_paths or []),
        launch_command=args.launch_command,
        pid=args.pid,
        endpoint=args.endpoint,
        probe_image=bool(args.probe_image),
        timeout_s=float(args.timeout),
        python=getattr(args, "python", None) or sys.executable or "python3",
        collect_env=bool(getattr(args, "collect_env", False)),
        kernel_log_hours=float(getattr(args, "kernel_log_hours", 72.0) or 72.0),
    )


def run_cli(args: argparse.Namespace) -> int:
    """Shared by ``python3 probe.py`` and ``vllm-runbooks probe``."""
    if _redact is None or _compression is None:
        print(
            "probe.py: redact.py or compression.py not found. Use the self-contained script from "
            "`vllm-runbooks probe --write-script probe_node.py`, or copy redact.py and compression.py "
            "next to probe.py. Refusing to write an unredacted bundle.",
            file=sys.stderr,
        )
        return 2
    try:
        meta = write_bundle(Path(args.out), options_from_args(args), make_tar=bool(args.tar))
    except FileExistsError as e:
        print(f"probe.py: {e}", file=sys.stderr)
        return 2
    missing = {k: v["reason"] for k, v in meta["captures"].items() if v["status"] == "unavailable"}
    print(f"bundle written to {args.out} ({len(meta['captures']) - len(missing)} captured, {len(missing)} unavailable)")
    for k, why in missing.items():
        print(f"  - {k}: {why}")
    return 0


def write_script(path: str | Path) -> Path:
    """Write a single-file, stdlib-only probe with redact.py and compression.py inlined (no package imports)."""
    src = Path(__file__).read_text(encoding="utf-8")
    here = Path(__file__).resolve().parent
    start = src.index("# BEGIN-SHARED-LOADER")
    end = src.index("# END-SHARED-LOADER") + len("# END-SHARED-LOADER")
    parts = [
        "# BEGIN-SHARED-INLINED (from vllm_runbooks/redact.py and compression.py; do not edit here)",
        "import types as _types",
        "",
        "",
        "def _inlined(name, source):",
        "    mod = _types.ModuleType('_vllm_runbooks_' + name)",
        "    exec(compile(source, name + '.py', 'exec'), mod.__dict__)",
        "    return mod",
        "",
        "",
    ]
    for name in SHARED_MODULES:
        source = (here / f"{name}.py").read_text(encoding="utf-8")
        parts.append(f"_{name} = _inlined({name!r}, {source!r})")
    parts.append("# END-SHARED-INLINED")
    out = Path(path)
    try:  # never over an existing file: "x" fails when the name is taken
        with open(out, "x", encoding="utf-8") as handle:
            handle.write(src[:start] + "\n".join(parts) + src[end:])
    except FileExistsError:
        raise FileExistsError(f"{out} exists; the probe script is never written over a file") from None
    out.chmod(0o755)
    return out


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
