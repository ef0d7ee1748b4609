"""Host facts: OS release, kernel, hostname, CPUs, memory, uptime."""

from __future__ import annotations

from typing import Any

from .. import parsers as P
from ..model import OK, PARTIAL, Item
from ..registry import Context, combine_reasons, register


@register("host", "Host", order=10)
def collect_host(ctx: Context) -> Item:
    """Host facts; partial when some of OS, kernel, CPUs or memory could not be read."""
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
    missing = combine_reasons(got)
    reason = "; ".join(x for x in [missing, *problems] if x) or None
    if not any(val[k] for k in ("os_release", "kernel", "memory_bytes", "cpus")):
        return Item.unavailable(reason or "no host facts", val, arts)
    return Item(
        OK if all(val[k] is not None for k in ("os_release", "kernel", "cpus", "memory_bytes")) else PARTIAL,
        reason,
        val,
        arts,
    )
