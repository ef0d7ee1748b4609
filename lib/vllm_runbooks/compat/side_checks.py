"""Analyses beside the verdict: profile demands, log findings against it, where to look next.

Why apart from the verdict: none of these change the verdict; they put it in context (does the
model profile's recipe fit, do the logs confirm or contradict it, which line to investigate).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from .driver_rules import fact
from .facts import BranchInfo, cmp_version, decode_cuda_int, load_facts, parse_version, vstr
from .inputs import CompatInputs
from .profiles import load_profile
from .records import OK_VERDICTS, Demand, LogCheck, Risk
from .require import RequireCheck

# Where a finding sends the investigation once the driver is ruled out.
ROUTES = {
    "communication backend": ("nccl_error", "shm_insufficient"),
    "model loading": ("oom_weights", "oom_runtime", "kv_cache_insufficient"),
    "tool-call configuration": ("tool_call_parse_error",),
    "GPU count / parallelism": (),
    "container runtime / GPU visibility": (
        "libcuda_missing",
        "no_gpu_visible",
        "nvml_mismatch",
        "container_toolkit_requirement",
    ),
    "image / wheel build": ("abi_or_wheel_mismatch",),
    "other configuration": ("other_config_error", "unrecognized_error"),
}


def profile_demands(inputs: CompatInputs, img: tuple[int, ...] | None, drv: tuple[int, ...] | None) -> list[Demand]:
    """What the model profile's recipe demands (image CUDA, driver branch, GPUs) and whether it is met."""
    prof = load_profile(inputs.model_profile)
    out: list[Demand] = []
    im = prof.get("image") or {}
    src = im.get("source")
    if im.get("cuda_major"):
        if img is None:
            out.append(Demand("image CUDA major", "unknown", im.get("cuda_major_text", ""), src))
        else:
            st = "met" if img[0] == im["cuda_major"] else "unmet"
            extra = "" if st == "met" else f" This image is CUDA {vstr(img[:2])}: not the recipe image."
            out.append(Demand(f"CUDA {im['cuda_major']} image", st, im.get("cuda_major_text", "") + extra, src))
    if im.get("min_driver_branch"):
        if drv is None:
            st = "unknown"
        else:
            st = "met" if drv[0] >= im["min_driver_branch"] else "unmet"
        out.append(Demand(f"driver R{im['min_driver_branch']}+", st, im.get("min_driver_text", ""), src))
    if "older_cuda_tag" in im:
        txt = im.get("older_cuda_text") or ""
        out.append(Demand("older-CUDA image", "info", txt, src))
    g = prof.get("gpus") or {}
    mins = g.get("min_count") or {}
    if mins:
        need = min(mins.values())
        by_gpu = g.get("min_count_by_gpu") or {}
        gname = (inputs.gpu_name or "").lower()
        for key, n in by_gpu.items():
            if re.search(rf"\b{re.escape(key)}\b", gname):
                need = max(need, n)
        if inputs.gpu_count is None:
            st = "unknown"
        else:
            st = "met" if inputs.gpu_count >= need else "unmet"
        out.append(
            Demand(
                f">= {need} GPUs",
                st,
                f"Recipe minimum: {', '.join(f'{k.upper()} {v}' for k, v in mins.items())}"
                + (f", {', '.join(f'{k.upper()} {v}' for k, v in by_gpu.items())}" if by_gpu else "")
                + f"; this host has {inputs.gpu_count if inputs.gpu_count is not None else '?'} GPUs "
                "(multi-node setups add up across nodes).",
                g.get("source"),
            )
        )
    if g.get("verified"):
        gname = (inputs.gpu_name or "").lower()
        if not gname:
            st = "unknown"
        else:
            st = "met" if any(re.search(rf"\b{re.escape(v)}\b", gname) for v in g["verified"]) else "unmet"
        out.append(
            Demand(
                "verified GPU class",
                st,
                f"Recipe verified on {', '.join(g['verified'])}; recommended "
                f"{g.get('recommended', '-')}. GPU here: {inputs.gpu_name or '?'}.",
                g.get("source"),
            )
        )
    return out


_FOUND = re.compile(r"found version (\d{4,6})", re.ASCII)  # ASCII digits only: "１２０００" is no version


def log_checks(
    findings: list[dict[str, Any]],
    verdict: str,
    inputs: CompatInputs,
    img: tuple[int, ...] | None,
    cstart: RequireCheck | None,
) -> list[LogCheck]:
    """Each log finding set against the verdict: confirms, contradicts or neutral, and why."""
    out: list[LogCheck] = []
    ok = verdict in OK_VERDICTS
    for f in findings or []:
        label = str(f.get("label") or "unrecognized_error")
        text = str(f.get("text") or "")
        line = f.get("line")
        rel, why = "neutral", "does not bear on the CUDA/driver verdict"
        m = _FOUND.search(text)
        if m:
            offered = decode_cuda_int(int(m.group(1)))
            if img is not None:
                short = cmp_version(offered, img[:2]) < 0
                why = f"the loaded libcuda offers CUDA {vstr(offered)}; the image is CUDA {vstr(img[:2])} "
                if short and verdict == "driver_too_old":
                    rel, why = "confirms", why + "(older: the driver is too old)"
                elif short and verdict == "compatible_minor_version" and offered[0] == img[0]:
                    rel, why = "neutral", why + "(same major: minor-version compatibility applies)"
                elif short and ok:
                    rel, why = "contradicts", why + f"(older) but the verdict is {verdict}"
                elif not short and verdict == "driver_too_old":
                    rel, why = "contradicts", why + "(not older) yet the verdict is driver_too_old"
                else:
                    why += "(consistent with the verdict)"
                    rel = "confirms" if ok else "neutral"
                if inputs.driver_cuda_version and parse_version(inputs.driver_cuda_version):
                    host = parse_version(inputs.driver_cuda_version)
                    if host and cmp_version(offered[:2], host[:2]) > 0:
                        why += (
                            f"; it is newer than the host driver's CUDA {inputs.driver_cuda_version}, "
                            "so compat libraries were loaded"
                        )
            out.append(LogCheck(label, rel, why, line, text))
            continue
        if label == "driver_too_old":
            if verdict == "driver_too_old":
                rel, why = "confirms", "log says the driver is too old; so does the verdict"
            elif ok:
                rel, why = (
                    "contradicts",
                    (
                        f"log says the driver is too old but the verdict is {verdict}: the "
                        "log may come from another host/image, or compat libs were not loaded"
                    ),
                )
            else:
                rel, why = "neutral", f"verdict is {verdict}; the log points at the driver"
        elif label == "forward_compat_unsupported":
            if verdict == "compatible_forward_compat":
                rel, why = (
                    "contradicts",
                    "log says forward compatibility failed on this device but the verdict relies on it",
                )
            elif verdict == "driver_too_old":
                rel, why = "confirms", "forward compatibility does not rescue this host; the log agrees"
        elif label == "container_toolkit_requirement":
            if cstart is not None and cstart.will_start is False:
                rel, why = "confirms", "the runtime refused the image's NVIDIA_REQUIRE_CUDA; so does our evaluation"
            elif cstart is not None and cstart.will_start is True:
                rel, why = (
                    "contradicts",
                    (
                        "the runtime refused the container but our evaluation of "
                        "NVIDIA_REQUIRE_CUDA admits it: check the image/host pair in evidence"
                    ),
                )
            else:
                why = "runtime requirement error; our evaluation could not tell"
        elif label == "arch_unsupported":
            if verdict == "arch_unsupported":
                rel, why = "confirms", "no kernel image for this GPU; the verdict agrees"
            elif ok:
                rel, why = (
                    "contradicts",
                    (
                        "no kernel image for this GPU although CUDA supports the architecture: "
                        "the build lacks kernels for it (arch list / sm_XXXa), not the driver"
                    ),
                )
        elif label == "healthy":
            # Serving proof, or a start-up that finished its GPU stages (KV cache allocated): either
            # way CUDA worked on this GPU.
            reached = "finished start-up on the GPU" if f.get("proves") == "started" else "reached healthy"
            if verdict in ("driver_too_old", "arch_unsupported"):
                rel, why = "contradicts", f"the server {reached} but the verdict is {verdict}"
            elif ok:
                rel, why = "confirms", f"the server {reached}"
        elif label == "nvml_mismatch":
            why = "driver/library version mismatch (user-space vs kernel module, e.g. upgrade without reboot)"
        elif label in ("libcuda_missing", "no_gpu_visible"):
            why = "the container did not get the GPU/driver: container runtime line, not the CUDA version"
        out.append(LogCheck(label, rel, why, line, text))
    return out


def routes(verdict: str, checks: list[LogCheck], demands: list[Demand]) -> list[str]:
    """Once the driver is ruled out: the next lines to investigate, from the findings and demands."""
    if verdict not in OK_VERDICTS:
        return []
    labels = {c.label for c in checks}
    out = [
        "The driver is not the problem: CUDA in the image is compatible with this host "
        f"({verdict}). Do not change the driver; investigate the other lines."
    ]
    for line, trig in ROUTES.items():
        hits = sorted(labels & set(trig))
        if line == "GPU count / parallelism":
            unmet = [d.demand for d in demands if d.status == "unmet" and "GPU" in d.demand]
            if unmet:
                out.append(f"{line}: profile demand not met ({', '.join(unmet)}).")
            continue
        if hits:
            out.append(f"{line}: log findings {', '.join(hits)}.")
    if len(out) == 1:
        out.append("No log finding points at a line yet: run the launch lint and the canary (runbook 03) in order.")
    return out


def risks_beside(
    inputs: CompatInputs,
    img: tuple[int, ...] | None,
    drv: tuple[int, ...] | None,
    cc: tuple[int, ...] | None,
    binfo: BranchInfo | None,
    verdict: str,
    today: _dt.date,
) -> list[Risk]:
    """Risks reported beside the verdict: error 803/804, NFB / end-of-life branch, legacy archs."""
    facts = load_facts()
    risks: list[Risk] = []
    fc = facts.data["forward_compatibility"]
    err803 = next(e for e in fc["errors"] if e["code"] == 803)
    if inputs.compat_libs and img is not None and drv is not None:
        tk = facts.toolkit_minimum(img)
        if tk and cmp_version(drv, tk.min_driver) >= 0:
            risks.append(
                Risk(
                    "error_803",
                    "error",
                    f"Compat libraries are forced on a driver that already supports CUDA {vstr(img[:2])} "
                    f"natively ({inputs.driver_version}): compat libs older than or equal to the kernel "
                    "driver are not supported and typically fail with error 803 "
                    "(system has unsupported display driver / cuda driver combination). Disable them "
                    "(VLLM_ENABLE_CUDA_COMPATIBILITY=0 / drop /compat from LD_LIBRARY_PATH).",
                    [
                        fact("forward_compatibility.errors.803", err803["meaning"], err803["source"]),
                        fact("forward_compatibility.rules", fc["rules"][0], fc["rules_source"]),
                    ],
                )
            )
    if inputs.compat_libs and inputs.brand_class == "geforce":
        err804 = next(e for e in fc["errors"] if e["code"] == 804)
        risks.append(
            Risk(
                "error_804",
                "error",
                "Compat libraries on a GeForce GPU fail with error 804 "
                "(forward compatibility was attempted on non supported HW).",
                [fact("forward_compatibility.errors.804", err804["meaning"], err804["source"])],
            )
        )
    if binfo:
        if binfo.type == "NFB":
            risks.append(
                Risk(
                    "new_feature_branch",
                    "warning",
                    f"Driver branch R{binfo.branch} is a New Feature Branch: short-lived, not a supported "
                    "forward-compatibility target; production should run a Production or Long-Term "
                    "branch.",
                    [fact("driver_branches", f"R{binfo.branch} NFB", binfo.source, binfo.status)],
                )
            )
        passed = binfo.eol_passed(today)
        if passed:
            risks.append(
                Risk(
                    "end_of_life_branch",
                    "warning",
                    f"Driver branch R{binfo.branch} is end of life "
                    f"({binfo.eol_date or binfo.eol}) as of {today.isoformat()}: "
                    "no further fixes; plan to leave it.",
                    [fact("driver_branches", f"R{binfo.branch} EOL {binfo.eol}", binfo.source, binfo.status)],
                )
            )
    elif drv is not None:
        risks.append(
            Risk("unknown_branch", "info", f"Driver branch R{drv[0]} is not in the data (type and EOL unknown).", [])
        )
    if cc is not None and drv is not None:
        legacy = facts.data["architecture_support"]["driver_floor_for_legacy_archs"]
        row = facts.arch_row(cc)
        if row and row.get("last_driver") == "R580" and drv[0] > 580:
            risks.append(
                Risk(
                    "legacy_arch_driver",
                    "error",
                    f"{row['arch']} GPUs are not supported by drivers newer than R580; this host runs R{drv[0]}.",
                    [
                        fact(
                            "architecture_support.driver_floor_for_legacy_archs",
                            legacy["text"],
                            legacy["source"],
                            legacy["status"],
                        )
                    ],
                )
            )
    if verdict == "compatible_forward_compat":
        risks.append(
            Risk(
                "forward_compat_limits",
                "info",
                "Forward compatibility covers CUDA only; kernel-mode features stay at the host driver "
                "level. Remove the compat libraries when the driver is upgraded to a branch >= the "
                "compat version, or they trigger error 803.",
                [fact("forward_compatibility.rules", fc["rules"][3], fc["rules_source"])],
            )
        )
    return risks
