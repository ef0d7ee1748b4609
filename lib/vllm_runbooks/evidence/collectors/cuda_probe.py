"""In-image CUDA probe: did cuInit/torch CUDA work inside the image (``probe_image``, or a bundle's)."""

from __future__ import annotations

import re

from ..model import UNAVAILABLE, Item
from ..registry import Context, register


def _probe_applies(ctx: Context) -> bool:
    """Only when asked to start the image, or when a bundle carries the probe's output."""
    if ctx.source.kind == "bundle":
        return "cuda-probe.txt" in getattr(ctx.source, "names", lambda: [])()
    return bool(ctx.opts.probe_image)


@register("cuda_probe", "In-image CUDA probe", applies=_probe_applies, order=100)
def collect_cuda_probe(ctx: Context) -> Item:
    """Whether CUDA initialised inside the image, with the last error line when not."""
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
