"""Runbook 04's stage: ``Config`` (the notebook's parameters) and ``run(config) -> PrefixCacheResult``.

Why: every runbook has the same shape (see :mod:`vllm_runbooks.stage`). ``run`` drives
:class:`~.check.PrefixCacheCheck` through every step in the runbook's order, bounded per step,
and returns the typed result the notebook shows part by part and saves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import Record
from .result import PrefixCacheResult


@dataclass
class Config(Record):
    """One check against one endpoint; mirrors runbook 04's documented parameters."""

    SCHEMA = "prefix_cache_config"

    endpoint: str = "http://127.0.0.1:8000"
    model: str | None = None
    api_key_env: str | None = "VLLM_API_KEY"  # NAME of the variable; the key is never stored
    requests: int = 5
    shared_prompt_tokens: int = 512
    requests_jsonl: str | None = None
    launch_command: str | None = None
    log_path: str | None = None
    evidence_dir: str | None = None
    profile: str | None = None
    retention_check: bool = False
    max_requests: int = 20
    max_seconds: float = 120.0
    request_timeout_s: float = 60.0


def run(config: Config, *, client: Any = None) -> PrefixCacheResult:
    """Inputs, enablement, granularity, experiment, mismatch, retention, verdict — in that order.

    ``client`` lets tests plug in an ``EndpointClient`` over a fake transport.
    """
    from .check import PrefixCacheCheck

    check = PrefixCacheCheck(
        config.endpoint,
        model=config.model,
        api_key_env=config.api_key_env,
        launch_command=config.launch_command,
        log_path=config.log_path,
        evidence_dir=config.evidence_dir,
        profile=config.profile,
        max_requests=config.max_requests,
        max_seconds=config.max_seconds,
        request_timeout_s=config.request_timeout_s,
        client=client,
    )
    try:
        check.inputs()
        check.enablement()
        check.granularity()
        check.experiment(requests=config.requests, shared_prompt_tokens=config.shared_prompt_tokens)
        check.fit()
        check.mismatch(config.requests_jsonl)
        check.retention(config.retention_check)
        check.decide()
        return check.result()
    finally:
        check.close()
