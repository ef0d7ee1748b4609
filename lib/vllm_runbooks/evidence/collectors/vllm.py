"""vLLM version and commit from the endpoint, logs, collect_env and the image; disagreement is reported."""

from __future__ import annotations

import re
from typing import Any

from .. import parsers as P
from ..model import OK, PARTIAL, Item
from ..registry import Context, register


@register("vllm", "vLLM version", order=70)
def collect_vllm(ctx: Context) -> Item:
    """vLLM version: endpoint, then log, collect_env, image; sources that disagree make it partial."""
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
