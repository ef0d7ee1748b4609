"""Log classifier: from a vLLM / container log to a root-cause label with line-numbered evidence.

Runbook 02 calls :func:`diagnose_log` (one log) or :func:`diagnose_logs` (several); the result
records render as tables and offer ``timeline()`` (plotly). Signatures are data:
``vllm_runbooks/data/log_signatures.yaml``; numeric NVIDIA return codes: ``data/error_codes.yaml``.
Every source is read through :mod:`vllm_runbooks.logs.reader` (bounded, all compressions).
"""

from .classify import diagnose_log, diagnose_logs, diagnose_text
from .diagnosis import (
    CONFIDENCES,
    STATUS_EMPTY,
    STATUS_OK,
    STATUS_UNREADABLE,
    LogDiagnoses,
    LogDiagnosis,
    LogFinding,
)
from .matcher import re2_available
from .reader import LogReader, LogUnreadable, open_log
from .signatures import (
    INCONCLUSIVE,
    LABELS,
    UNKNOWN,
    Signature,
    SignatureError,
    SignatureSet,
    load_signatures,
)

__all__ = [
    "CONFIDENCES",
    "INCONCLUSIVE",
    "LABELS",
    "LogReader",
    "LogUnreadable",
    "STATUS_EMPTY",
    "STATUS_OK",
    "STATUS_UNREADABLE",
    "UNKNOWN",
    "LogDiagnoses",
    "LogDiagnosis",
    "LogFinding",
    "Signature",
    "SignatureError",
    "SignatureSet",
    "diagnose_log",
    "diagnose_logs",
    "diagnose_text",
    "load_signatures",
    "open_log",
    "re2_available",
]
