"""The driver and architecture rules: what the published tables say about one image on one host.

Why its own module: these are the rules the verdict rests on, each citing the fact it used; the
orchestration (:func:`.decide.decide`) and the side analyses (:mod:`.side_checks`) only call them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .facts import (
    SECONDARY,
    UNCONFIRMED,
    BranchInfo,
    Fact,
    cmp_version,
    load_facts,
    parse_compute_capability,
    parse_version,
    vstr,
)
from .inputs import CompatInputs
from .records import Risk


def fact(id_: str, text: str, source: str, status: str = "CONFIRMED") -> Fact:
    """A fact the verdict relied on, with its data key and source."""
    return Fact(id_, text, source, str(status))


def arch_check(img: tuple[int, ...], cc: tuple[int, ...]) -> tuple[bool | None, list[str], list[Fact], list[Risk]]:
    """Can an image of this CUDA version carry kernels for this compute capability?"""
    facts = load_facts()
    arch = facts.data["architecture_support"]
    reasons: list[str] = []
    used: list[Fact] = []
    risks: list[Risk] = []
    ok: bool | None = True
    known_major = img[0] in facts.data_cuda_majors()
    if img[0] == 13:
        floor = facts.cuda13_min_cc()
        f = fact(
            "architecture_support.cuda13_floor",
            f"CUDA 13 supports compute capability >= {vstr(floor)} (Turing and newer); Maxwell, Pascal and "
            "Volta were dropped",
            arch["cuda13_floor"]["source"],
            arch["cuda13_floor"]["status"],
        )
        used.append(f)
        if cmp_version(cc, floor) < 0:
            ok = False
            reasons.append(
                f"GPU compute capability {vstr(cc)} is below CUDA 13's floor {vstr(floor)}: no CUDA 13 "
                "image can run on it, whatever the driver."
            )
    row = facts.arch_row(cc)
    if row and row.get("last_cuda") and row["last_cuda"] != "ongoing":
        last = parse_version(row["last_cuda"])
        if last and img[0] > last[0]:
            ok = False
            reasons.append(
                f"{row['arch']} (CC {vstr(cc)}): last supported CUDA is {row['last_cuda']}, image is "
                f"CUDA {vstr(img[:2])}."
            )
            used.append(
                fact(
                    "architecture_support.arch_matrix",
                    f"{row['arch']} last CUDA {row['last_cuda']}, last driver {row.get('last_driver')}",
                    row["source"],
                )
            )
    mt = facts.min_toolkit_for_cc(cc)
    if mt:
        need = parse_version(mt["min_cuda"])
        hard = bool(re.fullmatch(r"\d+\.\d+", str(mt["min_cuda"]).strip()))
        if need and cmp_version(img[:2], need[:2]) < 0:
            f = fact(
                "architecture_support.minimum_toolkit_for_gpu",
                f"CC {mt['cc']} needs CUDA {mt['min_cuda']}",
                mt["source"],
            )
            if hard:
                ok = False
                reasons.append(f"CC {vstr(cc)} needs CUDA >= {mt['min_cuda']}; image is CUDA {vstr(img[:2])}.")
                used.append(f)
            else:
                risks.append(
                    Risk(
                        "arch_partial", "warning", f"CC {vstr(cc)}: {mt['min_cuda']}. {mt.get('note', '')}".strip(), [f]
                    )
                )
    if ok and not known_major:
        # The data stops at the majors in its toolkit table: no floor, no "ongoing" claim reaches further.
        ok = None
        reasons.append(
            f"The data has no architecture facts for CUDA {img[0]}.x (its toolkit table covers CUDA "
            f"{', '.join(str(m) for m in sorted(facts.data_cuda_majors()))}.x): whether CC {vstr(cc)} is "
            f"supported by CUDA {vstr(img[:2])} is unknown."
        )
    if ok and not reasons:
        reasons.append(f"CC {vstr(cc)} is supported by CUDA {vstr(img[:2])}.")
    return ok, reasons, used, risks


def missing_fact(what: str) -> str:
    """Name a fact the data lacks, in `missing` (remediation tells how to add one)."""
    return f"fact: {what}"


def driver_check(
    inputs: CompatInputs,
    img: tuple[int, ...],
    drv: tuple[int, ...],
    binfo: BranchInfo | None,
    reported_cuda: tuple[int, ...] | None = None,
    reported_from: str = "",
) -> tuple[str, list[str], list[Fact], list[str], list[Risk], dict[str, Any]]:
    """Driver side only. Returns verdict, reasons, facts, missing, risks, forward-compat assessment.

    reported_cuda: the driver's own CUDA as the evidence gives it (NVML / nvidia-smi), never a
    figure derived from the toolkit table; it decides native support only where the table is silent.
    """
    facts = load_facts()
    reasons: list[str] = []
    used: list[Fact] = []
    risks: list[Risk] = []
    branch = drv[0]
    tk = facts.toolkit_minimum(img)
    native = False
    if tk and not tk.status.upper().startswith(UNCONFIRMED):
        used.append(
            fact(
                "toolkit_driver_minimums", f"CUDA {tk.label} needs Linux driver >= {tk.min_text}", tk.source, tk.status
            )
        )
        native = cmp_version(drv, tk.min_driver) >= 0
        rel = ">=" if native else "<"
        reasons.append(f"Driver {inputs.driver_version} {rel} {tk.min_text}, the minimum for CUDA {tk.label}.")
    else:
        unc = facts.unconfirmed_toolkit(img)
        note = unc.get("note", "") if unc else "no row in the toolkit table"
        reasons.append(
            f"Native minimum driver for CUDA {vstr(img[:2])} is not confirmed ({note[:160]}); "
            "it is not used for the verdict."
        )
        if unc:
            risks.append(
                Risk(
                    "unconfirmed_fact",
                    "info",
                    f"CUDA {vstr(img[:2])} minimum driver is UNCONFIRMED: verify before relying on it.",
                    [fact("toolkit_driver_minimums.unconfirmed_newer", note, unc["source"], UNCONFIRMED)],
                )
            )
        if reported_cuda is not None:
            # Evidence from the driver itself: nvidia-smi / NVML report the driver's maximum CUDA version.
            native = cmp_version(reported_cuda[:2], img[:2]) >= 0
            am = facts.data["architecture_support"]["arch_matrix"]
            used.append(
                fact(
                    "architecture_support.arch_matrix.note",
                    "nvidia-smi reports the maximum CUDA version supported by the driver",
                    am["source"],
                )
            )
            reasons.append(
                f"The driver reports CUDA {vstr(reported_cuda[:2])} ({reported_from}), "
                f"{'>=' if native else '<'} the image's CUDA {vstr(img[:2])}: the evidence decides native "
                "support where the toolkit table is silent."
            )
    if native:
        return "compatible", reasons, used, [], risks, {}

    mvc = facts.mvc_entry(img[0])
    if tk is None and not mvc:
        # No toolkit row and no minor-version entry for this major: the data is silent.
        miss = [missing_fact(f"minimum Linux driver for CUDA {vstr(img[:2])} (toolkit_driver_minimums)")]
        if reported_cuda is None:
            miss.append("driver_cuda_version")
            reasons.append(
                f"The data has no minimum driver for CUDA {vstr(img[:2])} and no CUDA {img[0]}.x "
                "minor-version entry, and the driver's own CUDA version is not in the evidence: "
                "cannot tell whether this driver runs the image."
            )
            return "unknown", reasons, used, miss, risks, {}
        if reported_cuda[0] == img[0]:
            miss.append(missing_fact(f"CUDA {img[0]}.x minor-version compatibility floor"))
            reasons.append(
                f"The driver offers CUDA {vstr(reported_cuda[:2])}, same major as the image, but the data has "
                f"no CUDA {img[0]}.x minor-version entry: cannot tell whether minor-version compatibility applies."
            )
            return "unknown", reasons, used, miss, risks, {}
        pkg0 = inputs.compat_package_name or f"cuda-compat-{img[0]}-{img[1]}"
        if inputs.compat_libs is True and not facts.fc_has_row(pkg0):
            miss = [missing_fact(f"forward-compatibility matrix row for {pkg0}")]
            reasons.append(
                f"Compat libraries are in use, but the forward-compatibility matrix has no row for "
                f"{pkg0}: cannot tell whether they rescue this host."
            )
            return "unknown", reasons, used, miss, risks, {}
    if mvc:
        floor = parse_version(mvc["min_driver_linux"])
        mvc_src = facts.data["minor_version_compatibility"]["source"]
        used.append(
            fact(
                "minor_version_compatibility",
                f"CUDA {img[0]}.x minor-version compatibility needs Linux driver {mvc['min_driver_linux']}",
                mvc["source"],
                mvc["status"],
            )
        )
        if floor and cmp_version(drv, floor) >= 0:
            reasons.append(
                f"Driver {inputs.driver_version} meets the CUDA {img[0]}.x minor-version floor "
                f"{mvc['min_driver_linux']}: the image runs with a limited feature set."
            )
            cav = facts.data["minor_version_compatibility"]["caveats"]
            risks.append(
                Risk(
                    "minor_version_limits",
                    "warning",
                    "Minor-version compatibility: APIs that need the newer driver fail with error 36; "
                    "PTX built by the newer toolkit cannot be JIT-compiled by this driver (error 222), so "
                    "kernels must exist as SASS for this GPU.",
                    [fact("minor_version_compatibility.caveats", c["text"], c["source"]) for c in cav[:2]],
                )
            )
            if str(mvc.get("exact_patch_floor", "")).upper() == UNCONFIRMED:
                reasons.append(
                    f"(The exact patch floor within the {mvc['min_driver_linux']} branch is UNCONFIRMED; "
                    "the branch floor is what is published.)"
                )
            return "compatible_minor_version", reasons, used, [], risks, {}
        reasons.append(
            f"Driver {inputs.driver_version} is below the CUDA {img[0]}.x minor-version floor "
            f"{mvc['min_driver_linux']} ({mvc_src})."
        )

    # Forward compatibility (cuda-compat user-mode libs from the image).
    fc = facts.data["forward_compatibility"]
    pkg = inputs.compat_package_name or f"cuda-compat-{img[0]}-{img[1]}"
    cell = facts.fc_cell(pkg, branch)
    supported: bool | None
    why: str
    missing: list[str] = []
    if inputs.brand_class == "geforce":
        supported = False
        why = (
            "forward compatibility is not available on GeForce / consumer GPUs "
            "(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)"
        )
        used.append(fact("forward_compatibility.not_applicable", fc["not_applicable"][0], fc["source"]))
    elif binfo and binfo.type == "NFB":
        supported = False
        why = f"R{branch} is a New Feature Branch, and New Feature Branches are not supported forward-compat targets"
        used.append(fact("forward_compatibility.rules", fc["rules"][2], fc["rules_source"]))
        used.append(fact("driver_branches", f"R{branch} type NFB", binfo.source, binfo.status))
    elif cell == "C":
        supported = True
        why = f"the forward-compatibility matrix marks {pkg} on r{branch} as compatible (C)"
        used.append(
            fact(
                "forward_compatibility.support_matrix",
                f"{pkg} on r{branch}: C",
                fc["support_matrix"]["source"],
                fc["support_matrix"]["status"],
            )
        )
        if inputs.brand_class is None:
            supported = None
            missing.append("brand_class")
            why += ", but only on data-center and select professional GPUs, and the GPU brand is not known"
        elif inputs.brand_class == "professional":
            why += "; on professional (RTX) boards only select NGC Server Ready SKUs are covered"
        used.append(
            fact("forward_compatibility.applicable_hardware", ", ".join(fc["applicable_hardware"]), fc["source"])
        )
    elif cell == "X":
        supported = False
        why = f"the forward-compatibility matrix marks {pkg} on r{branch} as not compatible (X)"
        used.append(
            fact(
                "forward_compatibility.support_matrix",
                f"{pkg} on r{branch}: X",
                fc["support_matrix"]["source"],
                fc["support_matrix"]["status"],
            )
        )
    else:
        supported = False
        if not facts.fc_has_row(pkg):
            why = f"the forward-compatibility matrix has no row for {pkg}"
        else:
            why = (
                f"r{branch} is not listed for {pkg} in the forward-compatibility matrix; unlisted branches are "
                "end of life (or New Feature Branches) and not supported targets"
            )
            used.append(fact("forward_compatibility.rules", fc["rules"][1], fc["rules_source"]))
        older = facts.fc_older_cell(pkg, branch)
        if older == "C":
            risks.append(
                Risk(
                    "historic_forward_compat",
                    "info",
                    f"An older NVIDIA matrix (quoted secondhand) listed {pkg} on r{branch} as C; the "
                    "current matrix does not, so it is not a supported target.",
                    [
                        fact(
                            "forward_compatibility.support_matrix_older",
                            f"{pkg} on r{branch}: C (older)",
                            fc["support_matrix_older"]["source"],
                            SECONDARY,
                        )
                    ],
                )
            )

    fca = {"package": pkg, "branch": f"r{branch}", "supported": supported, "why": why}
    if inputs.compat_libs is True:
        if supported is True:
            reasons.append(f"The image's compat libraries are in use and {why}.")
            return "compatible_forward_compat", reasons, used, [], risks, fca
        if supported is None:
            reasons.append(f"Compat libraries are in use; {why}.")
            return "unknown", reasons, used, missing, risks, fca
        reasons.append(f"Compat libraries are in use, but {why}: forward compatibility does not rescue this host.")
        return "driver_too_old", reasons, used, [], risks, fca
    if supported is True and inputs.compat_libs is None:
        reasons.append(
            f"Forward compatibility would apply ({why}), but whether the image's compat libraries are "
            "in use is not known."
        )
        return "unknown", reasons, used, ["compat_libs"], risks, fca
    if supported is True:
        reasons.append(
            f"The compat libraries are not in use for this launch; {why}, so enabling them "
            "(VLLM_ENABLE_CUDA_COMPATIBILITY=1 in vLLM images) is a remediation option."
        )
    else:
        reasons.append(f"Forward compatibility is no way out here: {why}.")
    return "driver_too_old", reasons, used, [], risks, fca


@dataclass
class DriverCuda:
    """The driver's own CUDA: one figure for the verdict and the container-start check alike."""

    version: tuple[int, ...] | None = None
    source: str = "unknown"  # where it came from, said in reasons
    from_evidence: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str | None:
        """major.minor, or None when unknown."""
        return vstr(self.version[:2]) if self.version else None


def driver_cuda(inputs: CompatInputs, drv: tuple[int, ...] | None) -> DriverCuda:
    """Evidence (NVML cuda_driver_version / nvidia-smi) first; else the toolkit table where it covers the branch."""
    out = DriverCuda()
    derived: tuple[tuple[int, ...] | None, Any, str] = (None, None, "")
    if drv:
        derived = load_facts().driver_cuda(drv)
    if inputs.driver_cuda_version:
        rep = parse_version(inputs.driver_cuda_version)
        if rep and len(rep) >= 2:
            out.version, out.from_evidence = rep[:2], True
            out.source = f"reported by the driver, evidence {inputs.sources.get('driver_cuda_version', 'input')}"
            if derived[0] and cmp_version(derived[0], rep[:2]) != 0:
                out.notes.append(
                    f"the evidence's driver CUDA {vstr(rep[:2])} is used; the toolkit table would give "
                    f"{vstr(derived[0])} for driver {inputs.driver_version} ({derived[2]})"
                )
            return out
        out.notes.append(f"could not parse driver_cuda_version {inputs.driver_cuda_version!r}; not used")
    if derived[0]:
        out.version = derived[0]
        out.source = f"derived from the toolkit table: {derived[2]}"
    elif drv:
        out.notes.append(f"the driver's own CUDA version is unknown: {derived[2]}")
    return out


def resolve_cc(inputs: CompatInputs, reasons: list[str], used: list[Fact]) -> tuple[tuple[int, ...] | None, str]:
    """Compute capability as given, else from the GPU name via the data; says which and why not."""
    cc, note = parse_compute_capability(inputs.compute_capability)
    if cc is not None:
        return cc, ""
    info = load_facts().gpu(inputs.gpu_name)
    if inputs.compute_capability is not None:
        reasons.append(note[0].upper() + note[1:] + ".")
        if info:
            reasons.append(
                f"Fell back to CC {info.compute_capability} from GPU name {inputs.gpu_name!r} via the data "
                f"({info.gpu}, {info.status})."
            )
            used.append(
                fact(
                    "architecture_support.gpu_compute_capability",
                    f"{info.gpu}: compute capability {info.compute_capability}",
                    info.source,
                    info.status,
                )
            )
            return parse_version(info.compute_capability), ""
    if inputs.compute_capability is not None:
        why = note + (
            f", and GPU name {inputs.gpu_name!r} matched no entry of the data" if inputs.gpu_name else ", no GPU name"
        )
    elif inputs.gpu_name:
        why = f"GPU name {inputs.gpu_name!r} matched no entry of the data"
    else:
        why = "neither compute_capability nor a GPU name was given"
    return None, why
