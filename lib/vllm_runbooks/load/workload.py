"""Request bodies for the load check: short, near-context, same-prefix, image and tool requests.

Why generated text with a per-run nonce: a prompt the server has seen would be served from the
prefix cache and make the load lighter than real traffic; the nonce opens every prompt (except
where sharing a prefix is the point), and the text is deterministic for a given seed.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..prefix_cache.experiment import DEFAULT_TOOLS, build_spec, filler_text
from .engine import Payload
from .limits import require

#: words per token for the generated filler when the server cannot tokenize (its default).
WORDS_PER_TOKEN = 1 / 1.3


def chat_body(
    model: str,
    content: Any,
    max_tokens: int,
    *,
    system: str | None = None,
    ignore_eos: bool = True,
    stream: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A streaming chat request with usage in the last chunk (vLLM's ``stream_options``)."""
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": content})
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if ignore_eos:
        body["ignore_eos"] = True  # vLLM: generate exactly max_tokens, so load is what was asked for
    body.update(extra)
    return body


def completions_body(model: str, prompt: str, max_tokens: int, *, ignore_eos: bool = True) -> dict[str, Any]:
    """A streaming completions request with usage in the last chunk."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if ignore_eos:
        body["ignore_eos"] = True
    return body


def short_prompts(
    model: str,
    *,
    api: str = "chat",
    input_words: int = 24,
    max_tokens: int = 16,
    nonce: str | None = None,
    ignore_eos: bool = True,
    count: int = 64,
) -> list[Payload]:
    """``count`` distinct prompts of ``input_words`` words; the engine cycles through them.

    Sizes outside ``limits.LIMITS`` raise ValueError first: 10**8 words took a minute and 900 MB."""
    require("input_words", input_words)
    require("max_tokens", max_tokens)
    require("requests", count, table="ENGINE_LIMITS")
    nonce = nonce or secrets.token_hex(4)
    out = []
    for i in range(max(1, count)):
        text = f"Run {nonce} request {i}. {filler_text(input_words, f'{nonce}-{i}')}"
        if api == "chat":
            out.append(Payload(chat_body(model, text, max_tokens, ignore_eos=ignore_eos), "chat"))
        else:
            out.append(Payload(completions_body(model, text, max_tokens, ignore_eos=ignore_eos), "completions"))
    return out


def long_prompt(model: str, prompt_tokens: int, max_tokens: int, *, tokens_per_word: float = 1.3) -> Payload:
    """One chat request of about ``prompt_tokens`` tokens (near the served context)."""
    nonce = secrets.token_hex(4)
    words = max(1, int(prompt_tokens / max(0.1, tokens_per_word)))
    return Payload(chat_body(model, f"Run {nonce}. {filler_text(words, nonce)}", max_tokens), "chat")


def same_prefix_prompts(client: Any, model: str, shared_tokens: int, count: int, max_tokens: int) -> list[Payload]:
    """``count`` requests sharing a system prompt of about ``shared_tokens`` tokens (the prefix-cache
    experiment's builder), only the tail differing."""
    spec = build_spec(client, shared_tokens, count, tools=[], max_tokens=max_tokens)
    return [
        Payload(
            {
                "model": model,
                "messages": spec.messages(i),
                "max_tokens": max_tokens,
                "temperature": 0,
                "stream": True,
                "stream_options": {"include_usage": True},
                "ignore_eos": True,
            },
            "chat",
        )
        for i in range(max(1, count))
    ]


def image_payload(model: str, max_tokens: int) -> Payload:
    """A chat request with a generated PNG (the canary's image), streamed."""
    from ..canary.png import make_png, png_data_url

    content = [
        {"type": "text", "text": "What colour is the square in this image? One word."},
        {"type": "image_url", "image_url": {"url": png_data_url(make_png())}},
    ]
    return Payload(chat_body(model, content, max_tokens, ignore_eos=False), "chat")


def tool_payload(model: str, max_tokens: int = 160) -> Payload:
    """A chat request that must call a tool (``tool_choice: required``), streamed."""
    body = chat_body(
        model,
        "Check the status of node-7 with the tool.",
        max_tokens,
        ignore_eos=False,
        tools=DEFAULT_TOOLS,
        tool_choice="required",
    )
    return Payload(body, "chat")


__all__ = [
    "chat_body",
    "completions_body",
    "image_payload",
    "long_prompt",
    "same_prefix_prompts",
    "short_prompts",
    "tool_payload",
]
