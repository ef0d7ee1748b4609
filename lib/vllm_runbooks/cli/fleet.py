"""``vllm-runbooks fleet``: runbook 07 — survey every node (Ray, or folders of bundles), plan the rollout.

Runs ``runbooks/07_fleet_survey.ipynb`` into a run directory (the executed notebook and its
offline HTML are the evidence the platform owner approves), then prints the counts, the canary
and the unanswered nodes. With ``--ray-address`` Ray must be installed (the optional extra
``[fleet]``); without it the command says how to install it and exits ``REFUSED`` before anything
runs. The CLI itself never imports Ray.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from . import add_runs_dir_option, exit_codes

ORDER = 70
INSTALL_HINT = "Ray is not installed: pip install 'vllm-runbooks[fleet]' (or: pip install ray)"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``fleet``."""
    p = sub.add_parser(
        "fleet",
        help="survey every node of a Ray cluster (or folders of bundles) and plan a staged rollout",
        description=__doc__.splitlines()[0],
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--ray-address", help="Ray cluster: auto, HOST:6379 or ray://HOST:10001 (needs ray)")
    source.add_argument(
        "--bundles",
        nargs="+",
        metavar="DIR",
        help="folders holding one bundle per node (sub-directory or .tar.gz; written by `probe`)",
    )
    p.add_argument("--image-cuda", default="13.0", help="CUDA of the target image, e.g. 13.0 (default 13.0)")
    p.add_argument("--profile", default="kimi_k3", help="model profile (kimi_k3, generic_vllm); default kimi_k3")
    p.add_argument("--image-ref", help="the target image reference, for the record")
    p.add_argument("--require-cuda", help="the target image's NVIDIA_REQUIRE_CUDA")
    p.add_argument("--compat-libs", action="store_true", help="the target launch uses the image's cuda-compat libs")
    p.add_argument("--node-timeout", type=float, default=120.0, help="seconds each node has to answer (Ray)")
    p.add_argument("--probe-image", help="image to docker-inspect on every node (Ray)")
    p.add_argument("--probe-container", help="container to inspect on every node (Ray)")
    p.add_argument("--few-nodes", type=int, default=3, help="nodes in the stage after the canary (default 3)")
    p.add_argument("--wave-size", type=int, default=0, help="nodes per wave (default: a quarter of the rest)")
    p.add_argument("--run-dir", help="run directory (default: a new <runs dir>/<timestamp>-<host>-<id>/)")
    add_runs_dir_option(p)
    p.add_argument("--no-progress", action="store_true", help="hide papermill's cell progress bar")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_fleet)


def ray_available() -> bool:
    """Whether Ray can be imported here, without importing it."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def cmd_fleet(args: argparse.Namespace) -> int:
    """Execute runbook 07; REFUSED without Ray for a Ray survey, FAILED when a cell raised."""
    if args.ray_address and not ray_available():
        print(f"vllm-runbooks fleet: {INSTALL_HINT}", file=sys.stderr)
        return exit_codes.REFUSED
    from ..execution.runner import run_runbook

    params = {
        "ray_address": args.ray_address,
        "bundles": list(args.bundles or []),
        "image_cuda": str(args.image_cuda),
        "profile": args.profile,
        "image_ref": args.image_ref,
        "nvidia_require_cuda": args.require_cuda,
        "compat_libs": bool(args.compat_libs),
        "node_timeout_s": float(args.node_timeout),
        "probe_image": args.probe_image,
        "probe_container": args.probe_container,
        "few_nodes": int(args.few_nodes),
        "wave_size": int(args.wave_size),
    }
    run = run_runbook("fleet_survey", params, args.run_dir, progress=not args.no_progress)
    if args.format == "json":
        print(run.to_json())
    else:
        from .run import summarise

        print(summarise([run]))
        print(_fleet_lines(run.run_dir))
    return exit_codes.OK if run.status == "ok" else exit_codes.FAILED


def _fleet_lines(run_dir: str) -> str:
    """Counts, canary and unanswered nodes from the saved result ('' when there is none)."""
    from ..execution.runs import load_result

    try:
        result = load_result(run_dir, "fleet_survey")
    except (FileNotFoundError, ValueError):
        return ""
    f = result.headline().figures
    lines = [
        f"nodes: {f['nodes_surveyed']} surveyed, {f['answered']} answered, {f['unanswered']} unanswered",
        "verdicts: " + ", ".join(f"{k}={v}" for k, v in f["verdicts"].items()),
        f"ready now: {f['ready']}; need the driver upgrade: {f['need_driver_upgrade']}; canary: {f['canary'] or '—'}",
    ]
    lines.append("hardware: " + (", ".join(f"{k}={v}" for k, v in result.hardware_counts().items()) or "—"))
    lines += [f"  unanswered {n.node}: {n.reason}" for n in result.unanswered]
    lines += [
        f"  held back {h.get('node')} ({h.get('hardware')}, fit {h.get('fit')}): {h.get('reason')}"[:300]
        for h in result.held_back
    ]
    return "\n".join(lines)
