"""Every numeric load setting's allowed range, in one place: runbook 05's ``Config``, the engine's
``LoadSpec``, the workload builder and ``vllm-runbooks load`` all check against these tables.

Why ceilings at all: a typo (``--input-words 100000000``, ``max_requests: 10000000``) must not
turn a readiness check into an hour of prompt building or a week of load, and ``nan`` / ``inf``
must never reach the engine (``nan`` is no deadline at all, and the gamma sampler loops forever
on it). A run needing more than these is a benchmark, not a readiness check. Stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: runbook 05's ``Config`` fields, (low, high) inclusive.
LIMITS: dict[str, tuple[float, float]] = {
    "max_requests": (1, 100_000),
    "max_seconds": (1, 6 * 3600),
    "stage_seconds": (1, 3600),
    "request_timeout_s": (0.1, 3600),
    "max_concurrency": (1, 1024),
    "ramp_factor": (1.25, 16),
    "level_requests": (1, 10_000),
    "level_seconds": (1, 3600),
    "level_warmup_requests": (0, 1000),
    "min_requests_for_stop": (1, 10_000),
    "max_tokens": (1, 32_768),
    "input_words": (1, 100_000),
    "long_context_tokens": (16, 4_000_000),
    "context_margin_tokens": (0, 1_000_000),
    "same_prefix_tokens": (1, 1_000_000),
    "same_prefix_requests": (1, 1000),
    "image_tools_requests": (0, 1000),
    "metrics_interval_s": (0, 3600),
    "saturation_window": (2, 100),
    "saturation_slope": (0, 100),
    "saturation_max_efficiency": (0, 1),
    "kv_stop_fraction": (0, 1),
    "min_knee_concurrency": (1, 1024),
    "max_error_rate": (0, 1),
    "slo_ttft_ms": (1, 3_600_000),
    "slo_tpot_ms": (0.01, 3_600_000),
    "allreduce_timeout_s": (1, 3600),
    "restart_count": (0, 20),
    "max_restarts": (0, 20),
    "restart_timeout_s": (1, 3600),
    "seed": (0, 2**32 - 1),
}

#: the engine's ``LoadSpec`` fields. Same ceilings as runbook 05's; lower time floors, because a
#: stage's share of the global caps may be under a second.
ENGINE_LIMITS: dict[str, tuple[float, float]] = {
    "requests": (0, LIMITS["max_requests"][1]),
    "concurrency": (1, LIMITS["max_concurrency"][1]),
    "rate": (0.001, 10_000),  # requests/s; None is the closed loop
    "gamma_shape": (0.01, 100),
    "seed": LIMITS["seed"],
    "warmup": (0, LIMITS["max_requests"][1]),
    "max_seconds": (0.01, LIMITS["max_seconds"][1]),
    "request_timeout_s": (0.01, LIMITS["request_timeout_s"][1]),
}

#: ``vllm-runbooks load``'s numeric flags → the setting whose range they take (runbook 05's where it
#: has one, so the command and the notebook refuse the same values).
CLI_FLAGS: dict[str, str] = {
    "--requests": "max_requests",
    "--concurrency": "max_concurrency",
    "--max-tokens": "max_tokens",
    "--input-words": "input_words",
    "--max-seconds": "max_seconds",
    "--timeout": "request_timeout_s",
    "--rate": "rate",
    "--gamma-shape": "gamma_shape",
    "--seed": "seed",
    "--warmup": "warmup",
}

#: settings that may be None (off): ``rate`` (closed loop), ``long_context_tokens``, ``slo_tpot_ms``.
OPTIONAL = frozenset({"rate", "long_context_tokens", "slo_tpot_ms"})


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def problem(name: str, value: Any, *, label: str | None = None, table: str = "LIMITS", note: str = "") -> str | None:
    """Why ``value`` is not allowed for ``name`` (a sentence naming ``label``), or None when it is."""
    low, high = (LIMITS if table == "LIMITS" else ENGINE_LIMITS)[name]
    shown = label or name
    if value is None and name in OPTIONAL:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{shown} must be a number within {_num(low)}..{_num(high)}, not {value!r}"
    if not math.isfinite(value) or not low <= value <= high:
        return f"{shown}={value!r} is outside its limits {_num(low)}..{_num(high)} (load.limits.{table}{note})"
    return None


def problems(values: Mapping[str, Any], table: str = "LIMITS") -> list[str]:
    """The sentences for every setting of ``values`` outside ``table`` (names not in it are skipped)."""
    limits = LIMITS if table == "LIMITS" else ENGINE_LIMITS
    out = []
    for name in limits:
        if name in values:
            p = problem(name, values[name], table=table)
            if p:
                out.append(p)
    return out


def require(name: str, value: Any, table: str = "LIMITS") -> None:
    """Raise ValueError unless ``value`` is inside ``name``'s range (the builders' own guard)."""
    p = problem(name, value, table=table)
    if p:
        raise ValueError(p)


def cli_problems(args: Any) -> list[str]:
    """Every numeric flag of ``vllm-runbooks load`` outside its range, naming the flag."""
    out = []
    for flag, name in CLI_FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        table = "LIMITS" if name in LIMITS else "ENGINE_LIMITS"
        note = f", as runbook 05's {name}" if table == "LIMITS" else ""
        p = problem(name, value, label=flag, table=table, note=note)
        if p:
            out.append(p)
    if not out and args.warmup >= args.requests:
        out.append(f"--warmup={args.warmup} leaves none of --requests={args.requests} to measure")
    return out


__all__ = ["CLI_FLAGS", "ENGINE_LIMITS", "LIMITS", "OPTIONAL", "cli_problems", "problem", "problems", "require"]
