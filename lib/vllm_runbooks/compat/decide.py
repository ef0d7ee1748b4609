"""Container CUDA vs host driver vs GPU architecture: one verdict, with what it rests on.

Why its own module: the verdict is the hinge of the incident ("environment mismatch" or "bad
configuration"), so it is computed from cited data only, names every evidence field it read, says
which input is missing instead of guessing, and sets itself against the log findings so a
contradiction is visible rather than averaged away.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any

from vllm_runbooks.records import Record

from . import _html as H
from .facts import (
    SECONDARY,
    UNCONFIRMED,
    BranchInfo,
    Fact,
    cmp_version,
    decode_cuda_int,
    load_facts,
    parse_compute_capability,
    parse_cuda_version,
    parse_driver_version,
    parse_version,
    vstr,
)
from .inputs import CompatInputs
from .profiles import load_profile
from .require import RequireCheck, check_require

VERDICTS = (
    "compatible",
    "compatible_minor_version",
    "compatible_forward_compat",
    "driver_too_old",
    "arch_unsupported",
    "unknown",
)
OK_VERDICTS = VERDICTS[:3]
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


@dataclass
class Risk(Record):
    """Something reported beside the verdict (803 risk, NFB / EOL branch, caveats)."""

    SCHEMA = "compat_risk"
    kind: str
    severity: str  # error | warning | info
    text: str
    facts: list[Fact] = field(default_factory=list)


@dataclass
class Demand(Record):
    """One thing the model profile demands, and whether this host/image meets it."""

    SCHEMA = "profile_demand"
    demand: str
    status: str  # met | unmet | unknown | info
    text: str
    source: str | None = None


@dataclass
class LogCheck(Record):
    """A log finding set against the verdict: confirms, contradicts or is neutral to it."""

    SCHEMA = "log_check"
    label: str
    relation: str  # confirms | contradicts | neutral
    why: str
    line: int | None = None
    text: str | None = None


@dataclass
class CompatDecision(Record):
    """The compatibility verdict and everything reported beside it."""

    SCHEMA = "compat_decision"
    SCHEMA_VERSION = 1

    verdict: str
    summary: str
    reasons: list[str]
    facts: list[Fact]
    evidence_used: dict[str, Any]
    missing: list[str]
    container_start: RequireCheck | None
    risks: list[Risk]
    driver_branch: BranchInfo | None
    profile: str
    profile_demands: list[Demand]
    log_checks: list[LogCheck]
    routes: list[str]
    inputs: CompatInputs
    evaluated_on: str
    forward_compat: dict[str, Any] = field(default_factory=dict)  # package, branch, supported, why

    @property
    def contradictions(self) -> list[LogCheck]:
        return [c for c in self.log_checks if c.relation == "contradicts"]

    @property
    def driver_is_problem(self) -> bool | None:
        if self.verdict in OK_VERDICTS:
            return False
        return True if self.verdict == "driver_too_old" else None

    def headline(self) -> dict[str, Any]:
        """Compact dict for the runbook's `headline` scrap."""
        return {
            "verdict": self.verdict,
            "summary": self.summary,
            "missing": self.missing,
            "container_starts": None if self.container_start is None else self.container_start.will_start,
            "contradictions": len(self.contradictions),
            "risks": [r.kind for r in self.risks if r.severity in ("error", "warning")],
        }

    def figure(self):  # noqa: ANN201 - plotly figure
        from .chart import compat_chart

        return compat_chart(self.inputs, today=_dt.date.fromisoformat(self.evaluated_on))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompatDecision:
        d = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}
        d["facts"] = [Fact.from_dict(x) for x in data.get("facts") or []]
        d["risks"] = [
            Risk(x["kind"], x["severity"], x["text"], [Fact.from_dict(f) for f in x.get("facts") or []])
            for x in data.get("risks") or []
        ]
        d["profile_demands"] = [Demand.from_dict(x) for x in data.get("profile_demands") or []]
        d["log_checks"] = [LogCheck.from_dict(x) for x in data.get("log_checks") or []]
        cs = data.get("container_start")
        d["container_start"] = (
            None
            if cs is None
            else RequireCheck.from_dict({**cs, "facts": [Fact.from_dict(f) for f in cs.get("facts") or []]})
        )
        d["driver_branch"] = BranchInfo.from_dict(data["driver_branch"]) if data.get("driver_branch") else None
        d["inputs"] = CompatInputs.from_dict(data.get("inputs") or {})
        return cls(**d)

    def _repr_html_(self) -> str:
        parts = [f"<h4>Compatibility verdict: {H.badge(self.verdict)}</h4><p>{H.esc(self.summary)}</p>"]
        if self.missing:
            parts.append(f"<p><b>Missing input:</b> {H.esc(', '.join(self.missing))}</p>")
        parts.append("<b>Reasons</b>" + H.ul(self.reasons))
        parts.append(
            "<b>Facts relied on</b>"
            + H.table(
                ["fact", "status", "source"], [[H.esc(f.text), H.esc(f.status), H.link(f.source)] for f in self.facts]
            )
        )
        parts.append(
            "<b>Evidence used</b>"
            + H.table(
                ["field", "value", "from"],
                [
                    [H.esc(k), H.esc(v), H.esc(self.inputs.sources.get(k) or self.inputs.derived.get(k) or "input")]
                    for k, v in self.evidence_used.items()
                ],
            )
        )
        if self.container_start:
            cs = self.container_start
            state = {True: "starts", False: "refused", None: "cannot tell"}[cs.will_start]
            parts.append(f"<b>Container start (NVIDIA_REQUIRE_CUDA):</b> {H.badge(state)} {H.esc(cs.message)}")
        if self.risks:
            parts.append(
                "<br><b>Beside the verdict</b>"
                + H.table(
                    ["severity", "kind", "what", "source"],
                    [
                        [
                            H.badge(r.severity),
                            H.esc(r.kind),
                            H.esc(r.text),
                            " ".join(H.link(f.source, f.status) for f in r.facts),
                        ]
                        for r in self.risks
                    ],
                )
            )
        if self.profile_demands:
            parts.append(
                f"<b>Profile {H.esc(self.profile)} demands</b>"
                + H.table(
                    ["demand", "status", "detail", "source"],
                    [
                        [H.esc(d.demand), H.badge(d.status), H.esc(d.text), H.link(d.source)]
                        for d in self.profile_demands
                    ],
                )
            )
        if self.log_checks:
            n = len(self.contradictions)
            parts.append(
                f"<b>Log findings vs verdict</b> ({n} contradiction{'s' if n != 1 else ''})"
                + H.table(
                    ["label", "relation", "why", "line", "text"],
                    [
                        [
                            H.esc(c.label),
                            H.badge(c.relation),
                            H.esc(c.why),
                            H.esc(c.line),
                            f"<code>{H.esc(c.text)}</code>",
                        ]
                        for c in self.log_checks
                    ],
                )
            )
        if self.routes:
            parts.append("<b>Next lines to investigate</b>" + H.ul(self.routes))
        return "\n".join(parts)


# --------------------------------------------------------------------------------------------------


def _fact(id_: str, text: str, source: str, status: str = "CONFIRMED") -> Fact:
    return Fact(id_, text, source, str(status))


def _arch_check(img: tuple[int, ...], cc: tuple[int, ...]) -> tuple[bool | None, list[str], list[Fact], list[Risk]]:
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
        f = _fact(
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
                _fact(
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
            f = _fact(
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


def _missing_fact(what: str) -> str:
    """Name a fact the data lacks, in `missing` (remediation tells how to add one)."""
    return f"fact: {what}"


def _driver_check(
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
            _fact(
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
                    [_fact("toolkit_driver_minimums.unconfirmed_newer", note, unc["source"], UNCONFIRMED)],
                )
            )
        if reported_cuda is not None:
            # Evidence from the driver itself: nvidia-smi / NVML report the driver's maximum CUDA version.
            native = cmp_version(reported_cuda[:2], img[:2]) >= 0
            am = facts.data["architecture_support"]["arch_matrix"]
            used.append(
                _fact(
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
        miss = [_missing_fact(f"minimum Linux driver for CUDA {vstr(img[:2])} (toolkit_driver_minimums)")]
        if reported_cuda is None:
            miss.append("driver_cuda_version")
            reasons.append(
                f"The data has no minimum driver for CUDA {vstr(img[:2])} and no CUDA {img[0]}.x "
                "minor-version entry, and the driver's own CUDA version is not in the evidence: "
                "cannot tell whether this driver runs the image."
            )
            return "unknown", reasons, used, miss, risks, {}
        if reported_cuda[0] == img[0]:
            miss.append(_missing_fact(f"CUDA {img[0]}.x minor-version compatibility floor"))
            reasons.append(
                f"The driver offers CUDA {vstr(reported_cuda[:2])}, same major as the image, but the data has "
                f"no CUDA {img[0]}.x minor-version entry: cannot tell whether minor-version compatibility applies."
            )
            return "unknown", reasons, used, miss, risks, {}
        pkg0 = inputs.compat_package_name or f"cuda-compat-{img[0]}-{img[1]}"
        if inputs.compat_libs is True and not facts.fc_has_row(pkg0):
            miss = [_missing_fact(f"forward-compatibility matrix row for {pkg0}")]
            reasons.append(
                f"Compat libraries are in use, but the forward-compatibility matrix has no row for "
                f"{pkg0}: cannot tell whether they rescue this host."
            )
            return "unknown", reasons, used, miss, risks, {}
    if mvc:
        floor = parse_version(mvc["min_driver_linux"])
        mvc_src = facts.data["minor_version_compatibility"]["source"]
        used.append(
            _fact(
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
                    [_fact("minor_version_compatibility.caveats", c["text"], c["source"]) for c in cav[:2]],
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
        used.append(_fact("forward_compatibility.not_applicable", fc["not_applicable"][0], fc["source"]))
    elif binfo and binfo.type == "NFB":
        supported = False
        why = f"R{branch} is a New Feature Branch, and New Feature Branches are not supported forward-compat targets"
        used.append(_fact("forward_compatibility.rules", fc["rules"][2], fc["rules_source"]))
        used.append(_fact("driver_branches", f"R{branch} type NFB", binfo.source, binfo.status))
    elif cell == "C":
        supported = True
        why = f"the forward-compatibility matrix marks {pkg} on r{branch} as compatible (C)"
        used.append(
            _fact(
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
            _fact("forward_compatibility.applicable_hardware", ", ".join(fc["applicable_hardware"]), fc["source"])
        )
    elif cell == "X":
        supported = False
        why = f"the forward-compatibility matrix marks {pkg} on r{branch} as not compatible (X)"
        used.append(
            _fact(
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
            used.append(_fact("forward_compatibility.rules", fc["rules"][1], fc["rules_source"]))
        older = facts.fc_older_cell(pkg, branch)
        if older == "C":
            risks.append(
                Risk(
                    "historic_forward_compat",
                    "info",
                    f"An older NVIDIA matrix (quoted secondhand) listed {pkg} on r{branch} as C; the "
                    "current matrix does not, so it is not a supported target.",
                    [
                        _fact(
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
class _DriverCuda:
    """The driver's own CUDA: one figure for the verdict and the container-start check alike."""

    version: tuple[int, ...] | None = None
    source: str = "unknown"  # where it came from, said in reasons
    from_evidence: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str | None:
        return vstr(self.version[:2]) if self.version else None


def _driver_cuda(inputs: CompatInputs, drv: tuple[int, ...] | None) -> _DriverCuda:
    """Evidence (NVML cuda_driver_version / nvidia-smi) first; else the toolkit table where it covers the branch."""
    out = _DriverCuda()
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


def _profile_demands(inputs: CompatInputs, img: tuple[int, ...] | None, drv: tuple[int, ...] | None) -> list[Demand]:
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


_FOUND = re.compile(r"found version (\d{4,6})")


def _log_checks(
    findings: list[dict[str, Any]],
    verdict: str,
    inputs: CompatInputs,
    img: tuple[int, ...] | None,
    cstart: RequireCheck | None,
) -> list[LogCheck]:
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
            if verdict in ("driver_too_old", "arch_unsupported"):
                rel, why = "contradicts", f"the server reached healthy but the verdict is {verdict}"
            elif ok:
                rel, why = "confirms", "the server reached healthy"
        elif label == "nvml_mismatch":
            why = "driver/library version mismatch (user-space vs kernel module, e.g. upgrade without reboot)"
        elif label in ("libcuda_missing", "no_gpu_visible"):
            why = "the container did not get the GPU/driver: container runtime line, not the CUDA version"
        out.append(LogCheck(label, rel, why, line, text))
    return out


def _routes(verdict: str, checks: list[LogCheck], demands: list[Demand]) -> list[str]:
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


def _resolve_cc(inputs: CompatInputs, reasons: list[str], used: list[Fact]) -> tuple[tuple[int, ...] | None, str]:
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
                _fact(
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
    cc, cc_why = _resolve_cc(inputs, reasons, used)
    binfo = facts.branch(drv[0]) if drv else None
    dcuda = _driver_cuda(inputs, drv)
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
        arch_ok, ar, af, arisk = _arch_check(img, cc)
        reasons += ar
        used += af
        risks += arisk
    drv_verdict: str | None = None
    fca: dict[str, Any] = {}
    if img is not None and drv is not None:
        drv_verdict, dr, df, dmiss, drisk, fca = _driver_check(
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

    if arch_ok is False:
        verdict = "arch_unsupported"
    elif img is None or drv is None:
        verdict = "unknown"
    elif drv_verdict == "driver_too_old":
        verdict = "driver_too_old"
    elif drv_verdict == "unknown":
        verdict = "unknown"
    elif cc is None:
        verdict = "unknown"
        missing.append("compute_capability")
        reasons.append(
            f"The driver side alone gives {drv_verdict}, but the GPU's compute capability is not known "
            f"({cc_why}), so architecture support is unchecked."
        )
    elif arch_ok is None:
        verdict = "unknown"
        missing.append(_missing_fact(f"architecture support in CUDA {img[0]}.x"))
        reasons.append(
            f"The driver side alone gives {drv_verdict}, but the data cannot say whether CUDA "
            f"{vstr(img[:2])} supports CC {vstr(cc)}."
        )
    else:
        verdict = drv_verdict or "unknown"

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
                        _fact("forward_compatibility.errors.803", err803["meaning"], err803["source"]),
                        _fact("forward_compatibility.rules", fc["rules"][0], fc["rules_source"]),
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
                [_fact("forward_compatibility.errors.804", err804["meaning"], err804["source"])],
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
                    [_fact("driver_branches", f"R{binfo.branch} NFB", binfo.source, binfo.status)],
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
                    [_fact("driver_branches", f"R{binfo.branch} EOL {binfo.eol}", binfo.source, binfo.status)],
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
                        _fact(
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
                [_fact("forward_compatibility.rules", fc["rules"][3], fc["rules_source"])],
            )
        )
    if inputs.derived:
        for k, v in inputs.derived.items():
            reasons.append(f"({k} {v})")

    try:
        demands = _profile_demands(inputs, img, drv)
    except KeyError as exc:
        demands = [Demand("profile", "unknown", str(exc))]
    checks = _log_checks(log_findings or [], verdict, inputs, img, cstart)
    routes = _routes(verdict, checks, demands)
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
        routes,
        inputs,
        today.isoformat(),
        fca,
    )


def _dedupe(facts: list[Fact]) -> list[Fact]:
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
