"""Image and container facts from ``docker inspect`` (env redacted before anything is kept)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import redact
from .. import parsers as P
from ..model import OK, PARTIAL, Item
from ..registry import Context, register


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


@register("image", "Image", order=40)
def collect_image(ctx: Context) -> Item:
    """The image's CUDA (``CUDA_VERSION``, ``NVIDIA_REQUIRE_CUDA``) and env, from ``docker image inspect``."""
    got, val, failed = _inspect(ctx, "image-inspect.json", P.parse_image_inspect)
    if failed:
        return failed
    val["env"] = redact.redact_env(val["env"])
    if not val["ref"] and ctx.opts.image:
        val["ref"] = ctx.opts.image
    missing = [k for k in ("cuda_version", "nvidia_require_cuda") if not val.get(k)]
    reason = f"image env has no {', '.join(k.upper() for k in missing)}" if missing else got.reason
    return Item(PARTIAL if missing or got.status != OK else OK, reason, val, ctx.artefact("image-inspect.json"))


@register("container", "Container", order=50)
def collect_container(ctx: Context) -> Item:
    """The container's command, env, shm and IPC settings, from ``docker inspect``."""
    got, val, failed = _inspect(ctx, "container-inspect.json", P.parse_container_inspect)
    if failed:
        return failed
    val["env"] = redact.redact_env(val["env"])
    val["command"] = redact.redact_argv(val["command"])
    val["args"] = redact.redact_argv(val["args"])
    return Item(OK if got.status == OK else PARTIAL, got.reason, val, ctx.artefact("container-inspect.json"))
