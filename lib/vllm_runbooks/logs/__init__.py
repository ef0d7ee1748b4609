"""Log classifier: from a vLLM / container log to a root-cause label with line-numbered evidence.

Runbook 02 calls :func:`diagnose_log` (one log) or :func:`diagnose_logs` (several); the result
records render as tables and offer ``timeline()`` (plotly). Signatures are data:
``vllm_runbooks/data/log_signatures.yaml``.
"""

from .classify import diagnose_log, diagnose_logs, diagnose_text
from .diagnosis import (
    STATUS_EMPTY,
    STATUS_OK,
    STATUS_UNREADABLE,
    LogDiagnoses,
    LogDiagnosis,
    LogFinding,
)
from .matcher import re2_available
from .signatures import LABELS, UNKNOWN, Signature, SignatureError, SignatureSet, load_signatures

__all__ = [
    "LABELS",
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
    "re2_available",
]
