"""Runbook 01, evidence capture: freeze the facts of a node and a launch before touching anything.

    ev = collect_evidence(source="local" | "<bundle dir or .tar.gz>", run_dir=..., image=..., ...)
    ev = runs.load_result("<run_dir>", "evidence_capture")     # later runbooks

Collectors are modules in ``collectors/`` registered with ``registry.register``; raw artefacts are redacted by
``vllm_runbooks.redact`` before they are written. Names are imported on first use, so reading
evidence (``evidence.model``) never imports the collectors, the probe or the runner.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "COLLECTORS": "registry",
    "Context": "registry",
    "register": "registry",
    "run_bounded": "registry",
    "OK": "model",
    "PARTIAL": "model",
    "UNAVAILABLE": "model",
    "Evidence": "model",
    "Item": "model",
    "BundleSource": "sources",
    "LocalSource": "sources",
    "collect_evidence": "writer",
    "resolve_run_dir": "writer",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` only when it is asked for (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
