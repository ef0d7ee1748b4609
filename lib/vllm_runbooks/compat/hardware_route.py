"""Hardware and fit before blame: a faulty GPU or a failed start-up fit decides the recommendation.

Why its own module: the compatibility verdict stays about CUDA vs driver vs architecture; this
gate only changes what to *do* first. A GPU that fell off the bus, a pending row remap or a GPU
whose memory another process holds makes a driver or image change pointless until it is fixed,
so the remediation becomes drain / reset / RMA / free the GPU / grow the disk, with the deciding
facts (from runbook 01's ``hardware`` and ``fit`` items) as its reasons, and the compatibility
path is kept as the follow-up.
"""

from __future__ import annotations

from typing import Any

from .inputs import CompatInputs

#: Remediation paths of the hardware line (beside ``remediate.PATHS``, which are the CUDA line's).
HARDWARE_PATHS = ("drain_and_rma", "drain_and_reboot", "drain_and_reset_gpu", "free_gpu_memory", "grow_disk")

TITLES = {
    "drain_and_rma": "Hardware line: drain the node and replace the GPU (RMA)",
    "drain_and_reboot": "Hardware line: drain the node and reboot it",
    "drain_and_reset_gpu": "Hardware line: drain and reset the GPU",
    "free_gpu_memory": "Fit: free the GPU memory other processes hold",
    "grow_disk": "Fit: grow the disk that holds the weights",
}


def _faulty(inputs: CompatInputs) -> list[dict[str, Any]]:
    return [f for f in (inputs.hardware or {}).get("findings") or [] if f.get("severity") == "faulty"]


def hardware_path(inputs: CompatInputs) -> str | None:
    """The hardware-line path the evidence calls for, or None when the hardware and fit do not block."""
    faulty = _faulty(inputs)
    if faulty:
        checks = {f.get("check") for f in faulty}
        texts = " ".join(str(f.get("action") or "") for f in faulty).lower()
        if "memory.row_remap_failure" in checks:  # NVIDIA's RMA policy: a failed remap is a replacement
            return "drain_and_rma"
        if "reboot" in texts or "nvml.lost" in checks or "gpu_count" in checks:
            return "drain_and_reboot"
        return "drain_and_reset_gpu"
    fit = inputs.fit or {}
    if fit.get("status") == "fail":
        if any(m.get("status") == "fail" for m in fit.get("memory") or []):
            return "free_gpu_memory"
        if (fit.get("disk") or {}).get("status") == "fail":
            return "grow_disk"
    return None


def hardware_lines(inputs: CompatInputs) -> list[str]:
    """The decision's first route lines when hardware or fit blocks the start (empty otherwise)."""
    path = hardware_path(inputs)
    if path is None:
        return []
    faulty = _faulty(inputs)
    if faulty:
        xids = (inputs.hardware or {}).get("xids") or []
        head = f"Hardware line first: runbook 01's hardware verdict is {inputs.hardware.get('verdict')}"
        head += f" (Xid {', '.join(str(x) for x in xids)} in the kernel log)" if xids else ""
        return [head + "; no driver or image change helps until the GPU is fixed."] + [
            f"Hardware: {f.get('text')}" for f in faulty[:6]
        ]
    return ["Fit line first: the launch does not fit this node before start."] + [
        f"Fit: {x}" for x in (inputs.fit or {}).get("failed") or []
    ][:7]


def hardware_steps(path: str, inputs: CompatInputs) -> list[str]:
    """First steps for a hardware-line path: the findings' own actions first, then the re-check."""
    actions: list[str] = []
    for f in _faulty(inputs):
        a = f.get("action")
        if a and a not in actions:
            actions.append(str(a))
    if path == "free_gpu_memory":
        others = [o for m in (inputs.fit or {}).get("memory") or [] for o in m.get("others") or []]
        actions.append(
            "Stop the processes that hold GPU memory"
            + (f" ({', '.join(others[:6])})" if others else "")
            + " (nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv), or lower "
            "--gpu-memory-utilization only if the GPU is shared on purpose."
        )
    if path == "grow_disk":
        actions.append(
            "Give the weights a filesystem with room for them (--download-dir or HF_HOME on a larger volume), "
            "or pre-stage the weights there."
        )
    actions.append("Re-run runbook 01 (hardware must not be faulty, fit must not fail), then runbook 02.")
    return actions
