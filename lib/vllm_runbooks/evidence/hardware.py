"""The hardware verdict: healthy | degraded | faulty | unknown, every finding with source and action.

Why one module of rules over data: the Xid meanings and buckets are NVIDIA's
(``data/xid_catalog.yaml``), the memory / PCIe / fabric rules cite NVIDIA's pages
(``data/gpu_health.yaml``); this module only applies them to the evidence, so a finding never
says more than its source. ``unknown`` means no GPU facts at all, never "probably fine".
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import yaml

from .gpu_health import NA, health_facts

VERDICTS = ("healthy", "degraded", "faulty", "unknown")
SEVERITIES = ("faulty", "degraded", "info")


@dataclass
class Finding:
    """One check that did not come out clean: what, on which GPU, how bad, why we say so, what to do."""

    check: str
    severity: str  # faulty | degraded | info
    text: str
    action: str
    source: str
    gpu: int | None = None
    code: int | None = None  # the Xid / SXid number, when the finding is one


@functools.cache
def xid_catalog() -> dict[str, Any]:
    """data/xid_catalog.yaml (NVIDIA's codes, mnemonics and immediate-action buckets)."""
    text = resources.files("vllm_runbooks").joinpath("data/xid_catalog.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def xid_finding(ev: dict[str, Any]) -> Finding:
    """An Xid event as NVIDIA's catalog reads it; a code the catalog lacks is said to be unknown, not guessed."""
    cat = xid_catalog()
    code = int(ev["code"])
    entry = (cat.get("xids") or {}).get(code)
    where = f"GPU {ev['gpu_index']}" if ev.get("gpu_index") is not None else "a GPU not in the GPU list"
    seen = f"{ev['count']}× ({ev.get('first_time') or '?'} … {ev.get('last_time') or '?'})"
    if entry is None:
        return Finding(
            "kernel_log.xid",
            "degraded",
            f"Xid {code} on {where} ({ev['device']}), {seen}: not in the catalog copy; line: {ev['line']}",
            "look the code up in NVIDIA's Xid catalog before acting",
            cat["sources"]["catalog"],
            ev.get("gpu_index"),
            code,
        )
    bucket = cat["buckets"].get(entry["immediate_action"], {"severity": "degraded", "action": "see NVIDIA's catalog"})
    what = entry["mnemonic"] + (f": {entry['description']}" if entry.get("description") else "")
    return Finding(
        "kernel_log.xid",
        bucket["severity"],
        f"Xid {code} ({what}) on {where} ({ev['device']}), {seen}; NVIDIA's immediate action "
        f"{entry['immediate_action']}{' (fatal)' if entry['fatal'] else ''}",
        bucket["action"],
        cat["sources"]["catalog"],
        ev.get("gpu_index"),
        code,
    )


def sxid_finding(ev: dict[str, Any]) -> Finding:
    """An NVSwitch SXid: the driver's own line says Fatal or Non-fatal; we keep its word."""
    fatal = "fatal" in ev["text"].lower() and "non-fatal" not in ev["text"].lower()
    src = health_facts()["fabric"]["source"]
    return Finding(
        "kernel_log.sxid",
        "faulty" if fatal else "info",
        f"SXid {ev['code']} on {ev['device']} ({ev['pci']}), {ev['count']}×: {ev['text']}",
        "drain; reset the fabric (restart the system) and check nvidia-fabricmanager" if fatal else "no action alone",
        src,
        None,
        int(ev["code"]),
    )


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def gpu_findings(g: dict[str, Any]) -> list[Finding]:
    """The per-GPU checks: lost, memory errors, PCIe link, clock events, temperature, persistence, MIG."""
    f = health_facts()
    i = g.get("index")
    out: list[Finding] = []
    if g.get("lost"):
        out.append(
            Finding(
                "nvml.lost",
                "faulty",
                f"GPU {i} disappeared while it was read ({g['lost']})",
                "drain the node and reboot it; look for Xid 79 in the kernel log; repeated: RMA",
                xid_catalog()["sources"]["catalog"],
                i,
            )
        )
        return out
    mem = f["memory"]
    rows = g.get("remapped_rows") or {}
    pages = g.get("retired_pages") or {}
    ecc = g.get("ecc") or {}
    for flag, rule, value in (
        ("row_remap_failure", mem["row_remap_failure"], rows.get("failure")),
        ("row_remap_pending", mem["row_remap_pending"], rows.get("pending")),
        ("retirement_pending", mem["retirement_pending"], pages.get("pending")),
    ):
        if value is True:
            out.append(
                Finding(
                    f"memory.{flag}", rule["severity"], f"GPU {i}: {rule['text']}", rule["action"], rule["source"], i
                )
            )
    unc = _int(ecc.get("volatile_uncorrected"))
    if unc:
        rule = mem["volatile_uncorrected"]
        out.append(
            Finding(
                "memory.volatile_uncorrected",
                rule["severity"],
                f"GPU {i}: {unc} {rule['text']}",
                rule["action"],
                rule["source"],
                i,
            )
        )
    pcie = g.get("pcie") or {}
    p = f["pcie"]
    wc, wm = _int(pcie.get("width_current")), _int(pcie.get("width_max"))
    if wc is not None and wm is not None and wc < wm:
        out.append(
            Finding(
                "pcie.width",
                p["width_below_max"]["severity"],
                f"GPU {i}: PCIe link x{wc}, its maximum is x{wm}",
                p["width_below_max"]["action"],
                p["source"],
                i,
            )
        )
    gc, gm = _int(pcie.get("gen_current")), _int(pcie.get("gen_max"))
    if gc is not None and gm is not None and gc < gm:
        out.append(
            Finding(
                "pcie.gen",
                p["gen_below_max"]["severity"],
                f"GPU {i}: PCIe gen {gc} now, {gm} at most",
                p["gen_below_max"]["action"],
                p["source"],
                i,
            )
        )
    replay = _int(pcie.get("replay_counter"))
    if replay:
        out.append(
            Finding(
                "pcie.replay",
                p["replay_counter"]["severity"],
                f"GPU {i}: PCIe replay counter {replay}",
                p["replay_counter"]["action"],
                p["source"],
                i,
            )
        )
    faults = (g.get("clock_events") or {}).get("faults") or []
    if faults:
        out.append(
            Finding(
                "clocks.slowdown",
                "degraded",
                f"GPU {i}: clocks held down by {', '.join(faults)}",
                "check cooling and power delivery (nvidia-smi -q -d PERFORMANCE); idle and the software power cap "
                "are not faults",
                f["clock_event_reasons"]["source"],
                i,
            )
        )
    temp, slow = _int(g.get("temperature_c")), _int(g.get("temperature_slowdown_c"))
    if temp is not None and slow is not None and slow > 0 and temp >= slow:
        out.append(
            Finding(
                "temperature",
                "degraded",
                f"GPU {i}: {temp} C, at or above its slowdown threshold {slow} C",
                "check cooling; the GPU slows itself down from this temperature",
                f["clock_event_reasons"]["source"],
                i,
            )
        )
    if g.get("persistence_mode") == "Disabled":
        out.append(
            Finding(
                "persistence_mode",
                "info",
                f"GPU {i}: persistence mode disabled",
                "enable it (nvidia-smi -pm 1 or nvidia-persistenced) so the driver stays loaded between jobs",
                f["pcie"]["source"],
                i,
            )
        )
    if g.get("mig_mode") == "Enabled":
        out.append(
            Finding(
                "mig_mode",
                "info",
                f"GPU {i}: MIG mode enabled; vLLM sees MIG instances, not the whole GPU",
                "disable MIG (nvidia-smi -mig 0, GPU reset) unless the launch targets MIG instances",
                f["pcie"]["source"],
                i,
            )
        )
    return out


def node_findings(
    gpus: list[dict[str, Any]],
    vbios: dict[str, Any],
    expected: int | None,
    expected_how: str,
    fabric: dict[str, Any],
) -> list[Finding]:
    """Checks across the node: GPU count against the expectation, VBIOS uniformity, fabric."""
    out: list[Finding] = []
    fab = health_facts()["fabric"]
    seen = len([g for g in gpus if not g.get("lost")])
    if expected is not None and seen < expected:
        out.append(
            Finding(
                "gpu_count",
                "faulty",
                f"{seen} GPU(s) answer, {expected} expected ({expected_how})",
                "check lspci / nvidia-smi -L for the missing GPU(s); a GPU that does not enumerate is a hardware or "
                "driver-attach fault: drain the node",
                xid_catalog()["sources"]["catalog"],
            )
        )
    if vbios.get("uniform") is False:
        out.append(
            Finding(
                "vbios",
                "degraded",
                f"GPUs of one model run different VBIOS versions: {vbios['versions']}",
                "bring every GPU of the node to one VBIOS (vendor firmware update) before comparing them",
                fab["source"],
            )
        )
    mgr = fabric.get("manager") or {}
    nvswitch = bool(fabric.get("nvswitches"))
    if nvswitch and mgr.get("ActiveState") not in (None, "active"):
        out.append(
            Finding(
                "fabric.manager",
                fab["manager_not_running"]["severity"],
                f"NVSwitches present ({len(fabric['nvswitches'])}) but nvidia-fabricmanager is "
                f"{mgr.get('ActiveState')}/{mgr.get('SubState')}",
                fab["manager_not_running"]["action"],
                fab["source"],
            )
        )
    fm_v, drv = fabric.get("manager_version"), fabric.get("driver_version")
    if fm_v and drv and fm_v != drv:
        out.append(
            Finding(
                "fabric.version",
                fab["version_mismatch"]["severity"],
                f"Fabric Manager {fm_v} does not match driver {drv}",
                fab["version_mismatch"]["action"],
                fab["source"],
            )
        )
    for g in gpus:
        state = g.get("fabric_state")
        if state not in (None, NA, "Completed") and (nvswitch or fabric.get("imex")):
            out.append(
                Finding(
                    "fabric.gpu",
                    fab["gpu_fabric_incomplete"]["severity"],
                    f"GPU {g.get('index')}: fabric state {state} (status {g.get('fabric_status')})",
                    fab["gpu_fabric_incomplete"]["action"],
                    fab["source"],
                    g.get("index"),
                )
            )
    return out


def decide(findings: list[Finding], have_gpu_facts: bool) -> str:
    """faulty beats degraded beats healthy; no GPU facts at all is unknown."""
    if not have_gpu_facts:
        return "unknown"
    sev = {f.severity for f in findings}
    return "faulty" if "faulty" in sev else "degraded" if "degraded" in sev else "healthy"


def hardware_verdict(
    gpus: list[dict[str, Any]],
    events: list[dict[str, Any]],
    *,
    vbios: dict[str, Any] | None = None,
    expected: int | None = None,
    expected_how: str = "",
    fabric: dict[str, Any] | None = None,
    notes: list[Finding] | None = None,
) -> dict[str, Any]:
    """Every finding, the verdict and the counts: the ``hardware`` evidence item's value."""
    findings: list[Finding] = list(notes or [])
    for g in gpus:
        findings += gpu_findings(g)
    findings += node_findings(gpus, vbios or {}, expected, expected_how, fabric or {})
    for ev in events:
        findings.append(xid_finding(ev) if ev["kind"] == "xid" else sxid_finding(ev))
    order = {s: n for n, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order.get(f.severity, 9), f.gpu if f.gpu is not None else -1, f.check))
    verdict = decide(findings, bool(gpus))
    return {
        "verdict": verdict,
        "findings": [asdict(f) for f in findings],
        "counts": {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES},
        "xids": sorted({f.code for f in findings if f.check == "kernel_log.xid" and f.code is not None}),
        "faulty_gpus": sorted({f.gpu for f in findings if f.severity == "faulty" and f.gpu is not None}),
    }
