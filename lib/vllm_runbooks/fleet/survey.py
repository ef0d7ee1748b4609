"""One node's bundle → evidence → runbook 02's decision for the target image → a fleet row.

The facts are read by the evidence package (``collect_evidence`` with the bundle as source) into
``<run_dir>/fleet/<node>/evidence/``, and the verdict is runbook 02's decision (``compat.stage``), with
the node's host facts and the *target* image's facts: the image a node runs today says nothing
about the one being rolled out, so its CUDA, ``NVIDIA_REQUIRE_CUDA``, compat libraries and launch
are replaced by the target's, and its logs (about today's image) are not cross-checked.

Many nodes share a configuration, so decisions are cached by their inputs: a fleet of a thousand
nodes with a dozen configurations makes a dozen decisions. Bundles are read in worker processes
when there are many (``workers``); each worker keeps its own cache.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import (
    ACTION_NO_GPU,
    ACTION_NOT_ELIGIBLE,
    ACTION_READY,
    ACTION_UNKNOWN,
    ACTION_UPGRADE,
    WHY_BAD_BUNDLE,
    NodeRow,
    TargetImage,
    unanswered,
)

#: Collectors the fleet table needs: host name, GPUs and driver, toolkit, what runs and its vLLM; then
#: runbook 01's hardware verdict and start-up fit and what they read (``hardware``: GPU health, the
#: kernel log's Xid / SXid, fabric, the launch's TP × PP × DP; ``fit``: GPU health, the launch's flags
#: and env, image and container env, disk). The registry runs them in its own order, so each finds
#: the items it reads.
FLEET_COLLECTORS = (
    "host",
    "nvidia",
    "container_runtime",
    "image",
    "container",
    "logs",
    "vllm",
    "gpu_health",
    "kernel_log",
    "fabric",
    "disk",
    "launch",
    "hardware",
    "fit",
)
#: Bounds on what a row keeps of the hardware and fit items (the node's evidence holds them all).
MAX_ROW_FINDINGS = 5
MAX_ROW_TEXT = 300
MAX_ROW_VBIOS = 8
MAX_SUMMARY = 240
#: GPU memory in use (MiB) above which a node counts as busy even without a running container.
BUSY_GPU_MIB = 1024
#: Below this many nodes the bundles are read in this process (a pool costs more than it saves).
POOL_THRESHOLD = 16

_CACHE: dict[str, dict[str, Any]] = {}
_CACHE_MAX = 4096


@dataclass(frozen=True)
class Job:
    """One node to survey: picklable, so it can cross to a worker process."""

    node: str
    bundle: str
    node_dir: str
    target: TargetImage
    source: str = "bundle"
    today: str | None = None


def action_for(verdict: str, gpu_count: int, driver_version: str | None) -> str:
    """The fleet's action for a node from runbook 02's verdict and whether a GPU was found at all."""
    from ..compat import OK_VERDICTS

    if verdict in OK_VERDICTS:
        return ACTION_READY
    if verdict == "driver_too_old":
        return ACTION_UPGRADE
    if verdict == "arch_unsupported":
        return ACTION_NOT_ELIGIBLE
    if gpu_count == 0 and not driver_version:
        return ACTION_NO_GPU
    return ACTION_UNKNOWN


def _decide(node_dir: Path, target: TargetImage, today: _dt.date | None) -> dict[str, Any]:
    """Runbook 02's decision for the target image on this node's host facts (cached by its inputs)."""
    from ..compat import stage as compat_stage
    from ..compat.hardware_route import hardware_path

    gathered = compat_stage.gather(
        compat_stage.Config(
            evidence_dir=str(node_dir),
            image_cuda=target.image_cuda,
            nvidia_require_cuda=target.nvidia_require_cuda,
            compat_libs=bool(target.compat_libs),
            profile=target.profile,
        )
    )
    if gathered.evidence_path is None:  # the node's own evidence could not be read back
        raise ValueError(gathered.evidence_note)
    inputs = gathered.inputs
    # The target image, not the node's current one: drop what the current image and launch carried.
    inputs.compat_libs = bool(target.compat_libs)
    inputs.image_compat_package = None
    inputs.nvidia_disable_require = None
    inputs.image_ref = target.image_ref
    inputs.launch_argv, inputs.launch_env = [], {}
    if not target.nvidia_require_cuda:
        inputs.nvidia_require_cuda = None
    for name in ("compat_libs", "image_compat_package", "nvidia_disable_require", "image_ref", "launch_argv"):
        inputs.sources[name] = "fleet target image"
    gathered.log_paths = []  # today's logs are about today's image
    # The hardware and fit facts differ on every node (free MiB, PCI ids in finding texts) but change
    # only the remediation path, and only through ``hardware_path``: the key holds that path, so
    # nodes of one configuration still share one decision.
    key = json.dumps(
        [
            {k: v for k, v in inputs.to_dict().items() if k not in ("sources", "derived", "hardware", "fit")},
            hardware_path(inputs),
            str(today),
        ],
        sort_keys=True,
        default=str,
    )
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    result = compat_stage.decide_gathered(gathered, today=today)
    d = result.report.decision
    out = {
        "verdict": d.verdict,
        "summary": d.summary,
        "missing": list(d.missing),
        "remediation": result.report.remediation.path,
    }
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = out
    return out


def _facts(ev: Any) -> dict[str, Any]:
    """The table's facts from the node's evidence record (values the collectors established)."""
    gpus = ev.get("nvidia", "gpus") or []
    g0 = gpus[0] if gpus else {}
    container = ev.get("container") or {}
    state = container.get("state")
    running = None if not container else state == "running"
    used = [g.get("memory_used_mib") for g in gpus if isinstance(g.get("memory_used_mib"), int | float)]
    if running or any(u > BUSY_GPU_MIB for u in used):
        idle: bool | None = False
    elif gpus and len(used) == len(gpus) and running is not True:
        idle = True
    else:
        idle = None
    return {
        "hostname": ev.get("host", "hostname"),
        "driver_version": ev.get("nvidia", "driver_version"),
        "driver_branch": ev.get("nvidia", "driver_branch"),
        "driver_cuda": ev.get("nvidia", "cuda_driver_version"),
        "gpu_name": g0.get("name"),
        "gpu_count": len(gpus),
        "compute_capability": g0.get("compute_capability"),
        "toolkit": ev.get("container_runtime", "nvidia_ctk_version")
        or ev.get("container_runtime", "nvidia_container_cli_version"),
        "vllm_image": (container.get("image") if running else None) or None,
        "vllm_version": ev.get("vllm", "version") if running else None,
        "running": running,
        "idle": idle,
    }


def _cut(text: Any, limit: int = MAX_ROW_TEXT) -> str:
    s = str(text if text is not None else "")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _hardware(ev: Any) -> dict[str, Any]:
    """The row's hardware, VBIOS and fit columns from runbook 01's ``hardware``, ``gpu_health`` and ``fit``
    items (bounded: the top findings only; the node's evidence keeps every one).

    A missing or unreadable item is ``unknown`` with the item's reason, never ``healthy``.
    """
    from ..evidence.fit import STATUSES as FIT_STATUSES
    from ..evidence.hardware import VERDICTS as HARDWARE_VERDICTS

    item = ev.items.get("hardware")
    hw = ev.established("hardware")
    verdict = hw.get("verdict") if hw.get("verdict") in HARDWARE_VERDICTS else "unknown"
    findings = [f for f in hw.get("findings") or [] if isinstance(f, dict)]
    top = [f for f in findings if f.get("severity") in ("faulty", "degraded")][:MAX_ROW_FINDINGS]
    kept = [
        {
            "check": _cut(f.get("check"), 60),
            "severity": f.get("severity"),
            "text": _cut(f.get("text")),
            "action": _cut(f.get("action")),
            "source": _cut(f.get("source"), 200),
            "gpu": f.get("gpu") if isinstance(f.get("gpu"), int) else None,
            "code": f.get("code") if isinstance(f.get("code"), int) else None,
        }
        for f in top
    ]
    xids = [x for x in hw.get("xids") or [] if isinstance(x, int) and not isinstance(x, bool)][:16]
    faulty = [g for g in hw.get("faulty_gpus") or [] if isinstance(g, int) and not isinstance(g, bool)][:16]
    parts = []
    if xids:
        parts.append("Xid " + ", ".join(map(str, xids)))
    if faulty:
        parts.append("faulty GPU " + ", ".join(map(str, faulty)))
    if kept:
        parts.append(kept[0]["text"])
    elif verdict == "unknown":
        parts.append((item.reason if item is not None else None) or "hardware was not judged")
    # what the verdict could not see (no kernel log, no health read) is said, not hidden behind 'healthy'
    parts += [str(f.get("text")) for f in findings if f.get("check") in ("kernel_log", "gpu_health")][:1]
    vb = ev.established("gpu_health").get("vbios") or {}
    by_model = vb.get("versions") if isinstance(vb.get("versions"), dict) else {}
    versions = sorted({_cut(v, 64) for vs in by_model.values() if isinstance(vs, list) for v in vs})
    fit_item = ev.items.get("fit")
    fit_value = ev.established("fit")
    fit = None
    if fit_item is not None:
        fit = fit_value.get("status") if fit_value.get("status") in FIT_STATUSES else "unknown"
    return {
        "hardware": verdict,
        "hardware_summary": _cut("; ".join(p for p in parts if p), MAX_SUMMARY),
        "hardware_findings": kept,
        "xids": xids,
        "faulty_gpus": faulty,
        "vbios": versions[:MAX_ROW_VBIOS],
        "vbios_uniform": vb.get("uniform") if isinstance(vb.get("uniform"), bool) else None,
        "fit": fit,
        "fit_failed": [_cut(x) for x in fit_value.get("failed") or []][:8],
    }


def _no_gpu_why(ev: Any) -> str:
    """The probe's own words for the missing GPU facts ('nvidia-smi not found on PATH'), once each."""
    item = ev.items.get("nvidia")
    text = (item.reason if item else None) or "no GPU facts in the bundle"
    said = list(dict.fromkeys(re.findall(r"\(probe: ([^)]*)\)", text)))
    return "; ".join(said) if said else text[:200]


def survey_node(job: Job) -> NodeRow:
    """Read one node's bundle into evidence and decide for the target image. Never raises."""
    from ..evidence.writer import collect_evidence

    node_dir = Path(job.node_dir)
    today = _dt.date.fromisoformat(job.today) if job.today else None
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # collectors' progress lines: one node, one row
            ev = collect_evidence(source=job.bundle, run_dir=node_dir, only=list(FLEET_COLLECTORS))
        if "source" in ev.items and ev.items["source"].status == "unavailable":
            return unanswered(job.node, WHY_BAD_BUNDLE, ev.items["source"].reason or "unreadable", job.source)
        facts = {**_facts(ev), **_hardware(ev)}
        decided = _decide(node_dir, job.target, today)
    except Exception as exc:  # one bad bundle is one unanswered row, never a stopped survey
        from ..redact import redact_text

        return unanswered(job.node, WHY_BAD_BUNDLE, redact_text(f"{type(exc).__name__}: {exc}")[:300], job.source)
    action = action_for(decided["verdict"], facts["gpu_count"], facts["driver_version"])
    reason = decided["summary"]
    if action == ACTION_NO_GPU:
        reason = "no NVIDIA GPU or driver found: " + _no_gpu_why(ev)
    return NodeRow(
        node=job.node,
        source=job.source,
        verdict=decided["verdict"],
        action=action,
        reason=reason,
        remediation=decided["remediation"],
        missing=decided["missing"],
        evidence_dir=str(node_dir / "evidence"),
        bundle=str(job.bundle),
        **facts,
    )


def _quiet_worker() -> None:
    """Worker processes print nothing: the survey reports one line per node itself."""
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the worker


def survey_nodes(
    jobs: Iterable[Job],
    workers: int = 0,
    progress: Callable[[NodeRow], None] | None = None,
) -> list[NodeRow]:
    """Assess every job, in a pool of ``workers`` processes when there are many (0: one per CPU, ≤ 8).

    Rows come back in the jobs' order. The pool uses ``spawn``: a driver that holds Ray's threads
    must not fork.
    """
    jobs = list(jobs)
    n = workers or min(8, os.cpu_count() or 1)
    if len(jobs) < POOL_THRESHOLD or n <= 1:
        rows = []
        for job in jobs:
            rows.append(survey_node(job))
            if progress:
                progress(rows[-1])
        return rows
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_quiet_worker) as pool:
        rows = []
        for row in pool.map(survey_node, jobs, chunksize=max(1, len(jobs) // (n * 8))):
            rows.append(row)
            if progress:
                progress(row)
    return rows
