"""Free space on the filesystems that hold the model and its caches (bundle ``disk-free.txt``)."""

from __future__ import annotations

from ..disk import parse_disk_free
from ..model import Item
from ..registry import Context, captured_here_or_in_bundle, register


@register("disk", "Disk space for weights and caches", applies=captured_here_or_in_bundle("disk-free.txt"), order=29)
def collect_disk(ctx: Context) -> Item:
    """Each model / cache path with its filesystem, size and free bytes; the first is where weights land."""
    got = ctx.read("disk-free.txt")
    arts = ctx.artefact("disk-free.txt")
    if got.data is None:
        return Item.unavailable(got.reason or "no disk-free.txt", {"paths": []}, arts)
    paths = parse_disk_free(got.data.decode("utf-8", "replace"))
    if not paths:
        return Item.partial({"paths": []}, "disk-free.txt names no path", arts)
    return Item.ok({"paths": paths}, arts)
