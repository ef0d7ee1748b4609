"""Xid / SXid events from ``kernel-log.txt``: code, time, PCI device mapped to its GPU, deduplicated.

Why here and not in the log classifier: an Xid is a fact about one GPU, read against the GPU list
(PCI bus id → index) and NVIDIA's Xid catalog, and it feeds the hardware verdict, not the
start-up diagnosis. The file is the probe's (a JSON header line, then the kept lines) or a copy of
``journalctl -k`` / ``dmesg -T`` / syslog made by hand: every form these print is read. Bounded:
at most ``MAX_LINES`` lines of at most ``MAX_LINE`` characters are looked at.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_LINES = 200_000
MAX_LINE = 4096
MAX_EVENTS = 500
HEADER = "# vllm-runbooks kernel-log "

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-9a-fA-F])?\): "
    r"(?P<code>\d{1,5})(?:\.\d+)?,?\s*(?P<text>.*)"
)
_SXID = re.compile(
    r"(?P<dev>nvidia-nvswitch\d*): SXid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]+)\): (?P<code>\d{1,6}),\s*(?P<text>.*)"
)
# Older drivers log the loss without an Xid number: "NVRM: GPU at 0000:01:00.0 has fallen off the bus."
_OFF_BUS = re.compile(
    r"NVRM: GPU (?:at )?(?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-9a-fA-F])?:? "
    r"(?:GPU )?has fallen off the bus"
)
_TIME = re.compile(
    r"^\s*(?P<ts>\d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?|\[[^\]]{1,40}\]|[A-Z][a-z]{2} [ \d]\d [\d:]{8})"
)


def pci_key(bus_id: str | None) -> str | None:
    """'00000000:18:00.0' / 'PCI:0000:18:00' / '0000:18:00' → '0000:18:00' (domain:bus:device)."""
    if not bus_id:
        return None
    parts = bus_id.strip().removeprefix("PCI:").split(":")
    if len(parts) < 3:
        return None
    domain, bus, dev = parts[-3], parts[-2], parts[-1].split(".")[0]
    return f"{domain[-4:].rjust(4, '0')}:{bus}:{dev}".lower()


def _time(line: str) -> str | None:
    m = _TIME.match(line)
    return m.group("ts").strip("[] ") if m else None


def parse_kernel_log(text: str, gpus: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Events per (device, kind, code): count, first and last time, the first line's text, GPU index."""
    by_pci = {pci_key(g.get("pci_bus_id")): g.get("index") for g in gpus or [] if pci_key(g.get("pci_bus_id"))}
    header: dict[str, Any] | None = None
    events: dict[tuple[str, str, int], dict[str, Any]] = {}
    lines = 0
    cut = 0
    for raw in text.splitlines():
        lines += 1
        if lines > MAX_LINES:
            cut += 1
            continue
        line = raw[:MAX_LINE]
        if line.startswith(HEADER) and header is None:
            try:
                got = json.loads(line[len(HEADER) :])
                header = got if isinstance(got, dict) else None
            except ValueError:
                header = None
            continue
        kind, m = "xid", _XID.search(line)
        inferred = None
        if m is None:
            kind, m = "sxid", _SXID.search(line)
        if m is None:
            m = _OFF_BUS.search(line)
            if m is None:
                continue
            kind, inferred = "xid", "the line says 'has fallen off the bus' without an Xid number (Xid 79)"
        code = 79 if inferred else int(m.group("code"))
        pci = pci_key(m.group("pci")) or m.group("pci")
        device = m.groupdict().get("dev") or f"PCI:{pci}"
        key = (device, kind, code)
        ev = events.get(key)
        when = _time(line)
        if ev is None:
            if len(events) >= MAX_EVENTS:
                cut += 1
                continue
            ev = events[key] = {
                "kind": kind,
                "code": code,
                "pci": pci,
                "device": device,
                "gpu_index": by_pci.get(pci) if kind == "xid" else None,
                "count": 0,
                "first_time": when,
                "last_time": when,
                "text": (m.groupdict().get("text") or line.strip())[:300],
                "line": line.strip()[:500],
            }
            if inferred:
                ev["inferred"] = inferred
        ev["count"] += 1
        ev["last_time"] = when or ev["last_time"]
    return {
        "header": header,
        "lines": lines,
        "events": sorted(events.values(), key=lambda e: (e["kind"], e["code"], e["device"])),
        "cut": cut,
    }
