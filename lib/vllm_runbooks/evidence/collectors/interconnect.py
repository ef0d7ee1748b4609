"""Interconnect: NCCL/Gloo environment, RDMA devices, NVLink state, MNNVL fabric, /dev/shm."""

from __future__ import annotations

import re

from .. import parsers as P
from ..model import OK, PARTIAL, Item
from ..registry import Context, register


@register("interconnect", "Interconnect", order=90)
def collect_interconnect(ctx: Context) -> Item:
    """What multi-GPU communication can use; each fact not established is named."""
    env: dict[str, str] = {}
    for src in ("launch", "container"):
        it = ctx.results.get(src)
        if it and it.value.get("env"):
            env.update({k: v for k, v in it.value["env"].items() if k not in env})
    nccl = {k: v for k, v in sorted(env.items()) if re.match(r"^(NCCL_|GLOO_|UCX_|NVSHMEM_)", k)}
    rd = ctx.read("rdma-devices.txt")
    rdma = [x for x in (rd.data or b"").decode("utf-8", "replace").split() if x] if rd.status == OK else None
    nv = ctx.results.get("nvidia")
    gpus = (nv.value.get("gpus") if nv else None) or []
    links = [g.get("nvlink_active_links") for g in gpus]
    if not gpus or all(x is None for x in links):
        nvlink = "unknown"
    else:
        nvlink = "active" if any(x for x in links if x) else "inactive"
    fabric = [g.get("fabric_state") for g in gpus if g.get("fabric_state")]
    mnnvl = (True if any(s.lower() == "completed" for s in fabric) else False) if fabric else None
    shm = None
    cont = ctx.results.get("container")
    if cont and cont.value.get("shm_size_bytes"):
        shm = cont.value["shm_size_bytes"]
    else:
        s = ctx.read("shm.txt")
        if s.data:
            shm = P.parse_df_bytes(s.data.decode("utf-8", "replace"))
    val = {
        "nccl_env": nccl,
        "rdma_devices": rdma,
        "nvlink": nvlink,
        "mnnvl": mnnvl,
        "shm_bytes": shm,
        "ipc_mode": cont.value.get("ipc_mode") if cont else None,
    }
    missing = [
        k
        for k, v in (
            ("rdma_devices", rdma),
            ("nvlink", None if nvlink == "unknown" else nvlink),
            ("shm_bytes", shm),
        )
        if v is None
    ]
    arts = ctx.artefact("rdma-devices.txt") + ctx.artefact("shm.txt")
    if len(missing) == 3 and not nccl:
        return Item.unavailable("no interconnect facts (RDMA, NVLink, /dev/shm)", val, arts)
    reason = ("not established: " + ", ".join(missing)) if missing else rd.reason
    return Item(PARTIAL if missing else OK, reason, val, arts)
