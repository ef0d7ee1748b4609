"""Parsers for the raw artefacts a node yields, in the formats the tools really print.

Each parser takes text (already redacted) and returns plain data, raising ``ParseError`` with
a short reason on garbage so the collector can record ``unavailable: <reason>``.
"""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from typing import Any


class ParseError(ValueError):
    """The artefact is not in the expected format."""


NA = {
    "",
    "N/A",
    "[N/A]",
    "Not Supported",
    "[Not Supported]",
    "None",
    "Unknown Error",
    "Requested functionality has been deprecated",
}


def _na(v: str | None) -> str | None:
    if v is None:
        return None
    v = v.strip()
    return None if v in NA else v


def _mib(v: str | None) -> int | None:
    v = _na(v)
    if not v:
        return None
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(MiB|GiB|KiB|B)?\s*$", v, re.ASCII)
    if not m:
        return None
    n = float(m.group(1))
    unit = (m.group(2) or "MiB").lower()
    return int(n * {"mib": 1, "gib": 1024, "kib": 1 / 1024, "b": 1 / 1048576}[unit])


def cuda_int_to_str(n: int | None) -> str | None:
    """12090 → "12.9" (cudaDriverGetVersion encoding: 1000*major + 10*minor)."""
    if n is None:
        return None
    return f"{n // 1000}.{(n % 1000) // 10}"


def cuda_str_to_int(s: str | None) -> int | None:
    """ "12.9" → 12090."""
    m = re.match(r"^\s*(\d+)\.(\d+)", s or "", re.ASCII)
    return int(m.group(1)) * 1000 + int(m.group(2)) * 10 if m else None


def driver_branch(version: str | None) -> str | None:
    """ "575.57.08" → "r575"."""
    m = re.match(r"^\s*(\d{3,})\.", version or "", re.ASCII)
    return f"r{m.group(1)}" if m else None


BRAND_CLASS = {
    "tesla": "datacenter",
    "nvidia": "datacenter",
    "grid": "datacenter",
    "nvidia vapps": "datacenter",
    "nvidia vpc": "datacenter",
    "nvidia vcs": "datacenter",
    "nvidia vws": "datacenter",
    "nvidia cloud gaming": "datacenter",
    "quadro": "professional",
    "quadro rtx": "professional",
    "nvidia rtx": "professional",
    "geforce": "geforce",
    "geforce rtx": "geforce",
    "titan": "geforce",
    "titan rtx": "geforce",
}


def brand_class(brand: str | None) -> str | None:
    """Group nvidia-smi / NVML brand names by forward-compatibility eligibility."""
    return BRAND_CLASS.get((brand or "").strip().lower())


# --- nvidia-smi -q -x --------------------------------------------------------------------------
def nvidia_smi_root(text: str) -> ET.Element:
    """The root of ``nvidia-smi -q -x`` output (its DOCTYPE dropped); ParseError on garbage or a cut file."""
    if not text or "<nvidia_smi_log" not in text:
        raise ParseError("not nvidia-smi XML (no <nvidia_smi_log>)")
    body = re.sub(r"<!DOCTYPE[^>]*>", "", text)
    try:
        return ET.fromstring(body.strip())
    except ET.ParseError as e:
        raise ParseError(f"malformed nvidia-smi XML: {e}") from e


def parse_nvidia_smi_xml(text: str) -> dict[str, Any]:
    """``nvidia-smi -q -x`` → driver, CUDA, per-GPU facts (nvsmi_device_v12 DTD)."""
    root = nvidia_smi_root(text)

    def t(node: ET.Element, path: str) -> str | None:
        el = node.find(path)
        return _na(el.text) if el is not None and el.text is not None else None

    drv = t(root, "driver_version")
    cuda = t(root, "cuda_version")
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        ecc_unc = None
        for path in (
            "ecc_errors/volatile/dram_uncorrectable",
            "ecc_errors/volatile/double_bit/total",
            "ecc_errors/volatile/sram_uncorrectable_secded",
        ):
            v = t(g, path)
            if v is not None and v.isascii() and v.isdigit():
                ecc_unc = (ecc_unc or 0) + int(v)
        cc = t(g, "compute_cap")
        gpus.append(
            {
                "index": i,
                "name": t(g, "product_name"),
                "uuid": t(g, "uuid"),
                "pci_bus_id": t(g, "pci/pci_bus_id") or g.get("id"),
                "compute_capability": cc,
                "brand": t(g, "product_brand"),
                "brand_class": brand_class(t(g, "product_brand")),
                "architecture": t(g, "product_architecture"),
                "memory_total_mib": _mib(t(g, "fb_memory_usage/total")),
                "memory_used_mib": _mib(t(g, "fb_memory_usage/used")),
                "persistence_mode": t(g, "persistence_mode"),
                "mig_mode": t(g, "mig_mode/current_mig"),
                "ecc_errors_uncorrected": ecc_unc,
                "nvlink_active_links": None,
                "fabric_state": t(g, "fabric/state"),
            }
        )
    return {
        "driver_version": drv,
        "cuda_driver_version": cuda,
        "attached_gpus": t(root, "attached_gpus"),
        "gpus": gpus,
    }


# --- nvidia-smi (text table) -------------------------------------------------------------------
_SMI_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>[\d.]+)\s+Driver Version:\s*(?P<drv>[\d.]+)\s+CUDA Version:\s*(?P<cuda>[\d.]+|N/A)",
    re.ASCII,
)
_SMI_ROW1 = re.compile(
    r"^\|\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?P<pers>On|Off)\s+\|\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
    r"[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+(?P<disp>\S+)\s*\|\s*(?P<ecc>\S+)\s*\|",
    re.ASCII,
)
_SMI_ROW2 = re.compile(r"\|\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*\|", re.ASCII)
_SMI_ROW3 = re.compile(r"^\|\s+\|\s+\|\s*(?P<mig>Enabled|Disabled|N/A)\s*\|")


def parse_nvidia_smi_text(text: str) -> dict[str, Any]:
    """The plain ``nvidia-smi`` table: header (driver, max CUDA) and GPU rows."""
    if not text:
        raise ParseError("empty nvidia-smi output")
    if "Failed to initialize NVML" in text or "couldn't communicate with the NVIDIA driver" in text:
        line = next(ln for ln in text.splitlines() if "NVML" in ln or "NVIDIA driver" in ln)
        raise ParseError(f"nvidia-smi failed: {line.strip()}")
    m = _SMI_HEADER.search(text)
    if not m:
        raise ParseError("no 'Driver Version: … CUDA Version: …' header in nvidia-smi output")
    gpus: list[dict[str, Any]] = []
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        r = _SMI_ROW1.match(ln.strip())
        if not r:
            continue
        row2 = _SMI_ROW2.search(lines[i + 1]) if i + 1 < len(lines) else None
        row3 = _SMI_ROW3.match(lines[i + 2].strip()) if i + 2 < len(lines) else None
        ecc = r.group("ecc")
        gpus.append(
            {
                "index": int(r.group("idx")),
                "name": r.group("name").strip(),
                "uuid": None,
                "pci_bus_id": r.group("bus"),
                "compute_capability": None,
                "brand": None,
                "brand_class": None,
                "architecture": None,
                "memory_total_mib": int(row2.group("total")) if row2 else None,
                "memory_used_mib": int(row2.group("used")) if row2 else None,
                "persistence_mode": "Enabled" if r.group("pers") == "On" else "Disabled",
                "mig_mode": row3.group("mig") if row3 else None,
                "ecc_errors_uncorrected": int(ecc) if ecc.isascii() and ecc.isdigit() else None,
                "nvlink_active_links": None,
            }
        )
    cuda = m.group("cuda")
    return {
        "driver_version": m.group("drv"),
        "cuda_driver_version": None if cuda == "N/A" else cuda,
        "gpus": gpus,
    }


# --- nvidia-smi --query-gpu ... --format=csv ---------------------------------------------------
def parse_nvidia_smi_query_csv(text: str) -> list[dict[str, Any]]:
    """``--query-gpu=...--format=csv`` (with header) → rows keyed by the query field names."""
    rows = [r for r in (text or "").splitlines() if r.strip()]
    if not rows or "," not in rows[0]:
        raise ParseError("not nvidia-smi CSV output")
    header = [re.sub(r"\s*\[.*?\]\s*$", "", h.strip()) for h in rows[0].split(",")]
    if "name" not in header and "index" not in header:
        raise ParseError("nvidia-smi CSV has no header row")
    out = []
    for r in rows[1:]:
        vals = [v.strip() for v in r.split(",")]
        if len(vals) != len(header):
            continue
        out.append(dict(zip(header, vals, strict=True)))
    return out


# --- nvidia-smi topo -m ------------------------------------------------------------------------
def parse_topo(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m`` → GPU×GPU matrix of labels (X, NV18, SYS, NODE, PIX…), NICs, affinity."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in (text or "").splitlines()]
    hdr_i = next(
        (
            i
            for i, ln in enumerate(lines)
            if re.match(r"^\s*GPU0\b", ln.strip()) and "\t" in ln and not re.match(r"^\s*GPU0\s+X\b", ln.strip())
        ),
        None,
    )
    if hdr_i is None:
        raise ParseError("no GPU0… header row in topo -m output")
    header = [h.strip() for h in lines[hdr_i].strip().split("\t") if h.strip()]
    devs = [h for h in header if re.match(r"^(GPU|NIC)\d+$", h, re.ASCII)]
    gpus = [h for h in devs if h.startswith("GPU")]
    matrix: list[list[str]] = []
    affinity: dict[str, dict[str, str]] = {}
    nic_matrix: dict[str, list[str]] = {}
    for ln in lines[hdr_i + 1 :]:
        cells = [c.strip() for c in ln.strip().split("\t")]
        if not cells or not re.match(r"^(GPU|NIC)\d+$", cells[0], re.ASCII):
            if ln.strip().startswith("Legend"):
                break
            continue
        row = cells[1:]
        if cells[0].startswith("GPU"):
            matrix.append(row[: len(gpus)])
            nic_matrix[cells[0]] = row[len(gpus) : len(devs)]
            extra = row[len(devs) :]
            names = header[len(devs) :]
            affinity[cells[0]] = {n: v for n, v in zip(names, extra, strict=False)}
    if not matrix:
        raise ParseError("topo -m header found but no GPU rows")
    nics = {}
    for ln in lines:
        m = re.match(r"^\s*(NIC\d+):\s*(\S+)", ln, re.ASCII)
        if m:
            nics[m.group(1)] = m.group(2)
    return {"gpus": gpus, "matrix": matrix, "nics": nics, "gpu_nic": nic_matrix, "affinity": affinity}


def nvlink_counts_from_topo(topo: dict[str, Any]) -> list[int | None]:
    """Per GPU, the largest NV# bond it has to a peer (18 for H100/H200 SXM)."""
    out: list[int | None] = []
    for row in topo.get("matrix", []):
        ns = [int(m.group(1)) for c in row if (m := re.match(r"^NV(\d+)$", c, re.ASCII))]
        out.append(max(ns) if ns else None)
    return out


# --- nvidia-smi nvlink -s ----------------------------------------------------------------------
def parse_nvlink_status(text: str) -> dict[int, dict[str, int]]:
    """``nvidia-smi nvlink -s`` → {gpu index: {"active": n, "inactive": m}}."""
    out: dict[int, dict[str, int]] = {}
    cur: int | None = None
    for ln in (text or "").splitlines():
        m = re.match(r"^GPU\s+(\d+):", ln.strip(), re.ASCII)
        if m:
            cur = int(m.group(1))
            out[cur] = {"active": 0, "inactive": 0}
            continue
        m = re.match(r"^Link\s+\d+:\s*(.+)$", ln.strip(), re.ASCII)
        if m and cur is not None:
            out[cur]["inactive" if "inactive" in m.group(1).lower() else "active"] += 1
    return out


# --- /proc/driver/nvidia/version ---------------------------------------------------------------
def parse_proc_driver_version(text: str) -> dict[str, Any]:
    """The kernel module's version from /proc/driver/nvidia/version (differs from user space until a reboot)."""
    m = re.search(r"Kernel Module(?: for [\w]+)?\s+([\d.]+)", text or "", re.ASCII)
    if not m:
        raise ParseError("no 'Kernel Module <version>' line in /proc/driver/nvidia/version")
    return {"kernel_module_version": m.group(1), "open_kernel_module": "Open Kernel Module" in text}


# --- host ---------------------------------------------------------------------------------------
def parse_os_release(text: str) -> dict[str, str]:
    """/etc/os-release: KEY=value lines, values possibly quoted."""
    out: dict[str, str] = {}
    for ln in (text or "").splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#") or "=" not in ln:
            continue
        k, _, v = ln.partition("=")
        if not re.fullmatch(r"[A-Z0-9_]+", k):
            continue
        try:
            parts = shlex.split(v)
            out[k] = parts[0] if parts else ""
        except ValueError:
            out[k] = v.strip("'\"")
    if not out:
        raise ParseError("no KEY=value lines in os-release")
    return out


def parse_uname(text: str) -> dict[str, str | None]:
    """``uname -a`` → kernel name, hostname, kernel release, machine."""
    parts = (text or "").split()
    if len(parts) < 3:
        raise ParseError("uname -a output too short")
    machine = next((p for p in reversed(parts) if re.fullmatch(r"x86_64|aarch64|arm64|ppc64le|s390x", p)), None)
    return {"kernel_name": parts[0], "hostname": parts[1], "kernel": parts[2], "machine": machine}


def parse_meminfo(text: str) -> int | None:
    """Total memory in bytes from /proc/meminfo, or None."""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text or "", re.M | re.ASCII)
    return int(m.group(1)) * 1024 if m else None


def parse_uptime(text: str) -> float | None:
    """Seconds since boot from /proc/uptime, or None."""
    m = re.match(r"^\s*([\d.]+)", text or "", re.ASCII)
    return float(m.group(1)) if m else None


def parse_df_bytes(text: str) -> int | None:
    """``df -k /dev/shm`` → total bytes of the filesystem."""
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    for ln in lines[1:]:
        cols = ln.split()
        if len(cols) >= 2 and cols[1].isascii() and cols[1].isdigit():
            return int(cols[1]) * 1024
    return None


# --- docker -------------------------------------------------------------------------------------
def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError) as e:
        raise ParseError(f"{what} is not JSON: {e}") from e
    except RecursionError:
        raise ParseError(f"{what} is nested too deeply to read") from None


def env_list_to_dict(env: list[str] | None) -> dict[str, str]:
    """docker's ["K=V", ...] environment as a dict (last value wins, as in docker)."""
    out: dict[str, str] = {}
    for e in env or []:
        k, _, v = str(e).partition("=")
        out[k] = v
    return out


def _first(obj: Any, what: str) -> dict[str, Any]:
    if isinstance(obj, list):
        if not obj:
            raise ParseError(f"{what}: empty list (no such object)")
        obj = obj[0]
    if not isinstance(obj, dict):
        raise ParseError(f"{what}: unexpected JSON shape")
    return obj


def parse_image_inspect(text: str) -> dict[str, Any]:
    """``docker image inspect`` JSON → ref, digest, CUDA env, VLLM_* env, labels."""
    img = _first(_load_json(text, "docker image inspect"), "docker image inspect")
    cfg = img.get("Config") or img.get("config") or {}
    env = env_list_to_dict(cfg.get("Env"))
    digests = img.get("RepoDigests") or []
    tags = img.get("RepoTags") or []
    disable = env.get("NVIDIA_DISABLE_REQUIRE", "")
    return {
        "ref": tags[0] if tags else None,
        "repo_tags": tags,
        "digest": digests[0].split("@", 1)[1] if digests and "@" in digests[0] else None,
        "repo_digests": digests,
        "id": img.get("Id"),
        "created": img.get("Created"),
        "architecture": img.get("Architecture"),
        "cuda_version": env.get("CUDA_VERSION"),
        "nvidia_require_cuda": env.get("NVIDIA_REQUIRE_CUDA"),
        "nv_cuda_compat_package": env.get("NV_CUDA_COMPAT_PACKAGE"),
        "nvidia_disable_require": disable.strip().lower() in {"1", "true", "yes"},
        "vllm_env": {k: v for k, v in env.items() if k.startswith("VLLM_")},
        "labels": dict(cfg.get("Labels") or {}),
        "entrypoint": cfg.get("Entrypoint"),
        "cmd": cfg.get("Cmd"),
        "env": env,
    }


def parse_container_inspect(text: str) -> dict[str, Any]:
    """``docker inspect`` of a container → command, env, state, exit code, OOM, shm, GPUs."""
    c = _first(_load_json(text, "docker inspect"), "docker inspect")
    cfg = c.get("Config") or {}
    host = c.get("HostConfig") or {}
    state = c.get("State") or {}
    return {
        "name": (c.get("Name") or "").lstrip("/") or None,
        "id": c.get("Id"),
        "image": cfg.get("Image"),
        "image_id": c.get("Image"),
        "command": list(cfg.get("Cmd") or []),
        "entrypoint": list(cfg.get("Entrypoint") or []),
        "path": c.get("Path"),
        "args": list(c.get("Args") or []),
        "env": env_list_to_dict(cfg.get("Env")),
        "state": state.get("Status"),
        "exit_code": state.get("ExitCode"),
        "oom_killed": state.get("OOMKilled"),
        "error": state.get("Error") or None,
        "started_at": state.get("StartedAt"),
        "finished_at": state.get("FinishedAt"),
        "restart_count": c.get("RestartCount"),
        "shm_size_bytes": host.get("ShmSize"),
        "ipc_mode": host.get("IpcMode"),
        "runtime": host.get("Runtime"),
        "device_requests": host.get("DeviceRequests") or [],
        "labels": dict(cfg.get("Labels") or {}),
    }


def parse_docker_version(text: str) -> dict[str, Any]:
    """Server and client versions from ``docker version --format json``."""
    d = _load_json(text, "docker version")
    if not isinstance(d, dict):
        raise ParseError("docker version: unexpected JSON shape")
    client = d.get("Client") or {}
    server = d.get("Server") or {}
    return {
        "client_version": client.get("Version"),
        "server_version": server.get("Version"),
        "api_version": client.get("ApiVersion"),
        "server_reachable": bool(server),
    }


def parse_docker_info(text: str) -> dict[str, Any]:
    """Runtimes and the default runtime from ``docker info --format json``."""
    d = _load_json(text, "docker info")
    if not isinstance(d, dict):
        raise ParseError("docker info: unexpected JSON shape")
    return {
        "runtimes": sorted((d.get("Runtimes") or {}).keys()),
        "default_runtime": d.get("DefaultRuntime"),
        "server_version": d.get("ServerVersion"),
        "cdi_spec_dirs": d.get("CDISpecDirs"),
        "server_errors": d.get("ServerErrors") or [],
    }


def parse_tool_version(text: str) -> str | None:
    """First version-looking token of ``nvidia-ctk --version`` / ``nvidia-container-cli --version``."""
    m = re.search(r"(?:version|cli-version:?)\s*:?\s*v?(\d+\.\d+\.\d+[\w.~-]*)", text or "", re.I | re.ASCII)
    if m:
        return m.group(1)
    m = re.search(r"\b(\d+\.\d+\.\d+)\b", text or "", re.ASCII)
    return m.group(1) if m else None


# --- env dumps, launch command, vLLM ------------------------------------------------------------
def parse_env_dump(text: str) -> dict[str, str]:
    """``env`` output, ``/proc/PID/environ`` (NUL separated) or ``export K=V`` / ``docker -e`` lines."""
    sep = "\0" if "\0" in (text or "") else "\n"
    out: dict[str, str] = {}
    for ln in (text or "").split(sep):
        ln = ln.strip()
        ln = re.sub(r"^(export|declare -x)\s+", "", ln)
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", ln)
        if m:
            v = m.group(2)
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                v = v[1:-1]
            out[m.group(1)] = v
    return out


def split_command(cmd: str) -> list[str]:
    """A shell command line (possibly with ``\\`` continuations) → argv, tolerant of bad quoting."""
    cmd = re.sub(r"\\\s*\n", " ", cmd or "").strip()
    try:
        return shlex.split(cmd, comments=False)
    except ValueError:
        return cmd.split()


_VLLM_VER = [
    re.compile(r"vLLM API server version\s+v?(?P<v>[\w.+-]+)"),
    re.compile(r"Initializing an? (?:V1 )?LLM engine \(v(?P<v>[\w.+-]+)\)"),
    re.compile(r"Starting vLLM API server.*?version\s+v?(?P<v>[\w.+-]+)"),
]


def vllm_version_from_log(text: str) -> str | None:
    """The vLLM version a startup log announces, or None."""
    for ln in (text or "").splitlines():
        for rx in _VLLM_VER:
            m = rx.search(ln)
            if m:
                return m.group("v").rstrip(".")
    return None


def commit_from_version(version: str | None) -> str | None:
    """``0.6.3.post2.dev308+gb489fc3c`` → ``b489fc3c``."""
    m = re.search(r"\+g([0-9a-f]{7,40})", version or "")
    return m.group(1) if m else None


def parse_python_env(text: str) -> dict[str, Any]:
    """The probe's ``python-env.json`` → vLLM/torch versions, vLLM commit and torch's CUDA.

    Why a parser of our own file: it is the cheap stand-in for collect_env (no torch import), and a
    bundle may be hand-made, so every field is checked for type before it is used.
    """
    data = _load_json(text, "python-env.json")
    if not isinstance(data, dict):
        raise ParseError("python-env.json is not an object")

    def field(pkg: str, key: str) -> str | None:
        entry = data.get(pkg)
        value = entry.get(key) if isinstance(entry, dict) else None
        return value if isinstance(value, str) and value.strip() else None

    py = data.get("python")
    return {
        "vllm_version": field("vllm", "version"),
        "vllm_commit": field("vllm", "commit"),
        "vllm_distribution": field("vllm", "distribution"),
        "torch_version": field("torch", "version"),
        "torch_cuda": field("torch", "cuda"),
        "python": py.get("version") if isinstance(py, dict) and isinstance(py.get("version"), str) else None,
    }


def parse_collect_env(text: str) -> dict[str, Any]:
    """``python -m vllm.collect_env`` → the ``Key: value`` facts it prints (vLLM, torch, CUDA…)."""
    if not text or ":" not in text:
        raise ParseError("empty collect_env output")
    facts: dict[str, str] = {}
    for ln in text.splitlines():
        m = re.match(r"^\s*([A-Za-z][\w .()/-]{1,60}?)\s*:\s+(.*\S)\s*$", ln)
        if m and not ln.strip().startswith("["):
            facts.setdefault(m.group(1).strip(), m.group(2))
    if not facts:
        raise ParseError("no 'Key: value' lines in collect_env output")

    def f(*names: str) -> str | None:
        for n in names:
            if n in facts:
                return _na(facts[n]) if facts[n] != "Could not collect" else None
        return None

    vllm_v = f("vLLM Version")
    m = re.search(r"git sha:\s*([0-9a-f]{7,40})", vllm_v or "")
    torch = re.search(r"^\s*PyTorch version\s*:\s*(\S+)", text, re.M)
    envs_sec = text.split("Environment Variables", 1)
    return {
        "vllm_version": re.sub(r"\s*\(git sha:.*\)$", "", vllm_v) if vllm_v else None,
        "vllm_commit": m.group(1) if m else commit_from_version(vllm_v),
        "torch_version": torch.group(1) if torch else None,
        "torch_cuda": f("CUDA used to build PyTorch"),
        "cuda_runtime": f("CUDA runtime version"),
        "driver_version": f("Nvidia driver version"),
        "gpu_models": f("GPU models and configuration"),
        "os": f("OS"),
        "python": f("Python version"),
        "env": parse_env_dump(envs_sec[1]) if len(envs_sec) > 1 else {},
    }
