"""Parse a vLLM launch command the way vLLM's argparse would see it.

Why: the launch lint must read `--flag=value`, `--flag value`, short aliases (`-tp 8`) and both
entry points (`vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server ...`) or it
would report flags as missing that are in fact set.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from vllm_runbooks.records import Record

# Short aliases as vLLM's arg parser defines them.
ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-dpl": "--data-parallel-size-local",
    "-dcp": "--decode-context-parallel-size",
    "-ep": "--enable-expert-parallel",
    "-n": "--nnodes",
    "-r": "--node-rank",
    "-q": "--quantization",
}
# Flags that take no value (store_true style). --enable-*/--disable-*/--no-* are treated alike.
BOOLEAN = {
    "--trust-remote-code",
    "--headless",
    "--data-parallel-hybrid-lb",
    "--data-parallel-external-lb",
    "--enforce-eager",
    "--enable-auto-tool-choice",
    "--enable-expert-parallel",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enable-prompt-tokens-details",
    "--disable-log-requests",
    "--disable-log-stats",
    "--kv-cache-metrics",
}
_ENTRY_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server", "vllm.entrypoints.cli.main")


def _is_boolean(flag: str) -> bool:
    return flag in BOOLEAN or flag.startswith(("--enable-", "--disable-", "--no-"))


@dataclass
class ParsedLaunch(Record):
    """A launch command split into entry point, model and flags (last occurrence wins)."""

    SCHEMA = "parsed_launch"
    entry: str | None = None  # "vllm serve" | "api_server" | None (bare flags, e.g. docker CMD)
    model: str | None = None
    flags: dict[str, str | bool] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)

    def has(self, flag: str) -> bool:
        """Whether the flag (any spelling or alias) was given."""
        return canonical(flag) in self.flags

    def get(self, flag: str) -> str | bool | None:
        """The flag's value (True for a bare flag), or None."""
        return self.flags.get(canonical(flag))

    def int_of(self, flag: str, default: int = 1) -> int:
        """The flag's value as an int, ``default`` when absent or not a number."""
        v = self.get(flag)
        try:
            return int(str(v)) if v not in (None, True, False) else default
        except ValueError:
            return default

    def spelled(self, flag: str) -> str:
        """How the operator wrote the flag, for findings (e.g. '-tp 8')."""
        c = canonical(flag)
        for i, tok in enumerate(self.raw):
            head = tok.split("=", 1)[0]
            if head.startswith("-") and canonical(head) == c:
                if "=" in tok or _is_boolean(c) or i + 1 >= len(self.raw):
                    return tok
                return f"{tok} {self.raw[i + 1]}"
        return flag


def canonical(flag: str) -> str:
    """One spelling per flag (aliases, underscores), so a lint rule matches however it was typed."""
    flag = ALIASES.get(flag, flag)
    if flag.startswith("--"):
        flag = "--" + flag[2:].replace("_", "-")
    return flag


def parse_launch(argv: list[str] | str | None) -> ParsedLaunch:
    """Split argv (list or shell string) into entry point, model and canonical flags."""
    if argv is None:
        return ParsedLaunch()
    tokens = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in argv]
    out = ParsedLaunch(raw=list(tokens))
    i = 0
    # Skip the program part: env assignments, python -m module, vllm serve, docker-style entrypoints.
    while i < len(tokens) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[i]):
        i += 1
    rest = tokens[i:]
    if rest and re.search(r"(^|/)python[0-9.]*$", rest[0]) and len(rest) > 2 and rest[1] == "-m":
        out.entry = "api_server" if rest[2] in _ENTRY_MODULES[:2] else rest[2]
        i += 3
        if rest[2] == "vllm.entrypoints.cli.main" and len(rest) > 3 and rest[3] == "serve":
            out.entry, i = "vllm serve", i + 1
    elif rest and re.search(r"(^|/)vllm$", rest[0]) and len(rest) > 1 and rest[1] == "serve":
        out.entry = "vllm serve"
        i += 2
    elif rest and rest[0] == "serve":  # entrypoint ["vllm"] + command ["serve", ...]
        out.entry = "vllm serve"
        i += 1
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-") and len(tok) > 1 and not re.match(r"^-\d", tok):
            head, eq, val = tok.partition("=")
            flag = canonical(head)
            if eq:
                out.flags[flag] = val
            elif (
                _is_boolean(flag)
                or i + 1 >= len(tokens)
                or (tokens[i + 1].startswith("-") and not re.match(r"^-\d", tokens[i + 1]))
            ):
                out.flags[flag] = True
            else:
                out.flags[flag] = tokens[i + 1]
                i += 1
        else:
            out.positional.append(tok)
        i += 1
    model = out.flags.get("--model")
    if isinstance(model, str):
        out.model = model
    elif out.positional:
        out.model = out.positional[0]
    return out
