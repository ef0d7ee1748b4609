"""The start-up fit: will this launch's memory, disk and ready-timeout demands fit this node?

vLLM refuses to start when a GPU's free memory is below ``--gpu-memory-utilization`` × its total
(``data/gpu_health.yaml`` ``fit``, with vLLM's source); the serving process's own memory is not
"another process", so a running server's memory counts as available to it. Disk is compared with
the model profile's sourced weight size; the ready timeout only with a sourced start-up time. A
check without the facts it needs says ``unknown`` and why, never ``pass``.
"""

from __future__ import annotations

import re
from typing import Any

from .gpu_health import health_facts

STATUSES = ("pass", "fail", "unknown")
_SERVING = re.compile(r"vllm|VLLM::", re.I)


def _float(v: Any) -> float | None:
    try:
        return float(str(v))
    except (TypeError, ValueError):
        return None


def visible_indices(env: dict[str, str], count: int) -> list[int]:
    """The GPU indices the launch sees (``CUDA_VISIBLE_DEVICES`` as indices), else all of them."""
    raw = (env or {}).get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return list(range(count))
    picked = [int(x) for x in raw.split(",") if x.strip().isdigit() and int(x) < count]
    return picked if picked or not raw.strip() else list(range(count))


def memory_check(
    gpus: list[dict[str, Any]], util: float, used_indices: list[int], server_running: bool
) -> list[dict[str, Any]]:
    """One row per GPU the launch uses: free (plus the server's own), needed, held by others, status."""
    rows = []
    by_index = {g.get("index"): g for g in gpus}
    for i in used_indices:
        g = by_index.get(i) or {}
        total, free = g.get("memory_total_mib"), g.get("memory_free_mib")
        procs = g.get("processes")
        row: dict[str, Any] = {"gpu": i, "total_mib": total, "free_mib": free, "needed_mib": None}
        if g.get("lost") or not isinstance(total, int) or not isinstance(free, int):
            row.update(status="unknown", why="no free/total memory for this GPU" + (" (lost)" if g.get("lost") else ""))
            rows.append(row)
            continue
        need = int(total * util)
        own = others = 0
        names: list[str] = []
        listed = isinstance(procs, list)
        for p in procs if listed else []:
            used = p.get("used_mib") if isinstance(p.get("used_mib"), int) else 0
            if _SERVING.search(str(p.get("name") or "")):
                own += used
            else:
                others += used
                names.append(f"{p.get('name') or '?'} (pid {p.get('pid')}, {used} MiB)")
        used_total = g.get("memory_used_mib") if isinstance(g.get("memory_used_mib"), int) else 0
        row.update(needed_mib=need, own_mib=own, others_mib=others, others=names[:8])
        if server_running and not own and used_total and not others:
            row.update(
                status="unknown",
                why=f"the server is running and {used_total} MiB are in use, but no process list says whose: "
                "re-check with the server stopped",
            )
        elif free + own >= need:
            row.update(status="pass", why=f"{free + own} MiB available ≥ {need} MiB ({util:g} × {total} MiB)")
        else:
            held = f"; held by other processes: {', '.join(names)}" if names else ""
            row.update(
                status="fail",
                why=f"{free + own} MiB free < {need} MiB needed ({util:g} × {total} MiB): vLLM refuses to start{held}",
            )
        rows.append(row)
    return rows


def disk_check(blocks: list[dict[str, Any]], weights: dict[str, Any] | None) -> dict[str, Any]:
    """Free space where the weights land against the profile's weight size (if the profile cites one)."""
    if not blocks:
        return {"status": "unknown", "why": "no disk-free.txt (probe it on the node)"}
    first = blocks[0]
    base = {"path": first["path"], "mount": first.get("mount"), "avail_bytes": first.get("avail_bytes")}
    if first.get("cached"):
        return {**base, "status": "pass", "why": f"the model is already in the cache at {first['cached']}"}
    if not weights:
        return {**base, "status": "unknown", "why": "the model profile has no sourced weight size"}
    need = int(weights["gb"] * 1e9)
    avail = first.get("avail_bytes")
    if not isinstance(avail, int):
        return {**base, "status": "unknown", "why": first.get("error") or "df gave no free space"}
    ok = avail >= need
    return {
        **base,
        "needed_bytes": need,
        "status": "pass" if ok else "fail",
        "why": f"{avail / 1e9:.0f} GB free on {first.get('mount')} ({first['why']}) "
        f"{'≥' if ok else '<'} {weights['gb']} GB of weights ({weights.get('text')}, {weights.get('source')})",
    }


def ready_timeout_check(env: dict[str, str], startup: dict[str, Any] | None) -> dict[str, Any]:
    """VLLM_ENGINE_READY_TIMEOUT_S against the profile's expected start-up time, when one is sourced."""
    given = _float((env or {}).get("VLLM_ENGINE_READY_TIMEOUT_S"))
    if not startup or not isinstance(startup.get("expected_s"), int | float):
        return {"status": "unknown", "timeout_s": given, "why": "the model profile has no sourced start-up time"}
    exp = float(startup["expected_s"])
    if given is None:
        return {"status": "unknown", "expected_s": exp, "why": "VLLM_ENGINE_READY_TIMEOUT_S not set in the launch env"}
    ok = given >= exp
    return {
        "status": "pass" if ok else "fail",
        "timeout_s": given,
        "expected_s": exp,
        "why": f"VLLM_ENGINE_READY_TIMEOUT_S={given:g} {'≥' if ok else '<'} expected {exp:g} s "
        f"({startup.get('source')})",
    }


def weights_of(profile: dict[str, Any], model: str | None) -> dict[str, Any] | None:
    """The profile's sourced weight size for this model id (None when it cites none)."""
    w = (profile or {}).get("weights") or {}
    entry = (w.get("by_model") or {}).get(model or "")
    return {**entry, "source": w.get("source")} if isinstance(entry, dict) and "gb" in entry else None


def fit_check(
    gpus: list[dict[str, Any]],
    *,
    flags: dict[str, Any],
    env: dict[str, str],
    expected: int | None,
    server_running: bool,
    disk_blocks: list[dict[str, Any]],
    weights: dict[str, Any] | None,
    startup: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Memory per GPU, disk and ready timeout, and one status: fail if any fails, pass only if memory passed."""
    default = float(health_facts()["fit"]["gpu_memory_utilization_default"])
    util = _float(flags.get("gpu-memory-utilization")) or default
    used = visible_indices(env, len(gpus))
    if expected:
        used = used[:expected]
    memory = memory_check(gpus, util, used, server_running)
    disk = disk_check(disk_blocks, weights)
    ready = ready_timeout_check(env, startup)
    statuses = [r["status"] for r in memory] + [disk["status"], ready["status"]]
    if "fail" in statuses:
        status = "fail"
    elif memory and all(r["status"] == "pass" for r in memory):
        status = "pass"
    else:
        status = "unknown"
    return {
        "status": status,
        "gpu_memory_utilization": util,
        "utilization_from": "launch --gpu-memory-utilization"
        if flags.get("gpu-memory-utilization")
        else "vLLM default",
        "rule_source": health_facts()["fit"]["rule_source"],
        "memory": memory,
        "disk": disk,
        "ready_timeout": ready,
        "failed": [f"GPU {r['gpu']}: {r['why']}" for r in memory if r["status"] == "fail"][:16]
        + ([f"disk: {disk['why']}"] if disk["status"] == "fail" else [])
        + ([f"ready timeout: {ready['why']}"] if ready["status"] == "fail" else []),
    }
