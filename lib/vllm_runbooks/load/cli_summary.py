"""The ``load`` command's measurement: resolve the model, run the engine, flatten one summary.

Kept out of ``cli_load`` so the command module stays an argument table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..redact import redact_obj
from .engine import LoadSpec, Target, run_load
from .records import summarise
from .workload import short_prompts


def resolve_model(endpoint: str, api_key_env: str | None, model: str | None) -> tuple[str | None, str]:
    """The model to ask for: the one given, else the first ``/v1/models`` lists; else why not."""
    if model:
        return model, ""
    from ..client import EndpointClient

    with EndpointClient(endpoint, api_key_env=api_key_env, timeout_s=10) as client:
        resp = client.models()
    if not resp.ok:
        f = resp.failure
        return None, f"cannot list models at {endpoint}: {f.kind.value if f else '?'}: {f.message if f else ''}"
    ids = resp.model_ids
    return (ids[0], "") if ids else (None, f"{endpoint}/v1/models lists no model")


def measure(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """Run the load the arguments describe; (summary, problem) — summary None when nothing ran."""
    target = Target(args.endpoint, api_key_env=args.api_key_env)
    model, problem = resolve_model(args.endpoint, args.api_key_env, args.model)
    if model is None:
        return None, problem
    payloads = short_prompts(
        model,
        api=args.api,
        input_words=args.input_words,
        max_tokens=args.max_tokens,
        ignore_eos=not args.no_ignore_eos,
        count=min(args.requests, 256),
    )
    spec = LoadSpec(
        requests=args.requests,
        concurrency=args.concurrency,
        rate=args.rate,
        arrival=args.arrival,
        gamma_shape=args.gamma_shape,
        seed=args.seed,
        warmup=args.warmup,
        max_seconds=args.max_seconds,
        request_timeout_s=args.timeout,
    )
    run = run_load(target, payloads, spec, stage="cli", level=args.concurrency)
    s = summarise(run.records, duration_s=None, client_cpu_s=run.client_cpu_s)
    out = {
        "endpoint": target.base_url,
        "model": model,
        "api": args.api,
        "concurrency": args.concurrency,
        "rate": args.rate,
        "requests_asked": args.requests,
        "sent": len(run.records),
        "completed": s.completed,
        "failed": s.failed,
        "failed_by_class": s.errors_by_class,
        "cut": run.cut,
        "ended_by": run.ended_by,
        "duration_s": run.duration_s,
        "requests_per_s": s.requests_per_s,
        "output_tokens_per_s": s.output_tokens_per_s,
        "ttft_ms": s.ttft_ms,
        "itl_ms": s.itl_ms,
        "tpot_ms": s.tpot_ms,
        "e2e_ms": s.e2e_ms,
        "client_cpu_s": run.client_cpu_s,
        "client_cpu_ms_per_request": round(1000 * run.client_cpu_s / len(run.records), 4) if run.records else None,
    }
    if args.save_records:
        write_jsonl(Path(args.save_records), [r.to_dict() for r in run.records])
    return out, ""


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Redacted JSONL, created new (never over an existing file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(redact_obj(row), ensure_ascii=False) + "\n")
    return path
