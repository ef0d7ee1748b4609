"""``vllm-runbooks probe``: write an evidence bundle, or the single-file probe for a broken node."""

from __future__ import annotations

import argparse
import sys

from .. import probe  # stdlib only: the probe is copied onto nodes where nothing is installed
from . import exit_codes

ORDER = 15


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``probe --out DIR`` (and ``probe --write-script PATH``) to the CLI."""
    p = subparsers.add_parser(
        "probe",
        help="capture this node's evidence into a bundle directory (redacted)",
        description="Capture nvidia-smi, NVML-free driver facts, docker/toolkit, image and container "
        "inspect, logs and env into a bundle (docs/BUNDLE.md). With --write-script, write a "
        "self-contained stdlib-only probe to copy onto a node where nothing can be installed.",
    )
    p.add_argument("--write-script", metavar="PATH", help="write the single-file probe (redact.py inlined) and exit")
    probe.build_parser(p)
    for action in p._actions:  # --out is not needed with --write-script
        if action.dest == "out":
            action.required = False
    p.set_defaults(func=_cmd_probe)


def _cmd_probe(args: argparse.Namespace) -> int:
    """Write the probe script, or run the probe into ``--out`` (its own codes: 0 ok, 2 refused)."""
    if args.write_script:
        path = probe.write_script(args.write_script)
        print(f"wrote {path}: copy it to the node and run `python3 {path.name} --out DIR`")
        return exit_codes.OK
    if not args.out:
        print("probe: --out DIR is required (or --write-script PATH)", file=sys.stderr)
        return exit_codes.REFUSED
    return probe.run_cli(args)
