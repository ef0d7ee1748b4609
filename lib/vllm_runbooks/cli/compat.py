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
    p.add_argument("--require-cuda", help="the image's NVIDIA_REQUIRE_CUDA value")
    p.add_argument("--profile", help="model profile (kimi_k3, generic_vllm); guessed when omitted")
    p.add_argument("--evidence", metavar="RUN_DIR", help="read RUN_DIR/evidence/evidence.json")
    p.add_argument("--format", choices=("json", "text"), default="text")
    p.set_defaults(func=run)
    return p


def build_inputs(args: argparse.Namespace) -> CompatInputs:
    """Evidence first (if given), then flags override; a new --gpu re-derives CC/brand not given."""
    from ..compat import CompatInputs, inputs_from_evidence, load_evidence

    if args.evidence:
        inputs = inputs_from_evidence(load_evidence(args.evidence), args.profile)
    else:
        inputs = CompatInputs(model_profile=args.profile or "generic_vllm")
    overrides = {
        "image_cuda_version": args.image_cuda,
        "driver_version": args.driver,
        "gpu_name": args.gpu,
        "compute_capability": args.compute_capability,
        "brand_class": args.brand,
        "compat_libs": args.compat_libs,
        "nvidia_require_cuda": args.require_cuda,
    }
    for k, v in overrides.items():
        if v is not None:
            setattr(inputs, k, v)
            inputs.sources[k] = "cli"
            inputs.derived.pop(k, None)
    if args.driver is not None and inputs.sources.get("driver_cuda_version", "cli") != "cli":
        # The evidence's driver CUDA belongs to the evidence's driver, not to the one given here.
        inputs.driver_cuda_version = None
        inputs.derived["driver_cuda_version"] = "evidence value dropped: --driver overrides the evidence's driver"
        inputs.sources.pop("driver_cuda_version", None)
    if args.gpu is not None:
        if args.compute_capability is None:
            inputs.compute_capability = None
        if args.brand is None:
            inputs.brand_class = None
        inputs.fill_derived()
    if not args.evidence and args.compat_libs is None:
        inputs.compat_libs = False  # flag absent: the libraries are not in use
    return inputs


def run(args: argparse.Namespace) -> int:
    """Print the verdict. Exit OK when decided, REFUSED on unreadable input, never a traceback."""
    from ..compat import decide, recommend

    try:
        inputs = build_inputs(args)
    except FileNotFoundError as exc:
        print(f"check-compat: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"check-compat: cannot read input: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    d = decide(inputs)
    rem = recommend(d)
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
