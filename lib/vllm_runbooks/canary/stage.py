"""Runbook 03's stage: ``Config`` (= :class:`CanaryConfig`) and ``run(config) -> CanaryReport``.

Why: every runbook has the same shape (see :mod:`vllm_runbooks.stage`); the canary's config
record already mirrored runbook 03's parameters, so it is the stage's ``Config``.
"""

from __future__ import annotations

from .model import CanaryConfig, CanaryReport

#: runbook 03's parameters, typed.
Config = CanaryConfig


def run(config: CanaryConfig) -> CanaryReport:
    """Run the registered steps in order against the endpoint and judge them (never raises)."""
    from .registry import run_canary

    return run_canary(config)
