"""Free space on the filesystems that hold the weights and caches, from the probe's ``disk-free.txt``.

Each block is ``== PATH<TAB>WHY<TAB>(df of P)`` then ``df -P -k`` output; the first block is the
path the weights are read from (``--download-dir`` before the cache variables before the
default cache), so the fit check compares it with the model's size.
"""

from __future__ import annotations

from typing import Any

MAX_BLOCKS = 32


def parse_disk_free(text: str) -> list[dict[str, Any]]:
    """``disk-free.txt`` → [{path, why, filesystem, mount, size_bytes, avail_bytes}] (error when df failed)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines()[: 4 * MAX_BLOCKS * 4]:
        if line.startswith("== "):
            if len(out) >= MAX_BLOCKS:
                break
            path, _, rest = line[3:].partition("\t")
            why = rest.split("\t", 1)[0]
            cur = {"path": path, "why": why, "filesystem": None, "mount": None, "size_bytes": None, "avail_bytes": None}
            out.append(cur)
            continue
        if cur is None:
            continue
        if line.startswith("+ cached: "):
            cur["cached"] = line[len("+ cached: ") :][:300]
            continue
        if line.startswith("! "):
            cur["error"] = line[2:][:300]
            continue
        cols = line.split()
        if len(cols) >= 6 and cols[1].isdigit() and cols[3].isdigit():
            cur.update(
                filesystem=cols[0],
                mount=" ".join(cols[5:]),
                size_bytes=int(cols[1]) * 1024,
                avail_bytes=int(cols[3]) * 1024,
            )
    return out
