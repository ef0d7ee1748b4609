"""Evidence collectors: a registry you can add to without touching the rest.

A collector is ``fn(ctx) -> Item``. It reads raw artefacts through ``ctx.read(name)`` (the same
call for a local machine and for a bundle), stores them with ``ctx.keep`` (logs with
``ctx.keep_log``), and returns a value or ``Item.unavailable(reason)``. ``run_collectors`` bounds
each one by a timeout and turns any exception into ``unavailable``, so one broken tool never stops
the capture; a collector abandoned at its timeout may run on, but its writes are refused.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import probe, redact
from ..probe import Captured, Options
from . import parsers as P
from .model import OK, PARTIAL, UNAVAILABLE, Item
from .sources import Source


class WriteRefused(RuntimeError):
    """A collector that was abandoned after its timeout tried to write under ``raw/``."""


class _Gate:
    """Whether the collector running in this thread may still write; closed when it is abandoned.

    ``run_bounded`` opens one per run and closes it on timeout; a gate opened inside another
    collector's thread (a nested ``run_bounded``) is closed with its parent too. Writes take the
    gate's lock, so once ``close`` returns no write from that collector is in flight or to come.
    """

    def __init__(self, what: str, parent: _Gate | None) -> None:
        self.what = what
        self.parent = parent
        # one lock per outermost collector, so closing it also waits for a nested run's write
        self.lock = parent.lock if parent else threading.RLock()
        self.closed = False
        self.refused = 0

    def is_closed(self) -> bool:
        gate: _Gate | None = self
        while gate is not None:
            if gate.closed:
                return True
            gate = gate.parent
        return False

    def close(self) -> None:
        with self.lock:
            self.closed = True


_THREAD = threading.local()


def _current_gate() -> _Gate | None:
    return getattr(_THREAD, "gate", None)


@dataclass
class Context:
    """What collectors share: the source, the parameters, the raw-artefact directory."""

    source: Source
    opts: Options
    out_dir: Path  # <run_dir>/evidence
    collector_timeout_s: float = 60.0
    launch_command: str | None = None  # redacted
    endpoint: str | None = None  # redacted
    results: dict[str, Item] = field(default_factory=dict)
    _cache: dict[str, Captured] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, name: str) -> Captured:
        """Raw artefact by bundle name, cached; stored under raw/ when it has content."""
        with self._lock:
            if name in self._cache:
                return self._cache[name]
        got = self.source.read(name)
        if got.data:
            self.keep(name, got.data)
        with self._lock:
            self._cache[name] = got
        return got

    def text(self, name: str) -> str | None:
        got = self.read(name)
        return got.data.decode("utf-8", "replace") if got.data is not None else None

    def keep(self, name: str, data: bytes) -> str:
        """Write an (already redacted) artefact under raw/ and return its relative path.

        Raises ``WriteRefused`` in a collector that was abandoned after its timeout: the
        capture has moved on (and may have hashed raw/ already), so nothing may land there.
        """
        rel = f"raw/{name}"
        dest = self.out_dir / rel
        with _write_permit(rel):
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return rel

    def keep_log(self, rel: str, stream: IO[bytes], max_seconds: float | None = None) -> dict[str, Any]:
        """Copy a log through redaction (``probe.store_log``) to ``rel`` under the evidence dir.

        The copy is made in an unnamed file (``O_TMPFILE``) and given its name only while the
        collector may still write, so neither an abandoned collector nor a killed run (SIGTERM,
        SIGKILL) leaves a partial log or a temporary file anywhere. ``max_seconds`` bounds this log.
        """
        dest = self.out_dir / rel
        with _write_permit(rel):
            dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(dest.parent, os.O_TMPFILE | os.O_RDWR, 0o644)
        except (AttributeError, OSError):
            fd = None  # no O_TMPFILE here: a named temporary file beside the destination
        if fd is not None:
            with os.fdopen(fd, "w+b") as handle:
                summary = probe.store_log(stream, handle, max_seconds=max_seconds)
                handle.flush()
                with _write_permit(rel):
                    _link_unnamed(handle, dest)
            return summary
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            summary = probe.store_log(stream, tmp, max_seconds=max_seconds)
            with _write_permit(rel):
                tmp.replace(dest)
            return summary
        finally:
            tmp.unlink(missing_ok=True)

    def artefact(self, name: str) -> list[str]:
        got = self._cache.get(name)
        return [f"raw/{name}"] if got is not None and got.data else []


def _link_unnamed(handle: IO[bytes], dest: Path) -> None:
    """Give an ``O_TMPFILE`` file its name; where linking it is not allowed, copy it instead."""
    root = os.open("/", os.O_RDONLY)
    try:  # linkat(AT_SYMLINK_FOLLOW) on the /proc magic link; os.link uses it only with a dir fd
        os.link(f"/proc/self/fd/{handle.fileno()}", dest, src_dir_fd=root, follow_symlinks=True)
        return
    except OSError:
        pass
    finally:
        os.close(root)
    handle.seek(0)
    with open(dest, "xb") as out:
        shutil.copyfileobj(handle, out)


@contextlib.contextmanager
def _write_permit(rel: str) -> Iterator[None]:
    """Hold the current collector's gate open for one write, or refuse the write."""
    gate = _current_gate()
    if gate is None:  # not inside a collector (the writer itself): always allowed
        yield
        return
    with gate.lock:
        if gate.is_closed():
            gate.refused += 1
            raise WriteRefused(f"{gate.what} timed out earlier; write to {rel} refused")
        yield


CollectorFn = Callable[[Context], Item]


@dataclass
class Collector:
    name: str
    title: str
    fn: CollectorFn
    applies: Callable[[Context], bool] = lambda ctx: True


COLLECTORS: dict[str, Collector] = {}


def register(
    name: str, title: str, applies: Callable[[Context], bool] | None = None
) -> Callable[[CollectorFn], CollectorFn]:
    """Add a collector; the order of registration is the order of collection and display."""

    def deco(fn: CollectorFn) -> CollectorFn:
        COLLECTORS[name] = Collector(name, title, fn, applies or (lambda ctx: True))
        return fn

    return deco


def run_bounded(fn: Callable[[], Item], timeout_s: float, what: str) -> Item:
    """Run ``fn`` in a daemon thread; past ``timeout_s`` it is abandoned and recorded unavailable.

    An abandoned run cannot be stopped, but it can no longer write: its gate is closed, and
    ``Context.keep`` / ``Context.keep_log`` refuse (``WriteRefused``) from then on.
    """
    box: dict[str, Any] = {}
    gate = _Gate(what, _current_gate())

    def target() -> None:
        _THREAD.gate = gate
        try:
            box["item"] = fn()
        except Exception as e:  # a collector must never raise to its caller
            box["item"] = Item.unavailable(f"{what} failed: {type(e).__name__}: {redact.redact_text(str(e))}")

    t0 = time.monotonic()
    th = threading.Thread(target=target, name=f"collector-{what}", daemon=True)
    th.start()
    th.join(timeout_s)
    if th.is_alive():
        gate.close()
        item = Item.unavailable(
            f"{what} timed out after {timeout_s:g}s; abandoned, and its later writes to raw/ are refused"
        )
    else:
        item = box.get("item") or Item.unavailable(f"{what} returned nothing")
    if not isinstance(item, Item):
        item = Item.unavailable(f"{what} returned {type(item).__name__}, not an Item")
    item.duration_s = round(time.monotonic() - t0, 3)
    return item


def run_collectors(ctx: Context, only: list[str] | None = None) -> dict[str, Item]:
    for name, col in COLLECTORS.items():
        if only is not None and name not in only:
            continue
        try:
            if not col.applies(ctx):
                continue
        except Exception:  # noqa: S112 - a broken predicate just means "run it"
            pass
        item = run_bounded(lambda col=col: col.fn(ctx), ctx.collector_timeout_s, name)
        ctx.results[name] = item
        _report_progress(name, item)
    return ctx.results


def _report_progress(name: str, item: Item) -> None:
    """One line per collector: the CLI streams the kernel's output, so on-call sees it live."""
    duration = getattr(item, "duration_s", None)
    took = f" ({duration:.1f} s)" if isinstance(duration, int | float) else ""
    reason = f" — {item.reason}" if item.reason and item.status != OK else ""
    print(f"[evidence] {name}: {item.status}{took}{reason}"[:300], flush=True)


def _grouped_reasons(parts: dict[str, Captured]) -> list[str]:
    """One line per distinct reason: 'a, b: nvidia-smi not found on PATH'."""
    by_reason: dict[str, list[str]] = {}
    for k, v in parts.items():
        if v.status != OK and v.reason:
            by_reason.setdefault(v.reason, []).append(k)
    return [f"{', '.join(ks)}: {r}" for r, ks in by_reason.items()]


def _combine(parts: dict[str, Captured]) -> str:
    return "; ".join(_grouped_reasons(parts))


# ================================================================================== host
@register("host", "Host")
def collect_host(ctx: Context) -> Item:
    names = ["os-release", "uname.txt", "proc-meminfo.txt", "proc-uptime.txt", "nproc.txt"]
    got = {n: ctx.read(n) for n in names}
    val: dict[str, Any] = {
        "os_release": None,
        "kernel": None,
        "hostname": None,
        "cpus": None,
        "memory_bytes": None,
        "uptime_s": None,
    }
    problems: list[str] = []
    if got["os-release"].data:
        try:
            val["os_release"] = P.parse_os_release(got["os-release"].data.decode("utf-8", "replace"))
            val["os"] = val["os_release"].get("PRETTY_NAME")
        except P.ParseError as e:
            problems.append(f"os-release: {e}")
    if got["uname.txt"].data:
        try:
            u = P.parse_uname(got["uname.txt"].data.decode("utf-8", "replace"))
            val.update(kernel=u["kernel"], hostname=u["hostname"], machine=u["machine"])
        except P.ParseError as e:
            problems.append(f"uname: {e}")
    if got["proc-meminfo.txt"].data:
        val["memory_bytes"] = P.parse_meminfo(got["proc-meminfo.txt"].data.decode("utf-8", "replace"))
    if got["proc-uptime.txt"].data:
        val["uptime_s"] = P.parse_uptime(got["proc-uptime.txt"].data.decode("utf-8", "replace"))
    if got["nproc.txt"].data:
        n = got["nproc.txt"].data.decode("utf-8", "replace").strip()
        val["cpus"] = int(n) if n.isdigit() else None
    arts = [a for n in names for a in ctx.artefact(n)]
    missing = _combine(got)
    reason = "; ".join(x for x in [missing, *problems] if x) or None
    if not any(val[k] for k in ("os_release", "kernel", "memory_bytes", "cpus")):
        return Item.unavailable(reason or "no host facts", val, arts)
    return Item(
        OK if all(val[k] is not None for k in ("os_release", "kernel", "cpus", "memory_bytes")) else PARTIAL,
        reason,
        val,
        arts,
    )


# ================================================================================== nvidia
ARCH_NAMES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}
BRAND_NAMES = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NVIDIA vApps",
    8: "NVIDIA VPC",
    9: "NVIDIA VCS",
    10: "NVIDIA VWS",
    11: "NVIDIA Cloud Gaming",
    12: "Quadro RTX",
    13: "NVIDIA RTX",
    14: "NVIDIA",
    15: "GeForce RTX",
    16: "Titan RTX",
}
ANCESTOR = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def _s(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def nvml_facts(timeout_s: float = 15.0) -> Item:
    """Driver, CUDA and per-GPU facts through NVML (``pynvml``), bounded by a timeout."""
    return run_bounded(_nvml_facts, timeout_s, "NVML")


def _nvml_facts() -> Item:
    try:
        n = importlib.import_module("pynvml")
    except ImportError as e:
        return Item.unavailable(f"pynvml (nvidia-ml-py) not installed: {e}")
    try:
        n.nvmlInit()
    except Exception as e:
        return Item.unavailable(f"NVML init failed: {type(e).__name__}: {e}")
    try:
        return _nvml_read(n)
    finally:
        try:
            n.nvmlShutdown()
        except Exception:  # noqa: S110
            pass


def _try(fn: Callable[..., Any], *a: Any) -> Any:
    try:
        return fn(*a)
    except Exception:
        return None


def _nvml_read(n: Any) -> Item:
    drv = _s(n.nvmlSystemGetDriverVersion())
    cuda_int = _try(n.nvmlSystemGetCudaDriverVersion_v2) or _try(n.nvmlSystemGetCudaDriverVersion)
    count = n.nvmlDeviceGetCount()
    handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    max_links = getattr(n, "NVML_NVLINK_MAX_LINKS", 18)
    gpus = []
    for i, h in enumerate(handles):
        cc = _try(n.nvmlDeviceGetCudaComputeCapability, h)
        mem = _try(n.nvmlDeviceGetMemoryInfo, h)
        brand = _try(n.nvmlDeviceGetBrand, h)
        arch = _try(n.nvmlDeviceGetArchitecture, h)
        pci = _try(n.nvmlDeviceGetPciInfo, h)
        mig = _try(n.nvmlDeviceGetMigMode, h)
        active = 0
        link_seen = False
        for link in range(max_links):
            try:
                state = n.nvmlDeviceGetNvLinkState(h, link)
            except Exception as e:
                # NOT_SUPPORTED on link 0 means no NVLink at all; other errors end the link list
                link_seen = link_seen or "not supported" in str(e).lower().replace("_", " ")
                break
            link_seen = True
            active += 1 if state else 0
        ecc = _try(
            n.nvmlDeviceGetTotalEccErrors,
            h,
            getattr(n, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1),
            getattr(n, "NVML_VOLATILE_ECC", 0),
        )
        pers = _try(n.nvmlDeviceGetPersistenceMode, h)
        brand_name = BRAND_NAMES.get(brand) if isinstance(brand, int) else None
        gpus.append(
            {
                "index": i,
                "name": _s(_try(n.nvmlDeviceGetName, h)),
                "uuid": _s(_try(n.nvmlDeviceGetUUID, h)),
                "pci_bus_id": _s(getattr(pci, "busId", None)) if pci is not None else None,
                "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                "brand": brand_name,
                "brand_class": P.brand_class(brand_name),
                "architecture": ARCH_NAMES.get(arch) if isinstance(arch, int) else None,
                "memory_total_mib": int(mem.total // 1048576) if mem is not None else None,
                "memory_used_mib": int(mem.used // 1048576) if mem is not None else None,
                "persistence_mode": None if pers is None else ("Enabled" if pers else "Disabled"),
                "mig_mode": None if not mig else ("Enabled" if mig[0] else "Disabled"),
                "ecc_errors_uncorrected": ecc,
                "nvlink_active_links": active if link_seen else None,
            }
        )
    topo = None
    if count > 1:
        labels = [f"GPU{i}" for i in range(count)]
        matrix = []
        nvl_idx = getattr(n, "NVML_P2P_CAPS_INDEX_NVLINK", 2)
        for i, hi in enumerate(handles):
            row = []
            for j, hj in enumerate(handles):
                if i == j:
                    row.append("X")
                    continue
                p2p = _try(n.nvmlDeviceGetP2PStatus, hi, hj, nvl_idx)
                links = gpus[i]["nvlink_active_links"]
                if p2p == getattr(n, "NVML_P2P_STATUS_OK", 0) and links:
                    row.append(f"NV{links}")
                else:
                    row.append(ANCESTOR.get(_try(n.nvmlDeviceGetTopologyCommonAncestor, hi, hj), "?"))
            matrix.append(row)
        topo = {"gpus": labels, "matrix": matrix, "source": "nvml"}
    return Item.ok(
        {
            "driver_version": drv,
            "driver_branch": P.driver_branch(drv),
            "cuda_driver_version_int": cuda_int,
            "cuda_driver_version": P.cuda_int_to_str(cuda_int),
            "gpus": gpus,
            "topology": topo,
            "source": "nvml",
        }
    )


def _nvidia_applies_nvml(ctx: Context) -> bool:
    return ctx.source.kind == "local"


@register("nvidia", "GPUs, driver and CUDA")
def collect_nvidia(ctx: Context) -> Item:
    notes: list[str] = []
    val: dict[str, Any] | None = None
    if _nvidia_applies_nvml(ctx):
        nv = nvml_facts(min(15.0, ctx.collector_timeout_s / 2))
        if nv.status == OK:
            val = nv.value
        else:
            notes.append(f"NVML: {nv.reason}")
    raw = {
        n: ctx.read(n)
        for n in (
            "nvidia-smi-q.xml",
            "nvidia-smi.txt",
            "nvidia-smi-query.csv",
            "nvidia-smi-topo.txt",
            "nvidia-smi-nvlink.txt",
            "proc-driver-nvidia-version.txt",
        )
    }
    txt = {k: (v.data.decode("utf-8", "replace") if v.data else None) for k, v in raw.items()}
    if val is None and txt["nvidia-smi-q.xml"]:
        try:
            x = P.parse_nvidia_smi_xml(txt["nvidia-smi-q.xml"])
            val = {**x, "source": "nvidia-smi-xml"}
        except P.ParseError as e:
            notes.append(f"nvidia-smi -q -x: {e}")
    if val is None and txt["nvidia-smi.txt"]:
        try:
            val = {**P.parse_nvidia_smi_text(txt["nvidia-smi.txt"]), "source": "nvidia-smi-text"}
        except P.ParseError as e:
            notes.append(f"nvidia-smi: {e}")
    notes.extend(_grouped_reasons({k: v for k, v in raw.items() if k != "nvidia-smi-nvlink.txt"}))
    kernel_module = txt["proc-driver-nvidia-version.txt"]
    arts = [a for n in raw for a in ctx.artefact(n)]
    if val is None:
        if kernel_module:
            return Item.partial(
                {"kernel_module": kernel_module.strip(), "gpus": []},
                "kernel module loaded but no GPU facts: " + "; ".join(notes),
                arts,
            )
        return Item.unavailable("; ".join(notes) or "no NVIDIA facts", {"gpus": []}, arts)

    # fill what the primary source lacks from the others
    drv = val.get("driver_version")
    val["driver_branch"] = P.driver_branch(drv)
    if val.get("cuda_driver_version_int") is None:
        val["cuda_driver_version_int"] = P.cuda_str_to_int(val.get("cuda_driver_version"))
    if val.get("cuda_driver_version") is None and txt["nvidia-smi.txt"]:
        try:
            t = P.parse_nvidia_smi_text(txt["nvidia-smi.txt"])
            val["cuda_driver_version"] = t["cuda_driver_version"]
            val["cuda_driver_version_int"] = P.cuda_str_to_int(t["cuda_driver_version"])
        except P.ParseError:
            pass
    val["kernel_module"] = kernel_module.strip() if kernel_module else None
    if kernel_module:
        try:
            km = P.parse_proc_driver_version(kernel_module)
            val["kernel_module_version"] = km["kernel_module_version"]
            if drv and km["kernel_module_version"] != drv:
                notes.append(f"kernel module {km['kernel_module_version']} differs from user-space driver {drv}")
        except P.ParseError as e:
            notes.append(str(e))
    gpus: list[dict[str, Any]] = val.get("gpus") or []
    if txt["nvidia-smi-query.csv"]:
        try:
            rows = P.parse_nvidia_smi_query_csv(txt["nvidia-smi-query.csv"])
            by_bus = {r.get("pci.bus_id", "").upper(): r for r in rows}
            for g in gpus:
                r = by_bus.get((g.get("pci_bus_id") or "").upper()) or (
                    rows[g["index"]] if g["index"] < len(rows) else None
                )
                if r and not g.get("compute_capability"):
                    g["compute_capability"] = P._na(r.get("compute_cap"))
        except P.ParseError as e:
            notes.append(f"nvidia-smi --query-gpu: {e}")
    if txt["nvidia-smi-topo.txt"]:
        try:
            topo = P.parse_topo(txt["nvidia-smi-topo.txt"])
            val["topology"] = {**topo, "source": "nvidia-smi topo -m"}
            for g, nl in zip(gpus, P.nvlink_counts_from_topo(topo), strict=False):
                if g.get("nvlink_active_links") is None and nl is not None:
                    g["nvlink_active_links"] = nl
        except P.ParseError as e:
            notes.append(f"topo -m: {e}")
    if txt["nvidia-smi-nvlink.txt"]:
        for idx, st in P.parse_nvlink_status(txt["nvidia-smi-nvlink.txt"]).items():
            if idx < len(gpus):
                gpus[idx]["nvlink_active_links"] = st["active"]
    val.setdefault("topology", None)
    missing = [k for k in ("driver_version", "cuda_driver_version") if not val.get(k)]
    if not gpus:
        missing.append("gpus")
    if any(g.get("compute_capability") is None for g in gpus):
        missing.append("compute_capability")
    status = OK if not missing else PARTIAL
    reason_bits = ([f"not established: {', '.join(missing)}"] if missing else []) + notes
    return Item(status, "; ".join(reason_bits) or None, val, arts)


# ================================================================================== runtime
@register("container_runtime", "Container runtime and NVIDIA Container Toolkit")
def collect_runtime(ctx: Context) -> Item:
    names = [
        "docker-version.json",
        "docker-info.json",
        "nvidia-ctk-version.txt",
        "nvidia-container-cli-version.txt",
        "nvidia-container-toolkit-config.toml",
    ]
    got = {n: ctx.read(n) for n in names}
    t = {k: (v.data.decode("utf-8", "replace") if v.data else None) for k, v in got.items()}
    val: dict[str, Any] = {
        "docker_version": None,
        "docker_client_version": None,
        "runtimes": [],
        "default_runtime": None,
        "nvidia_ctk_version": None,
        "nvidia_container_cli_version": None,
        "toolkit_config": None,
    }
    notes = []
    if t["docker-version.json"]:
        try:
            dv = P.parse_docker_version(t["docker-version.json"])
            val["docker_version"] = dv["server_version"]
            val["docker_client_version"] = dv["client_version"]
        except P.ParseError as e:
            notes.append(str(e))
    if t["docker-info.json"] and got["docker-info.json"].status == OK:
        try:
            di = P.parse_docker_info(t["docker-info.json"])
            val["runtimes"] = di["runtimes"]
            val["default_runtime"] = di["default_runtime"]
            val["docker_version"] = val["docker_version"] or di["server_version"]
        except P.ParseError as e:
            notes.append(str(e))
    if t["nvidia-ctk-version.txt"]:
        val["nvidia_ctk_version"] = P.parse_tool_version(t["nvidia-ctk-version.txt"])
    if t["nvidia-container-cli-version.txt"]:
        val["nvidia_container_cli_version"] = P.parse_tool_version(t["nvidia-container-cli-version.txt"])
    val["toolkit_config"] = t["nvidia-container-toolkit-config.toml"]
    if val["toolkit_config"]:
        m = re.search(r"^\s*mode\s*=\s*\"?(\w+)", val["toolkit_config"], re.M)
        val["toolkit_mode"] = m.group(1) if m else None
    reason = "; ".join(x for x in [_combine(got), *notes] if x) or None
    arts = [a for n in names for a in ctx.artefact(n)]
    key = [val["docker_version"], val["nvidia_ctk_version"] or val["nvidia_container_cli_version"]]
    if not any(key) and not val["docker_client_version"]:
        return Item.unavailable(reason or "no container runtime facts", val, arts)
    return Item(OK if all(key) and val["runtimes"] else PARTIAL, reason, val, arts)


def _inspect(
    ctx: Context, name: str, parse: Callable[[str], dict[str, Any]]
) -> tuple[Any, dict[str, Any], Item | None]:
    """Read and parse a `docker inspect` artefact; the third value is the Item to return on failure."""
    got = ctx.read(name)
    if not got.data:
        return got, {}, Item.unavailable(got.reason or f"no {name.removesuffix('.json')}")
    try:
        return got, parse(got.data.decode("utf-8", "replace")), None
    except P.ParseError as e:
        return got, {}, Item.unavailable(str(e), artefacts=ctx.artefact(name))


# ================================================================================== image
@register("image", "Image")
def collect_image(ctx: Context) -> Item:
    got, val, failed = _inspect(ctx, "image-inspect.json", P.parse_image_inspect)
    if failed:
        return failed
    val["env"] = redact.redact_env(val["env"])
    if not val["ref"] and ctx.opts.image:
        val["ref"] = ctx.opts.image
    missing = [k for k in ("cuda_version", "nvidia_require_cuda") if not val.get(k)]
    reason = f"image env has no {', '.join(k.upper() for k in missing)}" if missing else got.reason
    return Item(PARTIAL if missing or got.status != OK else OK, reason, val, ctx.artefact("image-inspect.json"))


# ================================================================================== container
@register("container", "Container")
def collect_container(ctx: Context) -> Item:
    got, val, failed = _inspect(ctx, "container-inspect.json", P.parse_container_inspect)
    if failed:
        return failed
    val["env"] = redact.redact_env(val["env"])
    val["command"] = redact.redact_argv(val["command"])
    val["args"] = redact.redact_argv(val["args"])
    return Item(OK if got.status == OK else PARTIAL, got.reason, val, ctx.artefact("container-inspect.json"))


# ================================================================================== logs
#: Seconds one log may take to store, and how many logs one capture stores.
LOG_SECONDS = 20.0
MAX_LOGS = 64


@register("logs", "Logs")
def collect_logs(ctx: Context) -> Item:
    logs = ctx.source.logs()
    if not logs:
        why = "no log paths given and no container" if ctx.source.kind == "local" else "no logs in bundle"
        return Item.unavailable(why, {"files": []})
    files, problems, arts = [], [], []
    used: set[str] = set()
    if len(logs) > MAX_LOGS:
        problems.append(f"{len(logs)} logs: only the first {MAX_LOGS} are stored")
        logs = logs[:MAX_LOGS]
    # Each log has its own time bound, so one huge log cannot use up the whole collector's.
    per_log_s = max(1.0, min(LOG_SECONDS, 0.8 * ctx.collector_timeout_s / max(1, len(logs))))
    for name, opener in logs:
        stored = probe.safe_log_name(name)
        while stored in used:
            stored = "_" + stored
        used.add(stored)
        rel = f"raw/logs/{stored}"
        try:
            with opener() as stream:
                summary = ctx.keep_log(rel, stream, max_seconds=per_log_s)
        except (OSError, EOFError, ValueError) as e:
            problems.append(f"{redact.redact_text(name)}: {redact.redact_text(str(e))}")
            continue
        arts.append(rel)
        files.append({"name": redact.redact_text(Path(name).name), "stored_as": rel, **summary})
    if not files:
        return Item.unavailable("; ".join(problems), {"files": []})
    notes = problems + [
        f"{f['name']}: stored head and tail only ({f['omitted_lines']} lines omitted"
        + (f", {f['stopped']}" if f.get("stopped") else "")
        + ")"
        for f in files
        if f["truncated"]
    ]
    return Item(PARTIAL if problems else OK, "; ".join(notes) or None, {"files": files}, arts)


# ================================================================================== vllm
@register("vllm", "vLLM version")
def collect_vllm(ctx: Context) -> Item:
    sources: dict[str, Any] = {"image": None, "log": None, "endpoint": None, "collect_env": None}
    commit = None
    img = ctx.results.get("image")
    if img and img.value:
        env = img.value.get("env") or {}
        labels = img.value.get("labels") or {}
        tag = re.search(r":v?(\d+\.\d+\.\d+[\w.+]*?)(?:-cu\d+|-ubuntu\d+|-aarch64)*$", img.value.get("ref") or "")
        sources["image"] = env.get("VLLM_VERSION") or labels.get("vllm.version") or (tag.group(1) if tag else None)
        commit = labels.get("vllm.commit")
    logs = ctx.results.get("logs")
    for f in (logs.value.get("files") if logs else None) or []:
        p = ctx.out_dir / f["stored_as"]
        with open(p, encoding="utf-8", errors="replace") as fh:
            head = "".join(line for _, line in zip(range(5000), fh, strict=False))
        v = P.vllm_version_from_log(head)
        if v:
            sources["log"] = v
            break
    ce = ctx.read("collect_env.txt")
    if ce.data:
        try:
            c = P.parse_collect_env(ce.data.decode("utf-8", "replace"))
            sources["collect_env"] = c["vllm_version"]
            commit = commit or c["vllm_commit"]
        except P.ParseError:
            pass
    ep = ctx.read("vllm-version.json")
    if ep.data:
        import json

        try:
            sources["endpoint"] = json.loads(ep.data).get("version")
        except (ValueError, AttributeError):
            pass
    order = ["endpoint", "log", "collect_env", "image"]
    version = next((sources[k] for k in order if sources[k]), None)
    commit = commit or next((P.commit_from_version(sources[k]) for k in order if sources[k]), None)
    arts = ctx.artefact("collect_env.txt") + ctx.artefact("vllm-version.json")
    distinct = {P.commit_from_version(v) or v for v in sources.values() if v}
    if version is None:
        why = "no version in image env/labels, logs, collect_env or endpoint"
        if ep.reason and ctx.endpoint:
            why += f"; endpoint: {ep.reason}"
        return Item.unavailable(why, {"version": None, "commit": None, "sources": sources}, arts)
    reason = f"sources disagree: {sources}" if len(distinct) > 1 else None
    return Item(PARTIAL if reason else OK, reason, {"version": version, "commit": commit, "sources": sources}, arts)


# ================================================================================== launch
@register("launch", "Launch command and environment")
def collect_launch(ctx: Context) -> Item:
    argv: list[str] | None = None
    origin = None
    env: dict[str, str] = {}
    cont = ctx.results.get("container")
    if ctx.launch_command:
        argv, origin = P.split_command(ctx.launch_command), "parameter"
    elif cont and cont.value.get("command") is not None and cont.status != UNAVAILABLE:
        argv = list(cont.value.get("entrypoint") or []) + list(cont.value.get("command") or [])
        origin = "container"
    else:
        got = ctx.read("launch-command.txt")
        if got.data:
            argv = P.split_command(got.data.decode("utf-8", "replace"))
            if ctx.source.kind == "bundle":
                origin = "bundle"
            else:  # local: the probe read a process, the one given by pid or the vLLM it found running
                origin = "process" if ctx.opts.pid else "process (auto-detected)"
    if cont and cont.value.get("env"):
        env = dict(cont.value["env"])
    e = ctx.read("env.txt")
    env_origin = None
    if e.data:
        dump = P.parse_env_dump(e.data.decode("utf-8", "replace"))
        env_origin = "env.txt"
        for k, v in dump.items():
            env.setdefault(k, v)
    if argv is not None:
        # env assignments before the program (HF_TOKEN=… vllm serve …) belong to the environment
        while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            k, _, v = argv.pop(0).partition("=")
            env.setdefault(k, v)
        if argv and argv[0] == "env":
            argv.pop(0)
    env = redact.redact_env(env)
    argv = redact.redact_argv(argv) if argv is not None else None
    val = {
        "argv": argv,
        "command": " ".join(_q(a) for a in argv) if argv else None,
        "env": env,
        "origin": origin,
        "env_origin": env_origin or ("container" if cont and cont.value.get("env") else None),
        "flags": _flags(argv or []),
    }
    arts = ctx.artefact("launch-command.txt") + ctx.artefact("env.txt")
    if argv is None:
        return Item(
            PARTIAL if env else UNAVAILABLE,
            "no launch command: give launch_command, a container, or a bundle launch-command.txt",
            val,
            arts,
        )
    return Item.ok(val, arts)


def _q(a: str) -> str:
    import shlex

    return a if re.fullmatch(r"[\w@%+=:,./<>-]+", a) else shlex.quote(a)


def _flags(argv: list[str]) -> dict[str, Any]:
    """``--tensor-parallel-size 8`` / ``-tp 8`` / ``--x=y`` / bare ``--flag`` → {name: value|True}."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and len(a) > 1 and not re.match(r"^-\d", a):
            name, eq, v = a.lstrip("-").partition("=")
            if eq:
                out[name] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                out[name] = argv[i + 1]
                i += 1
            else:
                out[name] = True
        i += 1
    return out


# ================================================================================== interconnect
@register("interconnect", "Interconnect")
def collect_interconnect(ctx: Context) -> Item:
    env: dict[str, str] = {}
    for src in ("launch", "container"):
        it = ctx.results.get(src)
        if it and it.value.get("env"):
            env.update({k: v for k, v in it.value["env"].items() if k not in env})
    nccl = {k: v for k, v in sorted(env.items()) if re.match(r"^(NCCL_|GLOO_|UCX_|NVSHMEM_)", k)}
    rd = ctx.read("rdma-devices.txt")
    rdma = [x for x in (rd.data or b"").decode("utf-8", "replace").split() if x] if rd.status == OK else None
    nv = ctx.results.get("nvidia")
    gpus = (nv.value.get("gpus") if nv else None) or []
    links = [g.get("nvlink_active_links") for g in gpus]
    if not gpus or all(x is None for x in links):
        nvlink = "unknown"
    else:
        nvlink = "active" if any(x for x in links if x) else "inactive"
    fabric = [g.get("fabric_state") for g in gpus if g.get("fabric_state")]
    mnnvl = (True if any(s.lower() == "completed" for s in fabric) else False) if fabric else None
    shm = None
    cont = ctx.results.get("container")
    if cont and cont.value.get("shm_size_bytes"):
        shm = cont.value["shm_size_bytes"]
    else:
        s = ctx.read("shm.txt")
        if s.data:
            shm = P.parse_df_bytes(s.data.decode("utf-8", "replace"))
    val = {
        "nccl_env": nccl,
        "rdma_devices": rdma,
        "nvlink": nvlink,
        "mnnvl": mnnvl,
        "shm_bytes": shm,
        "ipc_mode": cont.value.get("ipc_mode") if cont else None,
    }
    missing = [
        k
        for k, v in (
            ("rdma_devices", rdma),
            ("nvlink", None if nvlink == "unknown" else nvlink),
            ("shm_bytes", shm),
        )
        if v is None
    ]
    arts = ctx.artefact("rdma-devices.txt") + ctx.artefact("shm.txt")
    if len(missing) == 3 and not nccl:
        return Item.unavailable("no interconnect facts (RDMA, NVLink, /dev/shm)", val, arts)
    reason = ("not established: " + ", ".join(missing)) if missing else rd.reason
    return Item(PARTIAL if missing else OK, reason, val, arts)


# ================================================================================== CUDA probe
def _probe_applies(ctx: Context) -> bool:
    if ctx.source.kind == "bundle":
        return "cuda-probe.txt" in getattr(ctx.source, "names", lambda: [])()
    return bool(ctx.opts.probe_image)


@register("cuda_probe", "In-image CUDA probe", applies=_probe_applies)
def collect_cuda_probe(ctx: Context) -> Item:
    got = ctx.read("cuda-probe.txt")
    text = got.data.decode("utf-8", "replace") if got.data else ""
    if not text and got.status == UNAVAILABLE:
        return Item.unavailable(got.reason or "probe did not run", {"ran": False, "ok": None, "error": None})
    ok = "CUDA_OK" in text
    err = None
    if not ok:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        err_lines = [ln for ln in lines if re.search(r"Error|error|failed|too old|insufficient", ln)]
        err = (err_lines or lines or [got.reason or ""])[-1]
    return Item.ok({"ran": True, "ok": ok, "error": err, "output": text[-4000:]}, ctx.artefact("cuda-probe.txt"))
