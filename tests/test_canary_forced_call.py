"""The canary's forced tool call: one helper builds the request parameters for steps 5, 6 and 6.5."""

from __future__ import annotations

import inspect

from vllm_runbooks.canary.steps import agent_retry, tools
from vllm_runbooks.canary.steps.tools import TOOL_MAX_TOKENS, forced_call
from vllm_runbooks.canary.toolcheck import load_tool_suite


def test_forced_call_is_required_or_named_one_call_bounded() -> None:
    suite = load_tool_suite(None)
    required = forced_call(suite)
    assert required["tool_choice"] == "required" and required["tools"] == suite.tools
    assert required["parallel_tool_calls"] is False and required["max_tokens"] == TOOL_MAX_TOKENS
    name = suite.names()[0]
    named = forced_call(suite, name)
    assert named["tool_choice"] == {"type": "function", "function": {"name": name}}
    assert {k: v for k, v in named.items() if k != "tool_choice"} == {
        k: v for k, v in required.items() if k != "tool_choice"
    }


def test_the_steps_build_their_forced_calls_with_the_helper_only() -> None:
    for module in (tools, agent_retry):
        source = inspect.getsource(module)
        assert "forced_call(suite" in source
        assert '"tool_choice": "required"' not in source and 'tool_choice="required"' not in source
