"""Runbook 01, evidence capture: freeze the facts of a node and a launch before touching anything.

    ev = collect_evidence(source="local" | "<bundle dir or .tar.gz>", run_dir=..., image=..., ...)
    ev = load_evidence("<run_dir>")        # later runbooks

Collectors live in a registry (``collectors.register``); raw artefacts are redacted by
``vllm_runbooks.redact`` before they are written.
"""

from .collectors import COLLECTORS, Context, register, run_bounded
from .model import OK, PARTIAL, UNAVAILABLE, Evidence, Item
from .sources import BundleSource, LocalSource
from .writer import collect_evidence, load_evidence, resolve_run_dir

__all__ = [
    "COLLECTORS",
    "Context",
    "register",
    "run_bounded",
    "OK",
    "PARTIAL",
    "UNAVAILABLE",
    "Evidence",
    "Item",
    "BundleSource",
    "LocalSource",
    "collect_evidence",
    "load_evidence",
    "resolve_run_dir",
]
