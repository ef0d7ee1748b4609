"""GPU facts for the canary where there is no evidence: nvidia-smi and torch, each bounded.

Why subprocesses with timeouts: on the broken node this canary exists for, importing torch or
initialising CUDA can hang or abort the process; the runbook kernel must survive that and
record the exact error text.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from typing import Any

TORCH_PROBE = r"""
import json, sys
out = {"torch": None, "cuda": None, "available": False, "count": 0, "devices": [], "error": None}
try:
    import torch
except Exception as exc:
    out["error"] = f"torch not importable: {type(exc).__name__}: {exc}"
    print(json.dumps(out)); sys.exit(0)
out["torch"] = torch.__version__
out["cuda"] = torch.version.cuda
try:
    torch.cuda.init()
    out["available"] = torch.cuda.is_available()
    out["count"] = torch.cuda.device_count()
    for i in range(out["count"]):
        p = torch.cuda.get_device_properties(i)
        out["devices"].append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}",
                               "memory_mib": int(p.total_memory // 2**20)})
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def run_json(argv: list[str], timeout_s: float) -> dict[str, Any]:
    """Run a probe that prints one JSON object; a hang, crash or non-JSON output becomes ``error``.

    The probe gets its own process group, killed whole on timeout, so hung ranks it spawned
    (a stuck NCCL all-reduce) do not outlive the canary.
    """
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return {"error": f"cannot run {argv[0]}: {exc}"}
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"probe did not finish within {timeout_s:g} s (killed)", "timed_out": True}
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (stderr or stdout).strip().splitlines()[-3:]
        return {"error": f"probe exited {proc.returncode} without a result: {' | '.join(tail)}"}
    try:
        return json.loads(lines[-1])
    except ValueError as exc:
        return {"error": f"probe output is not JSON: {exc}"}


def torch_probe(timeout_s: float = 90.0, python: str | None = None) -> dict[str, Any]:
    """torch's view of CUDA in a fresh interpreter: version, CUDA build, device count, init error."""
    return run_json([python or sys.executable, "-c", TORCH_PROBE], timeout_s)


def nvidia_smi_gpus(timeout_s: float = 20.0) -> dict[str, Any]:
    """``{"gpus": [...], "driver": ...}`` from nvidia-smi, or ``{"missing": True}`` / ``{"error": ...}``."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"missing": True, "error": "nvidia-smi not found on PATH"}
    query = "index,name,compute_cap,driver_version,memory.total"
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return {"error": f"nvidia-smi did not answer within {timeout_s:g} s"}
    except OSError as exc:
        return {"error": f"cannot run nvidia-smi: {exc}"}
    if proc.returncode != 0:
        return {"error": (proc.stdout + proc.stderr).strip()[:500] or f"nvidia-smi exited {proc.returncode}"}
    gpus = []
    for line in proc.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 5:
            gpus.append(
                {
                    "index": int(parts[0]) if parts[0].isdigit() else parts[0],
                    "name": parts[1],
                    "compute_capability": parts[2],
                    "driver_version": parts[3],
                    "memory_total_mib": parts[4],
                }
            )
    return {"gpus": gpus, "driver": gpus[0]["driver_version"] if gpus else None}


def describe_gpus(gpus: list[dict[str, Any]]) -> str:
    """ "8 × NVIDIA H200 (cc 9.0)": GPUs grouped by model, the way an engineer says it."""
    names: dict[str, int] = {}
    for g in gpus:
        label = f"{g.get('name') or '?'} (cc {g.get('compute_capability') or '?'})"
        names[label] = names.get(label, 0) + 1
    return ", ".join(f"{n} × {label}" for label, n in names.items())
