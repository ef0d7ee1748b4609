"""Launch command and environment: parameter, container, or the running process (redacted)."""

from __future__ import annotations

import re
from typing import Any

from ... import redact
from .. import parsers as P
from ..model import PARTIAL, UNAVAILABLE, Item
from ..registry import Context, register


@register("launch", "Launch command and environment", order=80)
def collect_launch(ctx: Context) -> Item:
    """The launch command (argv and flags) and its environment, from the most direct source."""
    argv: list[str] | None = None
    origin = None
    env: dict[str, str] = {}
    cont = ctx.results.get("container")
    if ctx.launch_command:
        argv, origin = P.split_command(ctx.launch_command), "parameter"
    elif cont and cont.value.get("command") is not None and cont.status != UNAVAILABLE:
        argv = list(cont.value.get("entrypoint") or []) + list(cont.value.get("command") or [])
        origin = "container"
    else:
        got = ctx.read("launch-command.txt")
        if got.data:
            argv = P.split_command(got.data.decode("utf-8", "replace"))
            if ctx.source.kind == "bundle":
                origin = "bundle"
            else:  # local: the probe read a process, the one given by pid or the vLLM it found running
                origin = "process" if ctx.opts.pid else "process (auto-detected)"
    if cont and cont.value.get("env"):
        env = dict(cont.value["env"])
    e = ctx.read("env.txt")
    env_origin = None
    if e.data:
        dump = P.parse_env_dump(e.data.decode("utf-8", "replace"))
        env_origin = "env.txt"
        for k, v in dump.items():
            env.setdefault(k, v)
    if argv is not None:
        # env assignments before the program (HF_TOKEN=… vllm serve …) belong to the environment
        while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            k, _, v = argv.pop(0).partition("=")
            env.setdefault(k, v)
        if argv and argv[0] == "env":
            argv.pop(0)
    env = redact.redact_env(env)
    argv = redact.redact_argv(argv) if argv is not None else None
    val = {
        "argv": argv,
        "command": " ".join(_q(a) for a in argv) if argv else None,
        "env": env,
        "origin": origin,
        "env_origin": env_origin or ("container" if cont and cont.value.get("env") else None),
        "flags": _flags(argv or []),
    }
    arts = ctx.artefact("launch-command.txt") + ctx.artefact("env.txt")
    if argv is None:
        return Item(
            PARTIAL if env else UNAVAILABLE,
            "no launch command: give launch_command, a container, or a bundle launch-command.txt",
            val,
            arts,
        )
    return Item.ok(val, arts)


def _q(a: str) -> str:
    """Quote one argument only when a shell would need it (the command reads as typed)."""
    import shlex

    return a if re.fullmatch(r"[\w@%+=:,./<>-]+", a) else shlex.quote(a)


def _flags(argv: list[str]) -> dict[str, Any]:
    """``--tensor-parallel-size 8`` / ``-tp 8`` / ``--x=y`` / bare ``--flag`` → {name: value|True}."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and len(a) > 1 and not re.match(r"^-\d", a):
            name, eq, v = a.lstrip("-").partition("=")
            if eq:
                out[name] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                out[name] = argv[i + 1]
                i += 1
            else:
                out[name] = True
        i += 1
    return out
