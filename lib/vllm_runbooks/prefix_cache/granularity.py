"""Can a prefix hit at all? The smallest shared prefix the server can serve from cache.

vLLM caches only full KV blocks, so a hit is a whole number of blocks: a shared prefix shorter
than one block never hits, and the tail past the last full block is always recomputed. Hybrid
models (Mamba/KDA layers beside attention) align hits to larger units, exposed on newer servers
as extra ``cache_config_info`` labels; a hit must end on a boundary of every unit, so the
smallest possible hit is their least common multiple. The labels are an open dictionary: any
label listed in ``ALIGNMENT_LABELS`` that holds a positive integer counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..display import banner, html_table
from ..records import Record

#: cache_config_info labels that constrain where a hit may end (tokens), in display order.
ALIGNMENT_LABELS = (
    "block_size",
    "effective_attention_block_size",
    "hash_block_size",
    "mamba_block_size",
    "prefix_match_unit",
    "cache_hit_alignment_tokens",
)
#: labels that only matter on a hybrid model (a plain attention model may still report them).
HYBRID_ONLY = {"mamba_block_size"}
#: placeholder when the server reports no ``cache_config_info`` (vLLM's GPU default). It is NOT the
#: real value on CPU (128) or on hybrid models (larger units), so nothing is concluded from it:
#: ``HitGranularity.assumed`` marks it, and the verdict never says ``prefix_too_short`` from it.
DEFAULT_BLOCK_SIZE = 16
MISSING_CONFIG = "the server reports no vllm:cache_config_info, so its block size (hit unit) is unknown"


def _int(value: object) -> int | None:
    try:
        n = int(float(str(value)))
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


@dataclass
class HitGranularity(Record):
    """The unit a cache hit is counted in (``unit_tokens``) and what it was derived from."""

    SCHEMA = "prefix_cache_granularity"
    unit_tokens: int
    block_size: int | None = None
    units: dict[str, int] = field(default_factory=dict)
    hybrid: bool = False
    assumed: bool = False  # True when the server reported no block size
    capacity_tokens: int | None = None  # num_gpu_blocks × block_size, or kv_cache_size_tokens
    capacity_from: str = ""
    hash_algo: str | None = None
    engine: str | None = None

    def cacheable(self, shared_tokens: int, prompt_tokens: int | None = None) -> int:
        """Tokens a later request can take from cache: whole units of the shared prefix.

        vLLM always computes at least the last prompt token, so a prompt fully equal to the
        prefix can hit at most ``prompt_tokens - 1``, rounded down to a unit.
        """
        limit = shared_tokens if prompt_tokens is None else min(shared_tokens, max(0, prompt_tokens - 1))
        return (limit // self.unit_tokens) * self.unit_tokens

    def _repr_html_(self) -> str:
        if self.assumed:
            title = "Smallest possible hit: unknown"
            detail = (
                f"{MISSING_CONFIG}. {DEFAULT_BLOCK_SIZE} (vLLM's GPU default) is used only as a placeholder; "
                "CPU servers use 128 and hybrid models larger units, so no verdict rests on it."
            )
        else:
            title = f"Smallest possible hit: {self.unit_tokens} tokens"
            detail = f"a shared prefix must reach {self.unit_tokens} tokens before anything is cached"
        rows = [
            {"label": k + (" (placeholder)" if self.assumed and k == "block_size" else ""), "tokens": v}
            for k, v in self.units.items()
        ]
        rows.append({"label": "KV capacity (tokens)", "tokens": self.capacity_tokens, "from": self.capacity_from})
        return banner(title, detail, "unknown") + html_table(rows)


def hit_granularity(cache_config: dict[str, str] | None) -> HitGranularity:
    """Derive the hit unit and KV capacity from ``cache_config_info`` labels (any version)."""
    cfg = dict(cache_config or {})
    units = {k: n for k in ALIGNMENT_LABELS if (n := _int(cfg.get(k))) is not None}
    hybrid = any(k in units for k in HYBRID_ONLY) or str(cfg.get("mamba_cache_mode", "none")).lower() not in (
        "none",
        "",
    )
    block = units.get("block_size")
    assumed = block is None
    if assumed:
        units = {"block_size": DEFAULT_BLOCK_SIZE, **units}
        block = DEFAULT_BLOCK_SIZE
    unit = 1
    for k, n in units.items():
        if k in HYBRID_ONLY and not hybrid:
            continue
        unit = math.lcm(unit, n)
    capacity, origin = None, ""
    if (n := _int(cfg.get("kv_cache_size_tokens"))) is not None:
        capacity, origin = n, "kv_cache_size_tokens"
    elif (blocks := _int(cfg.get("num_gpu_blocks"))) is not None:
        capacity, origin = blocks * block, "num_gpu_blocks × block_size"
    return HitGranularity(
        unit_tokens=unit,
        block_size=block,
        units=units,
        hybrid=hybrid,
        assumed=assumed,
        capacity_tokens=capacity,
        capacity_from=origin,
        hash_algo=cfg.get("prefix_caching_hash_algo"),
        engine=cfg.get("engine"),
    )


@dataclass
class PrefixFit(Record):
    """The workload's shared prefix (tokens, as the server tokenizes) against the hit unit."""

    SCHEMA = "prefix_cache_fit"
    shared_tokens: int | None
    unit_tokens: int
    cacheable_tokens: int | None = None
    fits: bool | None = None  # None when the shared length is unknown
    method: str = ""  # tokenize | canonical estimate | unknown
    note: str = ""

    def _repr_html_(self) -> str:
        if self.fits is None:
            title = (
                "Shared prefix: unknown"
                if self.shared_tokens is None
                else (f"Shared prefix {self.shared_tokens} tokens; fit unknown")
            )
            return banner(title, self.note, "unknown")
        tone = "good" if self.fits else "bad"
        title = f"Shared prefix {self.shared_tokens} tokens → {self.cacheable_tokens} cacheable"
        detail = f"unit {self.unit_tokens} tokens ({self.method})" + (f"; {self.note}" if self.note else "")
        return banner(title, detail, tone)


def prefix_fit(shared_tokens: int | None, granularity: HitGranularity, method: str = "tokenize") -> PrefixFit:
    """How many full hit units the shared prefix holds: zero means it can never hit."""
    if shared_tokens is None:
        return PrefixFit(None, granularity.unit_tokens, method="unknown", note="shared prefix could not be measured")
    if granularity.assumed:
        return PrefixFit(
            shared_tokens,
            granularity.unit_tokens,
            None,
            None,
            method,
            f"{MISSING_CONFIG}: whether {shared_tokens} tokens reach one block cannot be told",
        )
    cacheable = granularity.cacheable(shared_tokens)
    note = "" if cacheable else f"below one unit of {granularity.unit_tokens} tokens: never a hit"
    return PrefixFit(shared_tokens, granularity.unit_tokens, cacheable, cacheable > 0, method, note)
