"""Container CUDA vs host driver vs GPU architecture: one verdict, with what it rests on.

Why its own module: the verdict is the hinge of the incident ("environment mismatch" or "bad
configuration"), so it is computed from cited data only, names every evidence field it read, says
which input is missing instead of guessing, and sets itself against the log findings so a
contradiction is visible rather than averaged away. The rules are in :mod:`.driver_rules`, the
analyses beside the verdict in :mod:`.side_checks`, the records in :mod:`.records`.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .driver_rules import arch_check, driver_check, driver_cuda, missing_fact, resolve_cc
from .facts import BranchInfo, Fact, load_facts, parse_cuda_version, parse_driver_version, vstr
from .hardware_route import hardware_lines
from .inputs import CompatInputs
from .records import OK_VERDICTS, VERDICTS, CompatDecision, Demand, LogCheck, Risk
from .require import check_require
from .side_checks import log_checks, profile_demands, risks_beside, routes

__all__ = ["OK_VERDICTS", "VERDICTS", "CompatDecision", "Demand", "LogCheck", "Risk", "decide"]


def decide(
    inputs: CompatInputs, log_findings: list[dict[str, Any]] | None = None, *, today: _dt.date | None = None
) -> CompatDecision:
    """Decide compatibility for one host/image/launch. Never raises on missing data: returns `unknown`."""
    facts = load_facts()
    today = today or _dt.date.today()
    missing: list[str] = []
    reasons: list[str] = []
    used: list[Fact] = []
    risks: list[Risk] = []
    img, img_note = parse_cuda_version(inputs.image_cuda_version)
    if img is None:
        missing.append("image_cuda_version")
    if img_note:
        reasons.append(img_note[0].upper() + img_note[1:] + ".")
    drv, drv_note = parse_driver_version(inputs.driver_version)
    if drv is None:
        missing.append("driver_version")
        reasons.append(drv_note[0].upper() + drv_note[1:] + ".")
    cc, cc_why = resolve_cc(inputs, reasons, used)
    binfo = facts.branch(drv[0]) if drv else None
    dcuda = driver_cuda(inputs, drv)
    evidence_used: dict[str, Any] = {}
    for name in (
        "image_cuda_version",
        "driver_version",
        "gpu_name",
        "compute_capability",
        "brand_class",
        "compat_libs",
        "image_compat_package",
        "gpu_count",
    ):
        v = getattr(inputs, name)
        if v is not None:
            evidence_used[name] = v
    if dcuda.text:
        evidence_used["driver_cuda_version"] = f"{dcuda.text} ({dcuda.source})"
    reasons += [f"({n})" for n in dcuda.notes]

    arch_ok: bool | None = None
    if img is not None and cc is not None:
        arch_ok, ar, af, arisk = arch_check(img, cc)
        reasons += ar
        used += af
        risks += arisk
    drv_verdict: str | None = None
    fca: dict[str, Any] = {}
    if img is not None and drv is not None:
        drv_verdict, dr, df, dmiss, drisk, fca = driver_check(
            inputs,
            img,
            drv,
            binfo,
            dcuda.version if dcuda.from_evidence else None,
            dcuda.source,
        )
        reasons += dr
        used += df
        risks += drisk
        missing += dmiss

    verdict = _combine(arch_ok, drv_verdict, img, drv, cc, cc_why, missing, reasons)

    # ---- beside the verdict --------------------------------------------------------------------
    cstart = None
    if inputs.nvidia_require_cuda or inputs.nvidia_disable_require or img is not None:
        # The same driver-CUDA figure as the verdict, and only inputs that parsed: no second derivation.
        cstart = check_require(
            inputs.nvidia_require_cuda,
            driver_version=str(inputs.driver_version).strip() if drv else None,
            driver_cuda_version=dcuda.text,
            compute_capability=vstr(cc) if cc else None,
            brand_raw=inputs.brand_raw,
            brand_class=inputs.brand_class,
            disable_require=inputs.nvidia_disable_require,
            image_cuda_version=vstr(img) if img else None,
            extra_env=inputs.launch_env,
            legacy="CUDA_VERSION" in inputs.launch_env and "NVIDIA_REQUIRE_CUDA" not in inputs.launch_env,
            derive_driver_cuda=False,
            driver_cuda_note=None if dcuda.from_evidence or not dcuda.text else dcuda.source,
        )
    risks += risks_beside(inputs, img, drv, cc, binfo, verdict, today)
    if inputs.derived:
        for k, v in inputs.derived.items():
            reasons.append(f"({k} {v})")

    try:
        demands = profile_demands(inputs, img, drv)
    except KeyError as exc:
        demands = [Demand("profile", "unknown", str(exc))]
    checks = log_checks(log_findings or [], verdict, inputs, img, cstart)
    # hardware or fit that blocks the start comes first; the verdict itself stays about compatibility
    next_lines = hardware_lines(inputs) + routes(verdict, checks, demands)
    if dcuda.text and verdict == "driver_too_old" and img is not None:
        reasons.insert(
            0,
            f"The host driver {inputs.driver_version} offers CUDA {dcuda.text} ({dcuda.source}); the image "
            f"needs CUDA {vstr(img[:2])}.",
        )
    if verdict == "unknown" and not reasons:
        reasons.append("Cannot decide: missing " + ", ".join(missing or ["input"]) + ".")
    summary = _summary(verdict, inputs, missing, fca.get("supported"), binfo)
    return CompatDecision(
        verdict,
        summary,
        reasons,
        _dedupe(used),
        evidence_used,
        sorted(set(missing), key=missing.index),
        cstart,
        risks,
        binfo,
        inputs.model_profile,
        demands,
        checks,
        next_lines,
        inputs,
        today.isoformat(),
        fca,
    )


def _combine(
    arch_ok: bool | None,
    drv_verdict: str | None,
    img: tuple[int, ...] | None,
    drv: tuple[int, ...] | None,
    cc: tuple[int, ...] | None,
    cc_why: str,
    missing: list[str],
    reasons: list[str],
) -> str:
    """The verdict from the architecture and driver sides: any "no" wins, then any "cannot tell"."""
    if arch_ok is False:
        return "arch_unsupported"
    if img is None or drv is None:
        return "unknown"
    if drv_verdict == "driver_too_old":
        return "driver_too_old"
    if drv_verdict == "unknown":
        return "unknown"
    if cc is None:
        missing.append("compute_capability")
        reasons.append(
            f"The driver side alone gives {drv_verdict}, but the GPU's compute capability is not known "
            f"({cc_why}), so architecture support is unchecked."
        )
        return "unknown"
    if arch_ok is None:
        missing.append(missing_fact(f"architecture support in CUDA {img[0]}.x"))
        reasons.append(
            f"The driver side alone gives {drv_verdict}, but the data cannot say whether CUDA "
            f"{vstr(img[:2])} supports CC {vstr(cc)}."
        )
        return "unknown"
    return drv_verdict or "unknown"


def _dedupe(facts: list[Fact]) -> list[Fact]:
    """Each fact once, in first-use order."""
    seen, out = set(), []
    for f in facts:
        key = (f.id, f.text)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _summary(
    verdict: str, i: CompatInputs, missing: list[str], fc_supported: bool | None, binfo: BranchInfo | None
) -> str:
    host = f"driver {i.driver_version or '?'}" + (f" ({binfo.label} {binfo.type})" if binfo and binfo.type else "")
    img = f"CUDA {i.image_cuda_version or '?'} image"
    gpu = i.gpu_name or (f"CC {i.compute_capability}" if i.compute_capability else "unknown GPU")
    return {
        "compatible": f"{img} runs natively on {host} with {gpu}. The driver is not the problem.",
        "compatible_minor_version": f"{img} runs on {host} under minor-version compatibility (limited features).",
        "compatible_forward_compat": f"{img} runs on {host} only through the image's cuda-compat libraries "
        "(forward compatibility).",
        "driver_too_old": f"{img} needs a newer driver than {host}"
        + (" and forward compatibility does not apply." if fc_supported is False else "."),
        "arch_unsupported": f"{img} cannot run on {gpu}: architecture not supported by this CUDA.",
        "unknown": "Cannot decide: missing " + ", ".join(missing or ["input"]) + ".",
    }[verdict]
