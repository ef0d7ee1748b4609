"""Container runtime and NVIDIA Container Toolkit: docker version/info, nvidia-ctk, toolkit config."""

from __future__ import annotations

import re
from typing import Any

from .. import parsers as P
from ..model import OK, PARTIAL, Item
from ..registry import Context, combine_reasons, register


@register("container_runtime", "Container runtime and NVIDIA Container Toolkit", order=30)
def collect_runtime(ctx: Context) -> Item:
    """Docker and toolkit versions and runtimes: GPU containers need the NVIDIA runtime."""
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
    reason = "; ".join(x for x in [combine_reasons(got), *notes] if x) or None
    arts = [a for n in names for a in ctx.artefact(n)]
    key = [val["docker_version"], val["nvidia_ctk_version"] or val["nvidia_container_cli_version"]]
    if not any(key) and not val["docker_client_version"]:
        return Item.unavailable(reason or "no container runtime facts", val, arts)
    return Item(OK if all(key) and val["runtimes"] else PARTIAL, reason, val, arts)
