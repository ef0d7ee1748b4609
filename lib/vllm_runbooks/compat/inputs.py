"""What the compatibility decision needs, and how it is read from evidence.json.

Why a typed record: runbook 02 may be fed by runbook 01's evidence, by CLI flags or by hand in an
incident; all three land in the same record, and each field remembers which evidence key it came
from so the verdict can say what it rested on.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vllm_runbooks.records import Record

from .facts import load_facts

if TYPE_CHECKING:
    from ..evidence.model import Evidence

BRAND_CLASSES = ("datacenter", "professional", "geforce")

# Raw NVML brand names -> brand class. Why here: evidence may carry the raw brand only.
_RAW_BRAND_CLASS = {
    "tesla": "datacenter",
    "nvidia": "datacenter",
    "grid": "datacenter",
    "quadro": "professional",
    "quadrortx": "professional",
    "nvidiartx": "professional",
    "nvidia_rtx": "professional",
    "nvs": "professional",
    "geforce": "geforce",
    "geforcertx": "geforce",
    "titan": "geforce",
    "titanrtx": "geforce",
}


@dataclass
class CompatInputs(Record):
    """Facts about one host + image + launch that the decision reads. None = not established."""

    SCHEMA = "compat_inputs"
    SCHEMA_VERSION = 1

    image_cuda_version: str | None = None
    driver_version: str | None = None
    driver_cuda_version: str | None = None  # the driver's own (max) CUDA, e.g. "12.9"
    gpu_name: str | None = None
    compute_capability: str | None = None
    brand_class: str | None = None  # datacenter | professional | geforce
    brand_raw: str | None = None  # NVML brand as reported (Tesla, NVIDIA, GeForce, ...)
    compat_libs: bool | None = None  # cuda-compat user-mode libs in use for the launch
    image_compat_package: str | None = None  # NV_CUDA_COMPAT_PACKAGE, e.g. cuda-compat-13-0
    nvidia_require_cuda: str | None = None
    nvidia_disable_require: bool | None = None
    gpu_count: int | None = None
    launch_argv: list[str] = field(default_factory=list)
    launch_env: dict[str, str] = field(default_factory=dict)
    rdma_devices: list[str] = field(default_factory=list)
    nvlink: str | None = None  # active | inactive | unknown
    mnnvl: bool | None = None
    nccl_env: dict[str, str] = field(default_factory=dict)
    model_profile: str = "generic_vllm"
    image_ref: str | None = None
    #: runbook 01's hardware verdict (verdict, xids, faulty findings) and start-up fit (status, failed
    #: checks): not compatibility inputs, but they decide what to do first (compat.hardware_route)
    hardware: dict[str, Any] = field(default_factory=dict)
    fit: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # field -> evidence key it came from
    derived: dict[str, str] = field(default_factory=dict)  # field -> how it was derived

    def __post_init__(self) -> None:
        self.fill_derived()

    def fill_derived(self) -> None:
        """Fill compute capability / brand class from the GPU name via the data, saying so."""
        if self.brand_class is None and self.brand_raw:
            cls = _RAW_BRAND_CLASS.get(self.brand_raw.strip().lower().replace(" ", ""))
            # NVML reports brand "NVIDIA" for data-center parts and some RTX boards; trust the name first.
            if cls and self.brand_raw.strip().lower() != "nvidia":
                self.brand_class = cls
                self.derived["brand_class"] = f"from NVML brand {self.brand_raw!r}"
        if self.gpu_name and (self.compute_capability is None or self.brand_class is None):
            info = load_facts().gpu(self.gpu_name)
            if info:
                if self.compute_capability is None:
                    self.compute_capability = info.compute_capability
                    self.derived["compute_capability"] = (
                        f"from GPU name {self.gpu_name!r} via data ({info.gpu}, {info.status}, {info.source})"
                    )
                if self.brand_class is None and info.brand_class:
                    self.brand_class = info.brand_class
                    self.derived["brand_class"] = f"from GPU name {self.gpu_name!r} (DERIVED product grouping)"
            elif self.brand_class is None and "geforce" in self.gpu_name.lower():
                self.brand_class = "geforce"
                self.derived["brand_class"] = "GPU name contains 'GeForce'"
        if self.brand_class is None and self.brand_raw and self.brand_raw.strip().lower() == "nvidia":
            self.brand_class = "datacenter"
            self.derived["brand_class"] = "from NVML brand 'NVIDIA' (used by data-center GPUs)"

    @property
    def compat_package_name(self) -> str | None:
        """cuda-compat-<major>-<minor> that matches the image (named after the toolkit it serves)."""
        if self.image_compat_package:
            return self.image_compat_package
        from .facts import parse_cuda_version

        v, _ = parse_cuda_version(self.image_cuda_version)
        if not v or len(v) < 2:
            return None
        return f"cuda-compat-{v[0]}-{v[1]}"


def _truthy(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in {"1", "true", "yes", "on"}


def compat_libs_from_env(env: dict[str, str]) -> bool | None:
    """Are the image's cuda-compat libs put on the loader path for this launch? None if no env seen."""
    if not env:
        return None
    if _truthy(env.get("VLLM_ENABLE_CUDA_COMPATIBILITY")):
        return True
    ld = env.get("LD_LIBRARY_PATH", "")
    return any(p.rstrip("/").endswith("/compat") for p in ld.split(":"))


def inputs_from_evidence(evidence: Evidence | Mapping[str, Any], model_profile: str | None = None) -> CompatInputs:
    """Read runbook 01's evidence (docs/EVIDENCE_SCHEMA.md) into CompatInputs; absent keys stay None.

    Takes the typed ``Evidence`` (as ``runs.load_result`` returns it); a plain evidence.json dict
    is read through ``Evidence.from_dict`` so there is one reading of the format.
    """
    from ..evidence.model import Evidence

    ev = evidence if isinstance(evidence, Evidence) else Evidence.from_dict(dict(evidence))
    src: dict[str, str] = {}
    nv = ev.established("nvidia")
    image = ev.established("image")
    launch = ev.established("launch")
    container = ev.established("container")
    inter = ev.established("interconnect")

    def take(value: Any, key: str, name: str) -> Any:
        if value not in (None, "", [], {}):
            src[name] = key
        return value

    gpus = nv.get("gpus") or []
    g0 = gpus[0] if gpus else {}
    image_cuda = take(image.get("cuda_version"), "image.cuda_version", "image_cuda_version")
    if image_cuda is None:
        env_cuda = (image.get("env") or {}).get("CUDA_VERSION")
        image_cuda = take(env_cuda, "image.env.CUDA_VERSION", "image_cuda_version")
    drv_cuda = nv.get("cuda_driver_version")
    if drv_cuda is None and isinstance(nv.get("cuda_driver_version_int"), int):
        from .facts import decode_cuda_int, vstr

        drv_cuda = vstr(decode_cuda_int(nv["cuda_driver_version_int"]))
        src["driver_cuda_version"] = "nvidia.cuda_driver_version_int"
    else:
        take(drv_cuda, "nvidia.cuda_driver_version", "driver_cuda_version")

    argv = launch.get("argv") or []
    if not argv and launch.get("command"):
        argv = shlex.split(str(launch["command"]))
        src["launch_argv"] = "launch.command"
    else:
        take(argv, "launch.argv", "launch_argv")
    if not argv and container.get("command"):
        argv = list(container.get("entrypoint") or []) + list(container["command"])
        src["launch_argv"] = "container.entrypoint+command"
    env: dict[str, str] = {}
    for key, d in (
        ("image.env", image.get("env")),
        ("container.env", container.get("env")),
        ("launch.env", launch.get("env")),
    ):
        if d:
            env.update({str(k): str(v) for k, v in d.items()})
            src["launch_env"] = key
    compat = compat_libs_from_env(env)
    if compat is not None:
        src["compat_libs"] = src.get("launch_env", "launch.env") + " (VLLM_ENABLE_CUDA_COMPATIBILITY / LD_LIBRARY_PATH)"

    disable = image.get("nvidia_disable_require")
    if disable is None and "NVIDIA_DISABLE_REQUIRE" in env:
        disable = _truthy(env["NVIDIA_DISABLE_REQUIRE"])
    require = image.get("nvidia_require_cuda") or (image.get("env") or {}).get("NVIDIA_REQUIRE_CUDA")
    ccs = {g.get("compute_capability") for g in gpus if g.get("compute_capability")}
    names = {g.get("name") for g in gpus if g.get("name")}
    inputs = CompatInputs(
        image_cuda_version=str(image_cuda) if image_cuda is not None else None,
        driver_version=take(nv.get("driver_version"), "nvidia.driver_version", "driver_version"),
        driver_cuda_version=str(drv_cuda) if drv_cuda is not None else None,
        gpu_name=take(g0.get("name"), "nvidia.gpus[0].name", "gpu_name"),
        compute_capability=take(
            g0.get("compute_capability"), "nvidia.gpus[0].compute_capability", "compute_capability"
        ),
        brand_class=take(g0.get("brand_class"), "nvidia.gpus[0].brand_class", "brand_class"),
        brand_raw=take(g0.get("brand"), "nvidia.gpus[0].brand", "brand_raw"),
        compat_libs=compat,
        image_compat_package=take(
            image.get("nv_cuda_compat_package") or (image.get("env") or {}).get("NV_CUDA_COMPAT_PACKAGE"),
            "image.nv_cuda_compat_package",
            "image_compat_package",
        ),
        nvidia_require_cuda=take(require, "image.nvidia_require_cuda", "nvidia_require_cuda"),
        nvidia_disable_require=take(disable, "image.nvidia_disable_require", "nvidia_disable_require"),
        gpu_count=take(len(gpus) if gpus else None, "nvidia.gpus", "gpu_count"),
        launch_argv=[str(a) for a in argv],
        launch_env=env,
        rdma_devices=list(take(inter.get("rdma_devices"), "interconnect.rdma_devices", "rdma_devices") or []),
        nvlink=take(inter.get("nvlink"), "interconnect.nvlink", "nvlink"),
        mnnvl=take(inter.get("mnnvl"), "interconnect.mnnvl", "mnnvl"),
        nccl_env=dict(take(inter.get("nccl_env"), "interconnect.nccl_env", "nccl_env") or {}),
        model_profile=model_profile or "generic_vllm",
        image_ref=take(image.get("ref"), "image.ref", "image_ref"),
        sources=src,
    )
    hw = ev.established("hardware")
    if hw.get("verdict"):
        inputs.hardware = {
            "verdict": hw["verdict"],
            "xids": list(hw.get("xids") or []),
            "faulty_gpus": list(hw.get("faulty_gpus") or []),
            "findings": [f for f in hw.get("findings") or [] if f.get("severity") in ("faulty", "degraded")][:40],
        }
        src["hardware"] = "hardware.verdict"
    fit = ev.established("fit")
    if fit.get("status"):
        inputs.fit = {
            "status": fit["status"],
            "failed": list(fit.get("failed") or [])[:16],
            "memory": [{k: m.get(k) for k in ("gpu", "status", "why", "others")} for m in fit.get("memory") or []][:64],
            "disk": {k: (fit.get("disk") or {}).get(k) for k in ("status", "why", "path")},
        }
        src["fit"] = "fit.status"
    if inputs.nvlink is None and any((g.get("nvlink_active_links") or 0) > 0 for g in gpus):
        inputs.nvlink = "active"
        src["nvlink"] = "nvidia.gpus[].nvlink_active_links"
    if len(ccs) > 1 or len(names) > 1:
        inputs.derived["gpus"] = f"mixed GPUs on host ({sorted(names)}); decision uses gpus[0]"
    if model_profile is None:
        from .profiles import guess_profile

        inputs.model_profile = guess_profile(inputs.launch_argv, inputs.image_ref)
        inputs.derived["model_profile"] = "guessed from the launch model id / image ref"
    return inputs


# -- the one override path ---------------------------------------------------------------------
#: Inputs a person may give on top of the evidence (runbook 02 parameters, ``check-compat`` flags).
OVERRIDABLE = (
    "image_cuda_version",
    "driver_version",
    "gpu_name",
    "compute_capability",
    "brand_class",
    "compat_libs",
    "nvidia_require_cuda",
    "gpu_count",
)
#: input → inputs read off the same source that an override of it makes stale. The driver's CUDA
#: belongs to the driver that reported it; compute capability and brand belong to the GPU named;
#: the compat package name belongs to the image.
DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "driver_version": ("driver_cuda_version",),
    "gpu_name": ("compute_capability", "brand_class", "brand_raw"),
    "image_cuda_version": ("image_compat_package",),
}
_AS_TEXT = ("image_cuda_version", "driver_version", "compute_capability")


def apply_overrides(inputs: CompatInputs, overrides: Mapping[str, Any], origin: str = "parameter") -> CompatInputs:
    """Put given values over ``inputs`` (in place), each with its origin; returns ``inputs``.

    Why one function: the CLI and runbook 02 once merged overrides their own ways and disagreed
    (a driver given by hand kept the evidence's driver CUDA, and the record stated a false
    reason). Here overriding a value drops every value derived from the old one unless that is
    given too (``DERIVED_FROM``), the dropped value says why, and derivations run again from the
    new value. ``overrides`` maps ``OVERRIDABLE`` field names to values; None or "" means "not
    given". ``origin`` names where values came from (``parameter``, ``cli``) in ``sources``.
    """
    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise TypeError(f"unknown decision inputs: {sorted(unknown)}; overridable: {', '.join(OVERRIDABLE)}")
    given = {k: v for k, v in overrides.items() if v is not None and v != ""}
    for name, value in given.items():
        old = getattr(inputs, name)
        new = str(value) if name in _AS_TEXT else value
        if old != new:
            for stale in DERIVED_FROM.get(name, ()):
                if stale in given or getattr(inputs, stale) is None:
                    continue
                setattr(inputs, stale, None)
                inputs.sources.pop(stale, None)
                inputs.derived[stale] = f"dropped: it belonged to {name} {old!r}, which was overridden"
        setattr(inputs, name, new)
        inputs.sources[name] = f"{origin} {name}"
        inputs.derived.pop(name, None)
    inputs.fill_derived()
    return inputs


def build_inputs(
    evidence: Evidence | None,
    overrides: Mapping[str, Any] | None = None,
    *,
    profile: str | None = None,
    origin: str = "parameter",
) -> CompatInputs:
    """Evidence (when there is one), then the overrides on top: what CLI and runbook 02 both call."""
    inputs = inputs_from_evidence(evidence, profile) if evidence is not None else CompatInputs()
    if evidence is None:
        inputs.model_profile = profile or "generic_vllm"
    return apply_overrides(inputs, overrides or {}, origin)
