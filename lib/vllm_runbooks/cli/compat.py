"""`vllm-runbooks check-compat`: the compatibility verdict from flags or a run's evidence."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from . import exit_codes

if TYPE_CHECKING:
    from ..compat import CompatInputs

ORDER = 40
#: ``compat.inputs.BRAND_CLASSES``, spelled out so building the parser does not import compat
#: (a test keeps the two equal).
BRAND_CLASSES = ("datacenter", "professional", "geforce")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add `check-compat` to the main CLI's subparsers; the handler is in defaults as `func`."""
    p = subparsers.add_parser(
        "check-compat",
        help="container CUDA vs host driver vs GPU: verdict with sources",
        description="Decide whether an image's CUDA runs on this driver/GPU. Flags override "
        "values read from --evidence.",
    )
    p.add_argument("--image-cuda", help="image CUDA major.minor[.patch], e.g. 13.0 or 13.0.1, or a vLLM tag cu130")
    p.add_argument("--driver", help="full host driver version as nvidia-smi prints it, e.g. 575.57.08")
    p.add_argument("--gpu", help="GPU name as nvidia-smi prints it, e.g. 'NVIDIA H200'")
    p.add_argument("--compute-capability", help="e.g. 9.0 (derived from --gpu when omitted)")
    p.add_argument("--brand", choices=BRAND_CLASSES, help="brand class (derived from --gpu when omitted)")
    p.add_argument(
        "--compat-libs",
        action="store_true",
        default=None,
        help="the image's cuda-compat libraries are in use (forward compatibility)",
    )
    p.add_argument(
        "--no-compat-libs",
        dest="compat_libs",
        action="store_false",
        help="they are not in use (neither flag, and no evidence: not known, as in runbook 02)",
    )
    p.add_argument("--require-cuda", help="the image's NVIDIA_REQUIRE_CUDA value")
    p.add_argument("--gpu-count", type=int, help="GPUs available to the deployment (checked against the profile)")
    p.add_argument("--profile", help="model profile (kimi_k3, generic_vllm); guessed when omitted")
    p.add_argument("--evidence", metavar="RUN_DIR", help="read RUN_DIR/evidence/evidence.json")
    p.add_argument("--format", choices=("json", "text"), default="text")
    p.set_defaults(func=run)
    return p


#: flag → CompatInputs field; the same fields runbook 02's parameters override (``compat.stage.OVERRIDES``).
FLAGS = {
    "image_cuda": "image_cuda_version",
    "driver": "driver_version",
    "gpu": "gpu_name",
    "compute_capability": "compute_capability",
    "brand": "brand_class",
    "compat_libs": "compat_libs",
    "require_cuda": "nvidia_require_cuda",
    "gpu_count": "gpu_count",
}


def build_inputs(args: argparse.Namespace) -> CompatInputs:
    """Evidence first (if given, read through ``runs.load_result``), then the flags on top.

    Through ``compat.inputs.build_inputs``, the one override path runbook 02 uses too: a flag
    that overrides a value drops what was derived from the old one (``--driver`` drops the
    evidence's driver CUDA; ``--gpu`` re-derives compute capability and brand not given).
    """
    from ..compat.inputs import build_inputs as _build
    from ..execution.runs import load_result

    evidence = load_result(args.evidence, "evidence_capture") if args.evidence else None
    overrides = {field: getattr(args, flag) for flag, field in FLAGS.items()}
    return _build(evidence, overrides, profile=args.profile, origin="cli")


def run(args: argparse.Namespace) -> int:
    """Print the verdict. Exit OK when decided, REFUSED on unreadable input, never a traceback."""
    from ..compat import decide, recommend
    from ..compat.profiles import profile_names

    try:
        if not any(
            getattr(args, k) is not None
            for k in (
                "image_cuda",
                "driver",
                "gpu",
                "compute_capability",
                "brand",
                "compat_libs",
                "require_cuda",
                "evidence",
            )
        ):
            print(
                "check-compat: nothing to decide from: give --evidence RUN_DIR or flags (--image-cuda, --driver, "
                "--gpu …); see --help",
                file=sys.stderr,
            )
            return exit_codes.REFUSED
        if args.profile is not None and args.profile not in profile_names():
            print(
                f"check-compat: unknown profile {args.profile!r}; known: {', '.join(profile_names())}", file=sys.stderr
            )
            return exit_codes.REFUSED
        inputs = build_inputs(args)
    except FileNotFoundError as exc:
        print(f"check-compat: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError) as exc:
        print(f"check-compat: cannot read input: {type(exc).__name__}: {exc}"[:500], file=sys.stderr)
        return exit_codes.REFUSED
    try:
        d = decide(inputs)
        rem = recommend(d)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # input of a shape the rules do not take
        print(f"check-compat: cannot decide from this input: {type(exc).__name__}: {exc}"[:500], file=sys.stderr)
        return exit_codes.REFUSED
    if args.format == "json":
        out = {
            "verdict": d.verdict,
            "summary": d.summary,
            "reasons": d.reasons,
            "missing": d.missing,
            "facts": [f.to_dict() for f in d.facts],
            "evidence_used": d.evidence_used,
            "container_start": d.container_start.to_dict() if d.container_start else None,
            "risks": [r.to_dict() for r in d.risks],
            "profile_demands": [x.to_dict() for x in d.profile_demands],
            "remediation": {
                "path": rem.path,
                "title": rem.title,
                "blocked": rem.blocked,
                "target_branches": [t.branch for t in rem.target_branches],
            },
        }
        print(json.dumps(out, indent=2, default=str))
    else:
        print(f"verdict: {d.verdict}")
        print(d.summary)
        for r in d.reasons:
            print(f"  - {r}")
        if d.container_start:
            print(f"container start: {d.container_start.message}")
        for r in d.risks:
            print(f"  [{r.severity}] {r.kind}: {r.text}")
        for f in d.facts:
            print(f"  source: {f.text} [{f.status}] {f.source}")
        print(f"remediation (default constraints): {rem.path}: {rem.title}")
    return exit_codes.OK
