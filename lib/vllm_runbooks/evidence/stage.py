"""Runbook 01's stage: ``Config`` (the notebook's parameters) and ``run(config) -> Evidence``.

Why: every runbook has the same shape (see :mod:`vllm_runbooks.stage`), so the notebook is
"build the config, run, show parts of the result, glue", and tests run it without Jupyter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import Record
from .model import Evidence


@dataclass
class Config(Record):
    """What to capture and from where; mirrors runbook 01's documented parameters."""

    SCHEMA = "evidence_config"

    source: str = "local"  # "local", or a bundle directory / .tar.gz
    run_dir: str | None = None
    image: str | None = None
    container: str | None = None
    log_paths: list[str] = field(default_factory=list)
    launch_command: str | None = None
    pid: int | None = None
    endpoint: str | None = None
    probe_image: bool = False
    collector_timeout_s: float = 60.0
    kernel_log_hours: float = 72.0
    expected_gpu_count: int = 0  # 0: tensor × pipeline × data parallel size of the launch command


def run(config: Config) -> Evidence:
    """Collect every registered collector's facts into ``<run_dir>/evidence/`` (never raises for a gap)."""
    from .writer import collect_evidence

    return collect_evidence(
        source=config.source,
        run_dir=config.run_dir,
        image=config.image,
        container=config.container,
        log_paths=config.log_paths,
        launch_command=config.launch_command,
        pid=config.pid,
        endpoint=config.endpoint,
        probe_image=config.probe_image,
        collector_timeout_s=config.collector_timeout_s,
        kernel_log_hours=config.kernel_log_hours,
        expected_gpu_count=config.expected_gpu_count or None,
    )
