"""Tool-call checking the way the Kimi vendor verifiers judge a deployment.

Why this shape: an agent breaks on a tool call whose name it does not know, whose arguments
are not JSON, or whose arguments do not match the declared parameters; and on a server that
calls a tool when told not to. So each returned call is checked against the declared JSON
Schema, the failures are counted by kind, finish reasons are tallied, and schema accuracy is
reported as ``valid / checked`` with its counts (a rate without counts hides a 1-of-1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from ..bounded import load_json
from ..client import ChatResult, ToolCall
from ..records import Record
from .model import excerpt

DEFAULT_TOOL_SCHEMA_FILE = "tool_schemas/default_tools.json"
MAX_EXAMPLES = 8
#: A tool schema file is a few KiB; a bigger one is refused rather than held in memory.
TOOL_SCHEMA_MAX_BYTES = 4 * 1024 * 1024

DEFAULT_PROMPTS = [
    "What is the weather in Paris right now?",
    "Wake me up at 6:30 tomorrow.",
    "Where is my order AB1234?",
]

DEFAULT_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok", "degraded", "down"]},
        "replicas": {"type": "integer", "minimum": 0, "maximum": 9},
    },
    "required": ["status", "replicas"],
    "additionalProperties": False,
}


@dataclass
class ToolSuite(Record):
    """The tools declared to the server, the prompts that ask for them, and a structured-output schema."""

    SCHEMA = "canary_tool_suite"
    source: str
    tools: list[dict[str, Any]]
    prompts: list[str] = field(default_factory=lambda: list(DEFAULT_PROMPTS))
    response_schema: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_RESPONSE_SCHEMA))
    tool_results: dict[str, Any] = field(default_factory=dict)  # canned results for the agent round trip

    def names(self) -> list[str]:
        """The declared tool names (a call to another name is counted as unknown)."""
        return [t["function"]["name"] for t in self.tools]

    def parameters(self, name: str) -> dict[str, Any] | None:
        """A tool's JSON schema for its arguments, or None when the tool is not declared."""
        for t in self.tools:
            if t["function"]["name"] == name:
                return t["function"].get("parameters") or {"type": "object"}
        return None


def default_tool_schema_path() -> Path:
    """The shipped default tool definitions (package data, so it works from a wheel)."""
    return Path(str(resources.files("vllm_runbooks").joinpath("data", *DEFAULT_TOOL_SCHEMA_FILE.split("/"))))


def load_tool_suite(path: str | Path | None = None) -> ToolSuite:
    """Read a tool schema file: ``{"tools": [...], "prompts": [...], "response_schema": {...}}``
    or a bare list of OpenAI tool definitions. Raises ValueError naming what is wrong."""
    p = Path(path) if path else default_tool_schema_path()
    try:
        data, _notes = load_json(p, TOOL_SCHEMA_MAX_BYTES)  # non-UTF-8 bytes replaced: names then show it
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read tool schema file {p}: {exc}") from exc
    if isinstance(data, list):
        data = {"tools": data}
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, list) or not tools:
        raise ValueError(f"{p}: expected a non-empty 'tools' list of OpenAI tool definitions")
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not fn.get("name"):
            raise ValueError(f"{p}: tools[{i}] has no function.name")
        try:
            jsonschema.validators.validator_for(fn.get("parameters") or {}).check_schema(fn.get("parameters") or {})
        except jsonschema.SchemaError as exc:
            raise ValueError(
                f"{p}: tools[{i}] ({fn['name']}) parameters is not a valid JSON Schema: {exc.message}"
            ) from exc
        except RecursionError:
            raise ValueError(f"{p}: tools[{i}] ({fn['name']}) parameters is nested too deeply") from None
    suite = ToolSuite(source=str(p), tools=tools)
    if data.get("prompts"):
        suite.prompts = [str(x) for x in data["prompts"]]
    if data.get("response_schema"):
        suite.response_schema = data["response_schema"]
    if isinstance(data.get("tool_results"), dict):
        suite.tool_results = data["tool_results"]
    return suite


@dataclass
class CallCheck(Record):
    """One returned tool call, judged; ``problem`` is None for a valid call."""

    SCHEMA = "canary_call_check"
    request: int
    mode: str  # required | named
    stream: bool
    name: str
    problem: str | None = None  # unknown_tool | invalid_json | schema | wrong_name
    detail: str = ""
    arguments: str = ""

    @property
    def valid(self) -> bool:
        """True when the call named a declared tool with arguments that validate."""
        return self.problem is None


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every jsonschema violation of ``value``, as "path: message" lines."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    out = []
    for err in sorted(validator.iter_errors(value), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in err.path) or "(root)"
        out.append(f"{where}: {err.message}")
    return out


def check_call(
    call: ToolCall, suite: ToolSuite, *, request: int, mode: str, stream: bool, expected: str | None = None
) -> CallCheck:
    """Judge one call: known name, JSON arguments, arguments valid against the declared parameters."""
    check = CallCheck(request, mode, stream, call.name, arguments=excerpt(call.arguments, 300))
    params = suite.parameters(call.name)
    if params is None:
        check.problem, check.detail = "unknown_tool", f"tool {call.name!r} was not declared ({suite.names()})"
        return check
    if expected and call.name != expected:
        check.problem, check.detail = "wrong_name", f"asked for {expected!r}, got {call.name!r}"
        return check
    value, err = call.parsed_arguments()
    if err is not None:
        check.problem, check.detail = "invalid_json", err
        return check
    errors = schema_errors(value, params)
    if errors:
        check.problem, check.detail = "schema", "; ".join(errors[:3])
    return check


@dataclass
class ToolAccuracy(Record):
    """Counts and rates over all forced requests and the no-call probes."""

    SCHEMA = "canary_tool_accuracy"
    threshold: float
    requests: int = 0  # forced tool-call requests sent
    answered: int = 0  # of those, answered with HTTP 200 and a complete body / stream
    request_failures: int = 0
    failure_messages: list[str] = field(default_factory=list)  # distinct, bounded
    calls: int = 0  # tool calls returned and checked
    valid_calls: int = 0
    unknown_tool_names: int = 0
    invalid_json: int = 0
    schema_errors: int = 0
    wrong_name: int = 0
    missed_calls: int = 0  # forced request answered without any tool call
    finish_reasons: dict[str, int] = field(default_factory=dict)
    finish_reason_mismatch: int = 0  # tool_choice "required" answered without finish_reason tool_calls
    by_mode: dict[str, dict[str, int]] = field(default_factory=dict)
    no_call_probes: int = 0
    no_call_answered: int = 0
    unexpected_calls: int = 0
    examples: list[str] = field(default_factory=list)  # the first problems, verbatim
    aborted: str | None = None
    checks: list[CallCheck] = field(default_factory=list)

    @property
    def schema_accuracy(self) -> float | None:
        """Valid calls over checked calls; None when no call was checked (never 100% of nothing)."""
        return round(self.valid_calls / self.calls, 4) if self.calls else None

    @property
    def call_rate(self) -> float | None:
        """Forced requests answered with at least one call, over forced requests answered."""
        return round((self.answered - self.missed_calls) / self.answered, 4) if self.answered else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON including the derived rates, so scraps carry them."""
        out = super().to_dict()
        out["schema_accuracy"] = self.schema_accuracy
        out["call_rate"] = self.call_rate
        return out

    def add_forced(
        self,
        index: int,
        mode: str,
        stream: bool,
        result: ChatResult,
        suite: ToolSuite,
        expected: str | None,
        failure_text: str | None,
    ) -> None:
        """Fold one forced request's result into the tallies."""
        self.requests += 1
        key = f"{mode}/{'stream' if stream else 'plain'}"
        slot = self.by_mode.setdefault(key, {"requests": 0, "answered": 0, "calls": 0, "valid": 0})
        slot["requests"] += 1
        if not result.ok:
            self.request_failures += 1
            if failure_text and failure_text not in self.failure_messages and len(self.failure_messages) < MAX_EXAMPLES:
                self.failure_messages.append(failure_text)
            return
        self.answered += 1
        slot["answered"] += 1
        reason = result.finish_reason or "none"
        self.finish_reasons[reason] = self.finish_reasons.get(reason, 0) + 1
        if mode == "required" and reason != "tool_calls":
            self.finish_reason_mismatch += 1
        if not result.tool_calls:
            self.missed_calls += 1
            self._example(
                f"request {index} ({key}): no tool call; finish_reason={reason}; "
                f"content={excerpt(result.content, 120)!r}"
            )
            return
        for call in result.tool_calls:
            check = check_call(call, suite, request=index, mode=mode, stream=stream, expected=expected)
            self.checks.append(check)
            self.calls += 1
            slot["calls"] += 1
            if check.valid:
                self.valid_calls += 1
                slot["valid"] += 1
                continue
            counter = {
                "unknown_tool": "unknown_tool_names",
                "invalid_json": "invalid_json",
                "schema": "schema_errors",
                "wrong_name": "wrong_name",
            }[check.problem or "schema"]
            setattr(self, counter, getattr(self, counter) + 1)
            self._example(f"request {index} ({key}) {check.problem}: {check.detail}; arguments={check.arguments}")

    def add_no_call_probe(self, label: str, result: ChatResult, failure_text: str | None) -> None:
        """Count a request told not to call a tool; a call made anyway is a failure."""
        self.no_call_probes += 1
        if not result.ok:
            self.request_failures += 1
            if failure_text and failure_text not in self.failure_messages and len(self.failure_messages) < MAX_EXAMPLES:
                self.failure_messages.append(f"{label}: {failure_text}")
            return
        self.no_call_answered += 1
        if result.tool_calls or result.finish_reason == "tool_calls":
            self.unexpected_calls += 1
            names = [c.name for c in result.tool_calls]
            self._example(f"{label}: called {names} (finish_reason={result.finish_reason}) when told not to")

    def _example(self, text: str) -> None:
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(text)

    def problems(self) -> list[str]:
        """Why this tally fails the threshold; empty when it passes."""
        out: list[str] = []
        if self.aborted:
            out.append(self.aborted)
        if self.request_failures:
            first = self.failure_messages[0] if self.failure_messages else "?"
            out.append(f"{self.request_failures} of {self.requests + self.no_call_probes} requests failed ({first})")
        if self.answered and not self.calls:
            out.append(f"no tool calls in {self.answered} forced answers")
        acc = self.schema_accuracy
        if acc is not None and acc < self.threshold:
            out.append(
                f"schema accuracy {acc:.1%} ({self.valid_calls}/{self.calls}) below {self.threshold:.0%}: "
                f"{self.schema_errors} schema, {self.invalid_json} invalid JSON, "
                f"{self.unknown_tool_names} unknown tool, {self.wrong_name} wrong name"
            )
        rate = self.call_rate
        if rate is not None and rate < self.threshold:
            out.append(f"only {self.answered - self.missed_calls}/{self.answered} forced requests returned a call")
        if self.unexpected_calls:
            out.append(f"{self.unexpected_calls} of {self.no_call_answered} no-call probes called a tool")
        if not self.answered and not self.request_failures:
            out.append("no forced request was answered")
        return out

    def summary(self) -> str:
        """One line for the step's reason: accuracy, calls checked, failures by kind."""
        acc = self.schema_accuracy
        acc_txt = f"{acc:.1%}" if acc is not None else "n/a"
        return (
            f"schema accuracy {acc_txt} ({self.valid_calls}/{self.calls} calls valid) over "
            f"{self.answered}/{self.requests} forced requests; finish reasons {dict(Counter(self.finish_reasons))}; "
            f"no-call probes {self.no_call_answered - self.unexpected_calls}/{self.no_call_probes} clean"
        )
