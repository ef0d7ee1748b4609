"""Runbook 05, the staged load check, and the load engine under it.

    from vllm_runbooks.load import LoadSpec, run_load
    run = run_load("http://127.0.0.1:8000", payloads, LoadSpec(requests=200, concurrency=16))

Stages live in a registry (``registry.register``; built-ins in ``builtin_stages``), like the canary's steps.
"""

from .engine import Live, LoadRun, LoadSpec, Payload, Target, arrival_offsets, run_load
from .errors import ErrorClass, classify
from .records import RequestRecord, Summary, summarise

__all__ = [
    "ErrorClass",
    "Live",
    "LoadRun",
    "LoadSpec",
    "Payload",
    "RequestRecord",
    "Summary",
    "Target",
    "arrival_offsets",
    "classify",
    "run_load",
    "summarise",
]
