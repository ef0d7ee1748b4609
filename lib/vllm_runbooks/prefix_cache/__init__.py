"""Prefix-cache check (runbook 04): is it on, can it hit, does it hit, and why not.

Steps, each a self-displaying record: ``check_enablement`` (every source, do they agree),
``hit_granularity`` / ``prefix_fit`` (smallest possible hit vs the shared prefix),
``run_experiment`` (N requests, shared prefix, varied tail, counter deltas), ``analyse_jsonl``
(where real requests stop sharing), ``run_retention`` (evicted before reuse?), and ``decide``
(verdict from ``VERDICTS``). ``PrefixCacheCheck`` runs them against one endpoint for the runbook.
"""

from .check import PrefixCacheCheck
from .experiment import (
    CounterDeltas,
    ExperimentResult,
    ExperimentSpec,
    RequestObservation,
    build_spec,
    counter_deltas,
    run_experiment,
)
from .gpu import GpuMemory, gpu_memory
from .granularity import HitGranularity, PrefixFit, hit_granularity, prefix_fit
from .inputs import CheckInputs
from .mismatch import (
    COMPONENTS,
    FirstDifference,
    MismatchReport,
    analyse_jsonl,
    analyse_requests,
    first_difference,
    load_requests,
)
from .result import FIGURES, PrefixCacheResult
from .retention import RetentionResult, run_retention
from .sources import Enablement, SourceReading, check_enablement, load_launch_and_log
from .verdict import VERDICTS, Verdict, decide

__all__ = [
    "COMPONENTS",
    "FIGURES",
    "VERDICTS",
    "CheckInputs",
    "CounterDeltas",
    "Enablement",
    "ExperimentResult",
    "ExperimentSpec",
    "FirstDifference",
    "GpuMemory",
    "HitGranularity",
    "MismatchReport",
    "PrefixCacheCheck",
    "PrefixCacheResult",
    "PrefixFit",
    "RequestObservation",
    "RetentionResult",
    "SourceReading",
    "Verdict",
    "analyse_jsonl",
    "analyse_requests",
    "build_spec",
    "check_enablement",
    "counter_deltas",
    "decide",
    "first_difference",
    "gpu_memory",
    "hit_granularity",
    "load_launch_and_log",
    "load_requests",
    "prefix_fit",
    "run_experiment",
    "run_retention",
]
