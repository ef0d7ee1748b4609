"""Evaluate an image's NVIDIA_REQUIRE_* constraints the way the NVIDIA Container Toolkit does.

Why: a cu130 image on an r575 host may be refused before vLLM runs at all ("requirement error:
unsatisfied condition: cuda>=13.0"), or admitted by a brand/driver clause that relies on the
image's compat libraries. Knowing which, before touching the node, separates "container will not
start" from "CUDA fails inside the container".

Syntax (container_toolkit.constraint_syntax in the data): spaces separate OR-ed terms, commas
separate AND-ed factors, each factor is PROPERTY OP VALUE with properties cuda, driver, arch, brand;
several NVIDIA_REQUIRE_* variables are AND-ed; NVIDIA_DISABLE_REQUIRE turns all checks off;
unknown properties are skipped. Versions compare numerically, brand as a lower-case string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_runbooks.records import Record

from .facts import Fact, cmp_version, load_facts, parse_driver_version, parse_version, vstr

_OPS = ("!=", "<=", ">=", "==", "=", "<", ">")
BRANDS_FOR_CLASS = {
    "datacenter": ("tesla", "nvidia"),
    "professional": ("quadro", "quadrortx", "nvidiartx", "nvidia"),
    "geforce": ("geforce", "geforcertx", "titan"),
}


@dataclass
class RequireCheck(Record):
    """Will the container runtime start this image on this host? None = cannot tell (see missing)."""

    SCHEMA = "require_check"
    will_start: bool | None
    expression: str | None
    disabled: bool = False
    legacy: bool = False
    satisfied_by: str | None = None
    unsatisfied: str | None = None
    properties: dict[str, str | None] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    message: str = ""
    facts: list[Fact] = field(default_factory=list)


def _split(expr: str) -> list[list[tuple[str, str, str]]]:
    terms = []
    for term in expr.split():
        factors = []
        for factor in term.split(","):
            factor = factor.strip()
            m = re.match(r"^([a-z_]+)(.*)$", factor)
            if not factor or not m:
                continue
            prop, rest = m.group(1), m.group(2)
            op = next((o for o in _OPS if rest.startswith(o)), None)
            if op is None:
                continue
            factors.append((prop, op, rest[len(op) :]))
        if factors:
            terms.append(factors)
    return terms


def _compare(prop: str, have: str, op: str, want: str) -> bool:
    if prop == "brand":
        a, b = have.lower(), want.lower()
        c = (a > b) - (a < b)
    else:
        va, vb = parse_version(have), parse_version(want)
        if va is None or vb is None:
            return False
        c = cmp_version(va, vb)
    return {"=": c == 0, "==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def _eval(terms: list[list[tuple[str, str, str]]], props: dict[str, str | None]) -> tuple[bool | None, str | None]:
    """Kleene OR-of-ANDs. Returns (result, satisfied term text)."""
    any_none = False
    for factors in terms:
        vals: list[bool | None] = []
        for prop, op, want in factors:
            if prop not in ("cuda", "driver", "arch", "brand"):
                continue  # the runtime skips unsupported properties
            have = props.get(prop)
            vals.append(None if have is None else _compare(prop, have, op, want))
        if not vals:
            continue
        if all(v is True for v in vals):
            return True, ",".join(f"{p}{o}{w}" for p, o, w in factors)
        if not any(v is False for v in vals):
            any_none = True
    return (None if any_none else False), None


def check_require(
    require_cuda: str | None,
    *,
    driver_version: str | None,
    driver_cuda_version: str | None,
    compute_capability: str | None = None,
    brand_raw: str | None = None,
    brand_class: str | None = None,
    disable_require: bool | None = None,
    image_cuda_version: str | None = None,
    extra_env: dict[str, str] | None = None,
    legacy: bool = False,
    derive_driver_cuda: bool = True,
    driver_cuda_note: str | None = None,
) -> RequireCheck:
    """Evaluate NVIDIA_REQUIRE_CUDA (+ NVIDIA_REQUIRE_DRIVER/ARCH/BRAND in extra_env) for this host.

    legacy=True: the image env is known to lack NVIDIA_REQUIRE_CUDA, so the runtime applies
    cuda>=<major.minor> of CUDA_VERSION. Otherwise an unknown expression gives will_start=None.
    derive_driver_cuda=False: the caller passes the one driver-CUDA figure it uses itself (the
    decision does), so none is derived here; driver_cuda_note says where that figure came from.
    """
    facts = load_facts()
    ct = facts.data["container_toolkit"]
    fact = Fact(
        "container_toolkit.constraint_syntax",
        "Spaces OR terms, commas AND factors (cuda, driver, arch, brand); NVIDIA_REQUIRE_* vars are "
        "AND-ed; NVIDIA_DISABLE_REQUIRE disables the checks",
        ct["source"],
        "CONFIRMED",
    )
    env = extra_env or {}
    if disable_require:
        return RequireCheck(
            True,
            require_cuda,
            disabled=True,
            facts=[fact],
            message="NVIDIA_DISABLE_REQUIRE is set: the runtime skips every NVIDIA_REQUIRE_* "
            "check, so the container starts even where CUDA will then fail inside it.",
        )
    exprs = [
        e
        for e in [require_cuda]
        + [env.get(k) for k in ("NVIDIA_REQUIRE_DRIVER", "NVIDIA_REQUIRE_ARCH", "NVIDIA_REQUIRE_BRAND")]
        if e
    ]
    v = parse_version(image_cuda_version)
    legacy = legacy and not exprs
    if legacy and v and len(v) >= 2:
        exprs = [f"cuda>={v[0]}.{v[1]}"]
    elif not exprs:
        hint = ""
        if v and len(v) >= 2:
            alt = check_require(
                None,
                driver_version=driver_version,
                driver_cuda_version=driver_cuda_version,
                compute_capability=compute_capability,
                brand_raw=brand_raw,
                brand_class=brand_class,
                image_cuda_version=image_cuda_version,
                legacy=True,
                derive_driver_cuda=derive_driver_cuda,
                driver_cuda_note=driver_cuda_note,
            )
            state = {True: "start", False: "be refused", None: "be undetermined"}[alt.will_start]
            hint = (
                f" If the image sets none, the legacy rule cuda>={v[0]}.{v[1]} applies and it would {state}; "
                "NVIDIA CUDA images normally set one with brand/driver clauses for older branches."
            )
        return RequireCheck(
            None,
            None,
            facts=[fact],
            missing=["nvidia_require_cuda"],
            message="The image's NVIDIA_REQUIRE_CUDA is not known, so whether the runtime admits "
            "the container cannot be told." + hint,
        )
    drv, drv_why = parse_driver_version(driver_version)
    notes = []
    if driver_version is not None and drv is None:
        notes.append(drv_why)
    props: dict[str, str | None] = {
        "driver": str(driver_version).strip() if drv else None,  # as published: zero padding kept
        "arch": compute_capability,
        "cuda": driver_cuda_version,
    }
    if props["cuda"] is not None and driver_cuda_note:
        notes.append(f"host CUDA {props['cuda']} {driver_cuda_note}; the runtime reads it from libcuda")
    if props["cuda"] is None and drv and derive_driver_cuda:
        got, row, why = facts.driver_cuda(drv)
        if got and row:
            props["cuda"] = vstr(got)
            notes.append(
                f"driver CUDA {props['cuda']} derived from driver {driver_version} via the toolkit "
                f"table ({why}); the runtime reads it from libcuda"
            )
        else:
            notes.append(f"host CUDA not derived: {why}")
    terms = [t for e in exprs for t in [_split(e)]]
    brands = [brand_raw.lower().replace(" ", "")] if brand_raw else list(BRANDS_FOR_CLASS.get(brand_class or "", ()))
    results = []
    for b in brands or [None]:
        p = dict(props, brand=b)
        per = [_eval(t, p) for t in terms]
        if any(r is False for r, _ in per):
            res: bool | None = False
        elif all(r is True for r, _ in per):
            res = True
        else:
            res = None
        results.append((res, next((s for r, s in per if s), None), b))
    outcomes = {r for r, _, _ in results}
    missing = [k for k, v in props.items() if v is None and any(f"{k}" in e for e in exprs)]
    if brand_raw is None and len(brands) > 1:
        notes.append(f"brand not reported; evaluated for {', '.join(brands)} (brands of class {brand_class})")
    if not brands and any("brand" in e for e in exprs):
        missing.append("brand")
    will: bool | None = outcomes.pop() if len(outcomes) == 1 else None
    sat = next((s for r, s, _ in results if r), None)
    first_cuda = next((f"{p}{o}{w}" for t in terms for fs in t for p, o, w in fs if p == "cuda"), None)
    shown = dict(props, brand=brand_raw.lower() if brand_raw else (brand_class and f"<{brand_class}>"))
    if will is True:
        msg = f"The runtime admits the container: satisfied by `{sat}`."
        if sat and "brand=" in sat:
            msg += (
                " That clause admits an older driver branch on the assumption that the image's cuda-compat "
                "libraries will be used (forward compatibility); CUDA can still fail inside the container."
            )
    elif will is False:
        cond = first_cuda or exprs[0].split()[0]
        msg = (
            f"The runtime refuses to start the container: requirement error: unsatisfied condition: {cond} "
            f"(host cuda={props['cuda']}, driver={driver_version}, brand={shown['brand']}). Set "
            "NVIDIA_DISABLE_REQUIRE=1 only to prove the point; it does not make CUDA work."
        )
    else:
        names = {"cuda": "host CUDA version (driver)", "driver": "driver version", "arch": "compute capability"}
        msg = "Cannot tell whether the runtime starts the container; missing " + ", ".join(
            names.get(m, m) for m in (missing or ["brand"])
        )
    if legacy:
        msg += " (No NVIDIA_REQUIRE_CUDA: legacy CUDA image, the runtime applies cuda>=<major.minor> of CUDA_VERSION.)"
    if notes:
        msg += " Note: " + "; ".join(notes) + "."
    return RequireCheck(
        will,
        " AND ".join(exprs),
        legacy=legacy,
        satisfied_by=sat,
        unsatisfied=None if will is not False else first_cuda,
        properties=shown,
        missing=missing if will is None else [],
        message=msg,
        facts=[fact],
    )
