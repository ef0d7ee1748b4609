"""Error classes for failed load requests: the node's memory vs communication vs load vs the request.

Why classes and not status codes: "HTTP 500" says nothing about whether to resize the KV cache,
fix NCCL, or add replicas. The rules are data (``data/load_error_classes.yaml``) matched on the
status and the server's error body; requests that got no reply are classed by what the client saw.
When a server log is given, the lines it gained during a stage refine this further (``serverlog``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


class ErrorClass(enum.StrEnum):
    """What a failed request means for the node: memory, communication, load, the request, the client."""

    OOM = "oom"
    COMMUNICATION = "communication"
    TIMEOUT = "timeout"
    QUEUE_FULL = "queue_full"
    CONTEXT_LENGTH = "context_length"
    BAD_REQUEST = "bad_request"
    SERVER_ERROR = "server_error"
    CONNECTION = "connection"
    CLIENT_SIDE = "client_side"


#: transport failure kinds (``transport.Sink.on_fail``) → class, when no HTTP status arrived.
TRANSPORT_CLASSES = {
    "timeout": ErrorClass.TIMEOUT,
    "connection": ErrorClass.CONNECTION,
    "refused": ErrorClass.CONNECTION,
    "protocol": ErrorClass.SERVER_ERROR,
    "too_large": ErrorClass.SERVER_ERROR,
    "malformed": ErrorClass.SERVER_ERROR,
    "incomplete": ErrorClass.SERVER_ERROR,
    "stream_error": ErrorClass.SERVER_ERROR,
    "client": ErrorClass.CLIENT_SIDE,
}


@dataclass(frozen=True)
class Rule:
    """One data rule: statuses (any when empty) and a body pattern (any when None)."""

    cls: ErrorClass
    statuses: frozenset[int]
    body: re.Pattern[str] | None


@dataclass(frozen=True)
class ErrorRules:
    """The ordered rules and each class's one-line meaning."""

    rules: tuple[Rule, ...]
    meanings: dict[str, str]

    def classify(self, status: int | None, body: str = "", transport_kind: str | None = None) -> ErrorClass:
        """The class of one failed request. The body is tried first (an NCCL message inside a
        mid-stream error or a 500 is communication whatever the status)."""
        for rule in self.rules:
            if rule.statuses and status not in rule.statuses:
                continue
            if rule.body is not None and not (body and rule.body.search(body)):
                continue
            if not rule.statuses and rule.body is None:
                continue
            return rule.cls
        if transport_kind is not None and transport_kind in TRANSPORT_CLASSES:
            return TRANSPORT_CLASSES[transport_kind]
        if status is not None and status >= 500:
            return ErrorClass.SERVER_ERROR
        if status is not None and status >= 400:
            return ErrorClass.BAD_REQUEST
        return ErrorClass.CLIENT_SIDE


def parse_rules(data: Any) -> ErrorRules:
    """Build rules from the YAML structure; a malformed file raises ValueError naming the rule."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise ValueError("error-class rules: a mapping with a 'rules' list is required")
    rules = []
    for i, item in enumerate(data["rules"]):
        try:
            cls = ErrorClass(item["class"])
            statuses = frozenset(int(s) for s in item.get("status") or [])
            body = re.compile(item["body"], re.I) if item.get("body") else None
        except (KeyError, TypeError, ValueError, re.error) as exc:
            raise ValueError(f"error-class rule {i}: {exc}") from exc
        rules.append(Rule(cls, statuses, body))
    meanings = {str(k): str(v) for k, v in (data.get("classes") or {}).items()}
    return ErrorRules(tuple(rules), meanings)


@lru_cache(maxsize=4)
def load_rules(path: str | None = None) -> ErrorRules:
    """The packaged rules (or a file of the same shape)."""
    if path is None:
        text = resources.files("vllm_runbooks").joinpath("data/load_error_classes.yaml").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return parse_rules(yaml.safe_load(text))


def classify(status: int | None, body: str = "", transport_kind: str | None = None) -> ErrorClass:
    """Classify with the packaged rules."""
    return load_rules().classify(status, body, transport_kind)


__all__ = ["ErrorClass", "ErrorRules", "classify", "load_rules", "parse_rules"]
