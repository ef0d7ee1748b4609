"""The start-up fit: GPU memory against --gpu-memory-utilization, disk against the weights, ready timeout."""

from __future__ import annotations

from typing import Any

from ..fit import fit_check, weights_of
from ..model import UNAVAILABLE, Item
from ..registry import Context, register
from .hardware import expected


def _value(ctx: Context, name: str) -> dict[str, Any]:
    it = ctx.results.get(name)
    return it.value if it is not None and it.status != UNAVAILABLE else {}


@register("fit", "Start-up fit", order=96)
def collect_fit(ctx: Context) -> Item:
    """Whether the launch fits before it starts; each check without its facts says unknown and why."""
    from ...compat.profiles import guess_profile, load_profile

    launch = _value(ctx, "launch")
    container = _value(ctx, "container")
    env: dict[str, str] = {}
    for src in (_value(ctx, "image").get("env"), container.get("env"), launch.get("env")):
        env.update({str(k): str(v) for k, v in (src or {}).items()})
    argv = [str(a) for a in launch.get("argv") or []]
    profile_name = guess_profile(argv, _value(ctx, "image").get("ref"))
    profile = load_profile(profile_name)
    model = next((a for a in argv if any(a == m for m in profile.get("model_ids") or [])), None)
    gpus = _value(ctx, "gpu_health").get("gpus") or _value(ctx, "nvidia").get("gpus") or []
    count, _how = expected(ctx)
    val = fit_check(
        gpus,
        flags=launch.get("flags") or {},
        env=env,
        expected=count,
        server_running=str(container.get("state") or "").lower() == "running",
        disk_blocks=_value(ctx, "disk").get("paths") or [],
        weights=weights_of(profile, model),
        startup=profile.get("startup"),
    )
    val["profile"] = profile_name
    val["model"] = model
    reason = (
        None if val["status"] != "unknown" else "not every fit check had its facts (see memory / disk / ready_timeout)"
    )
    return Item.ok(val, reason=reason)
