"""Canary steps 1, 7 and 10: GPU / container CUDA recognition, multi-GPU communication, and GPU
health unchanged by the canary's traffic.

Why from evidence first: runbook 01 already froze what the driver and the image's own CUDA
probe said on the node under change; the canary re-reads it rather than re-deriving it from
wherever the notebook happens to run. Without evidence it looks locally (nvidia-smi, torch).
A machine without a GPU skips with the reason; it never passes by default.

Step 1 also takes the first GPU health reading (``evidence.health_watch``) before any traffic;
step 10, after every traffic step, takes the second and fails on a new Xid, a new pending remap or
a GPU that went away. Both readings are of the machine the notebook runs on: the canary must run
on the node under change for the watch to mean anything, and says so when it cannot read a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...evidence import health_watch
from ...evidence.hardware import sxid_finding, xid_finding
from ...evidence.model import Evidence
from ..gpu_probe import describe_gpus, nvidia_smi_gpus, torch_probe
from ..nccl import allreduce_check, load_nccl_tests
from ..registry import Outcome, StepContext, failed, passed, register, skipped


def _torch(ctx: StepContext) -> dict[str, Any]:
    if "torch_probe" not in ctx.shared:
        ctx.shared["torch_probe"] = torch_probe(timeout_s=min(ctx.config.step_timeout_s, 120.0))
    return ctx.shared["torch_probe"]


def gpus_for(evidence_dir: str | None) -> tuple[list[dict[str, Any]], str, Evidence | None]:
    """(gpus, where they came from / why none, evidence or None): runbook 01's evidence when given,
    else nvidia-smi on this machine. Needs no step context, so runbook 05 asks the same question."""
    if evidence_dir:
        from ...execution.runs import load_result

        try:
            ev = load_result(evidence_dir, "evidence_capture")
        except (OSError, ValueError) as exc:  # absent, or refused as changed since capture
            return [], f"evidence unreadable: {exc}", None
        nv = ev.item("nvidia")
        gpus = list(nv.value.get("gpus") or [])
        why = f"runbook 01 evidence ({ev.evidence_dir}/evidence.json)"
        if not gpus:
            why = f"runbook 01 evidence: nvidia {nv.status}: {nv.reason or 'no GPUs listed'}"
        return gpus, why, ev
    smi = nvidia_smi_gpus()
    if smi.get("gpus"):
        return smi["gpus"], "nvidia-smi on this machine", None
    return [], f"{smi.get('error') or 'nvidia-smi lists no GPU'}; no evidence_dir given", None


def _gpus(ctx: StepContext) -> tuple[list[dict[str, Any]], str, Evidence | None]:
    """``gpus_for`` the canary's evidence_dir, cached per run."""
    if "gpus" not in ctx.shared:
        ctx.shared["gpus"] = gpus_for(ctx.config.evidence_dir)
    return ctx.shared["gpus"]


@register("gpu_cuda", "GPU and container CUDA recognition", 1, needs_endpoint=False)
def gpu_cuda(ctx: StepContext) -> Outcome:
    """GPUs from runbook 01 evidence (or nvidia-smi here) and the in-image CUDA probe (or torch here)."""
    ctx.shared["health_before"] = health_watch.read_health(timeout_s=min(ctx.config.step_timeout_s / 3, 30.0))
    gpus, source, ev = _gpus(ctx)
    if ctx.config.evidence_dir and ev is None:
        return failed(f"evidence_dir given but {source}")
    if not gpus:
        return skipped(f"no NVIDIA GPU recognised: {source}", {"source": source})
    nv = ev.item("nvidia").value if ev else {}
    driver = nv.get("driver_version") or gpus[0].get("driver_version")
    gpu_text = f"{describe_gpus(gpus)}; driver {driver or '?'}"
    if nv.get("cuda_driver_version"):
        gpu_text += f" (driver's max CUDA {nv['cuda_driver_version']})"
    evidence: dict[str, Any] = {
        "source": source,
        "gpus": [{k: g.get(k) for k in ("index", "name", "compute_capability", "memory_total_mib")} for g in gpus],
    }
    details: dict[str, Any] = {"gpu_count": len(gpus), "driver": driver, "source": source}
    if ev is not None:
        probe = ev.item("cuda_probe")
        pv = probe.value
        evidence["cuda_probe"] = {
            "status": probe.status,
            "ran": pv.get("ran"),
            "ok": pv.get("ok"),
            "error": pv.get("error"),
        }
        image_cuda = ev.item("image").value.get("cuda_version")
        details["image_cuda"] = image_cuda
        if pv.get("ran"):
            if pv.get("ok"):
                return passed(
                    f"{gpu_text}; in-image CUDA probe OK (image CUDA {image_cuda or '?'})", evidence, **details
                )
            return failed(
                f"{gpu_text}; in-image CUDA probe failed: {pv.get('error') or 'no CUDA_OK'}", evidence, **details
            )
    tp = _torch(ctx)
    evidence["torch_here"] = tp
    if tp.get("available") and tp.get("count"):
        return passed(
            f"{gpu_text}; torch {tp.get('torch')} (CUDA {tp.get('cuda')}) here sees {tp['count']} GPU(s)",
            evidence,
            **details,
        )
    if tp.get("torch") and tp.get("cuda"):
        return failed(
            f"{gpu_text}; torch {tp['torch']} (CUDA {tp['cuda']}) cannot initialise CUDA: "
            f"{tp.get('error') or 'torch.cuda.is_available() is False'}",
            evidence,
            **details,
        )
    return skipped(
        f"{gpu_text}; container CUDA not probed (no in-image probe in the evidence; "
        f"{tp.get('error') or 'torch here is a CPU build'}): run runbook 01 with probe_image",
        evidence,
        **details,
    )


@register("multi_gpu", "Multi-GPU communication (NCCL / Gloo)", 7, needs_endpoint=False)
def multi_gpu(ctx: StepContext) -> Outcome:
    """nccl-tests output when given; else an NCCL + Gloo all-reduce across local GPUs; else skip."""
    cfg = ctx.config
    found = _gpus(ctx) if not cfg.nccl_tests_file else None
    return communication_check(cfg.nccl_tests_file, found, cfg.allreduce_timeout_s, ctx.time, lambda: _torch(ctx))


def communication_check(
    nccl_tests_file: str | None,
    found: tuple[list[dict[str, Any]], str, Evidence | None] | None,
    allreduce_timeout_s: float,
    time: Callable[[str, float | None], None] | None = None,
    torch_here: Callable[[], dict[str, Any]] | None = None,
) -> Outcome:
    """The multi-GPU question, for the canary (step 7) and the load check (its multi-node stage):
    nccl-tests output when given, else an NCCL + Gloo all-reduce across the GPUs ``found``
    (``gpus_for``), else a skip that says why. ``torch_here`` probes torch on this machine (the
    canary passes its per-run cache)."""
    if nccl_tests_file:
        try:
            res = load_nccl_tests(nccl_tests_file)
        except OSError as exc:
            return failed(f"cannot read nccl_tests_file: {exc}")
        evidence = {
            "test": res.test,
            "ranks": res.ranks,
            "hosts": res.hosts,
            "rows": len(res.rows),
            "wrong_total": res.wrong_total,
            "out_of_bounds": res.out_of_bounds,
            "avg_busbw_gbps": res.avg_busbw_gbps,
            "max_busbw_gbps": res.max_busbw_gbps,
            "errors": res.errors[:3],
        }
        details = {"nccl_tests": res.to_dict()}
        problems = res.problems()
        if problems:
            return failed(
                f"nccl-tests ({res.test or '?'}, {res.ranks} ranks): {'; '.join(problems)}", evidence, **details
            )
        return passed(
            f"nccl-tests {res.test or '?'} on {res.ranks} ranks / {len(res.hosts)} host(s): "
            f"#wrong 0, out of bounds 0; avg bus bandwidth {res.avg_busbw_gbps} GB/s, "
            f"max {res.max_busbw_gbps} GB/s",
            evidence,
            **details,
        )

    gpus, source, ev = found if found is not None else ([], "no GPU list given", None)
    if len(gpus) < 2:
        return skipped(
            f"{len(gpus)} GPU(s) ({source}): multi-GPU communication needs two or more; no nccl_tests_file given",
            not_applicable=len(gpus) == 1,
        )
    tp = (torch_here or (lambda: torch_probe(timeout_s=min(allreduce_timeout_s, 120.0))))()
    if not tp.get("torch"):
        return skipped(
            f"{len(gpus)} GPUs but {tp.get('error') or 'torch unavailable'}: cannot run the all-reduce "
            f"here; give nccl_tests_file instead"
        )
    world = min(len(gpus), int(tp.get("count") or 0))
    if world < 2 and ev is not None:
        return skipped(
            f"{len(gpus)} GPUs in the evidence ({source}) but torch here sees {tp.get('count') or 0}: "
            f"the all-reduce must run on that node; give nccl_tests_file from it",
            {"torch_here": tp},
        )
    if world < 2:
        return failed(
            f"{len(gpus)} GPUs recognised but torch sees {tp.get('count')}: {tp.get('error') or ''}", {"torch_here": tp}
        )
    runs = {}
    for backend in ("nccl", "gloo"):
        out = allreduce_check(backend, world, allreduce_timeout_s)
        runs[backend] = out
        if time is not None:
            time(f"{backend}_allreduce", out.get("seconds"))
    bad = [
        f"{b}: {r.get('error') or [x.get('error') for x in r.get('ranks', []) if not x.get('ok')]}"
        for b, r in runs.items()
        if not r.get("ok")
    ]
    if bad:
        return failed(f"all-reduce across {world} GPUs failed — {'; '.join(bad)}", runs, allreduce=runs)
    bw = runs["nccl"].get("busbw_gbps")
    return passed(
        f"NCCL and Gloo all-reduce across {world} GPUs correct; NCCL bus bandwidth {bw:.1f} GB/s (64 MiB)"
        if bw
        else f"NCCL and Gloo all-reduce across {world} GPUs correct",
        runs,
        allreduce=runs,
    )


def _new_event(e: dict[str, Any]) -> tuple[bool, str]:
    """(fails the step, text): a new Xid always fails; a new SXid when the driver calls it fatal.

    The words are the hardware verdict's own reading (NVIDIA's catalog), with the new count.
    """
    shown = {"text": "", "line": "", "pci": None, **e, "count": e.get("new_count") or e.get("count")}
    found = xid_finding(shown) if e.get("kind") == "xid" else sxid_finding(shown)
    return (e.get("kind") == "xid" or found.severity == "faulty"), found.text


@register("gpu_health", "GPU health unchanged by the canary's traffic", 10, needs_endpoint=False)
def gpu_health(ctx: StepContext) -> Outcome:
    """A second GPU health reading after every traffic step, against step 1's: anything new fails."""
    before = ctx.shared.get("health_before")
    if before is None:
        return skipped("no GPU health reading before the traffic: step gpu_cuda did not run in this canary")
    if not before.get("gpus"):
        why = "; ".join(before.get("reasons") or []) or "no GPU listed"
        return skipped(
            f"no GPU health readable on this machine ({why}): run the canary on the node under change to "
            f"watch its GPUs",
            {"before": before},
        )
    after = health_watch.read_health(
        health_watch.lookback_after(before), timeout_s=min(ctx.config.step_timeout_s / 2, 30.0)
    )
    diff = health_watch.compare_health(before, after)
    evidence = {"before_at": before["taken_at"], "after_at": after["taken_at"], **diff}
    details = {"before": before, "after": after, "change": diff}
    events = [_new_event(e) for e in diff["new_events"]]
    bad = [text for fails, text in events if fails] + diff["new_memory"] + diff["lost"]
    noted = "".join(f"; noted: {text}" for fails, text in events if not fails)
    gpus = f"{len(after.get('gpus') or [])} GPU(s)"
    if bad:
        return failed(f"GPU health changed during the canary ({gpus}): {'; '.join(bad)}", evidence, **details)
    if not diff["comparable"]:
        return skipped(
            f"GPU health not compared in full ({gpus}): {'; '.join(diff['unread'])}; nothing new in what was "
            f"read{noted}",
            evidence,
            **details,
        )
    return passed(
        f"{gpus}: no new Xid / SXid in the kernel log ({after.get('kernel_log_source') or '?'}), no new pending "
        f"remap or page retirement, no new uncorrected ECC error, no GPU lost between {before['taken_at']} and "
        f"{after['taken_at']}{noted}",
        evidence,
        **details,
    )
