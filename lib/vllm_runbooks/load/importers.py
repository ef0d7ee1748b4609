"""Import the tools people already use: ``vllm bench serve`` and GuideLLM results, as load records.

Why: a team that has a ``vllm bench serve --save-result --save-detailed`` JSON or a GuideLLM
``benchmarks.json`` should get the same per-stage table, knee, plots and verdict without
re-running anything. Each benchmark in the file becomes one ramp level (its concurrency, or its
request rate when it had no concurrency limit), and every request becomes a ``RequestRecord``,
so the percentiles are computed the same way the tool computed them (numpy's linear percentile).

Hostile input: the file is read by the one bounded JSON reader (``bounded.load_json``: a byte
cap, nesting too deep for the parser refused), must be JSON of a recognised shape, and every
field is type-checked; anything else gives an ``inconclusive`` result that says what was wrong.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..bounded import TooLarge, load_json
from ..records import utc_now
from .records import RequestRecord, summarise
from .result import LevelResult, LoadCheckResult, StageOutcome, StageStatus
from .sampler import Signals
from .saturation import knee, over_saturation

MAX_FILE_BYTES = 512 * 2**20


class ResultsFileError(ValueError):
    """A results file that cannot be imported; the message says why."""


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _read(path: str | Path) -> tuple[Any, list[str]]:
    """The file's JSON and the reader's notes, or ResultsFileError saying why not (in the import's words)."""
    try:
        return load_json(path, MAX_FILE_BYTES)
    except TooLarge as exc:
        size = f"{exc.size} bytes" if exc.size is not None else f"over {MAX_FILE_BYTES} bytes"
        raise ResultsFileError(f"{path} is {size}, over the {MAX_FILE_BYTES // 2**20} MiB import cap") from exc
    except OSError as exc:
        raise ResultsFileError(f"cannot read {path}: {exc}") from exc
    except ValueError as exc:
        raise ResultsFileError(f"{path} is not readable JSON: {exc}") from exc


def detect(data: Any) -> str | None:
    """``vllm_bench`` / ``guidellm`` / None."""
    if isinstance(data, dict) and isinstance(data.get("ttfts"), list) and "request_throughput" in data:
        return "vllm_bench"
    if isinstance(data, dict) and isinstance(data.get("benchmarks"), list):
        return "guidellm"
    return None


# -- vllm bench serve --------------------------------------------------------------------------
def vllm_bench_records(data: dict[str, Any], stage: str = "ramp") -> tuple[int, list[RequestRecord]]:
    """(level, records) from a ``--save-detailed`` result; level = max_concurrency (else 0)."""
    n = len(data.get("ttfts") or [])
    if n == 0:
        raise ResultsFileError("vllm bench serve result has no per-request rows: was it saved with --save-detailed?")

    def col(name: str) -> list[Any]:
        values = data.get(name)
        if not isinstance(values, list):
            return [None] * n
        return values + [None] * (n - len(values))

    ttfts, itls, lat, starts = col("ttfts"), col("itls"), col("latencies"), col("start_times")
    ins, outs, errors = col("input_lens"), col("output_lens"), col("errors")
    level = int(_num(data.get("max_concurrency")) or 0)
    t0 = min((s for s in (_num(x) for x in starts) if s is not None), default=0.0)
    records = []
    for i in range(n):
        err = errors[i]
        ok = not err
        ttft, e2e = _num(ttfts[i]), _num(lat[i])
        out_len = int(_num(outs[i]) or 0)
        rec = RequestRecord(
            i,
            stage=stage,
            level=level,
            api="imported",
            sent_s=round((_num(starts[i]) or t0) - t0, 6),
            ttft_s=ttft if ok else None,
            e2e_s=e2e,
            itl_s=[float(x) for x in (itls[i] or []) if _num(x) is not None] if ok else [],
            prompt_tokens=int(_num(ins[i]) or 0) or None,
            output_tokens=out_len if ok else None,
            ok=ok,
        )
        if ok and ttft is not None and e2e is not None and out_len > 1:
            rec.tpot_s = (e2e - ttft) / (out_len - 1)
        if not ok:
            from .errors import classify

            text = str(err)[:600]
            status = _status_in(text)
            rec.status = status
            rec.error_class = classify(status, text, "client" if status is None else None).value
            rec.error_excerpt = text
        records.append(rec)
    return level, records


def _status_in(text: str) -> int | None:
    import re

    m = re.search(r"\b([45]\d\d)\b", text)
    return int(m.group(1)) if m else None


# -- GuideLLM --------------------------------------------------------------------------------
def guidellm_levels(data: dict[str, Any]) -> list[tuple[int, str, list[RequestRecord], dict[str, Any]]]:
    """(level, label, records, the tool's statistics) per benchmark of a GuideLLM ``benchmarks.json``.

    GuideLLM's latency statistics are its own (token-weighted ITL and TPOT, its percentile method);
    the level's figures are taken from them so the table shows what the tool printed."""
    out = []
    for b, bench in enumerate(data.get("benchmarks") or []):
        if not isinstance(bench, dict):
            raise ResultsFileError(f"benchmarks[{b}] is not an object")
        level, label = _guidellm_level(bench)
        out.append((level, label, guidellm_records(bench, level), guidellm_stats(bench)))
    if not out:
        raise ResultsFileError("GuideLLM file lists no benchmarks")
    return out


def _gl_dist(metrics: dict[str, Any], name: str, scale: float = 1.0) -> dict[str, float | None] | None:
    dist = metrics.get(name)
    dist = dist.get("successful") if isinstance(dist, dict) else None
    if not isinstance(dist, dict) or not dist.get("count"):
        return None
    pct = dist.get("percentiles") if isinstance(dist.get("percentiles"), dict) else {}

    def r(x: Any) -> float | None:
        v = _num(x)
        return None if v is None else round(v * scale, 3)

    return {
        "mean": r(dist.get("mean")),
        "p50": r(dist.get("median")),
        "p95": r(pct.get("p95")),
        "p99": r(pct.get("p99")),
    }


def guidellm_stats(bench: dict[str, Any]) -> dict[str, Any]:
    """Summary fields from a GuideLLM benchmark's ``metrics`` (TTFT, ITL, TPOT in ms, latency in s)."""
    metrics = bench.get("metrics") if isinstance(bench.get("metrics"), dict) else {}
    out: dict[str, Any] = {}
    for field, name, scale in (
        ("ttft_ms", "time_to_first_token_ms", 1.0),
        ("itl_ms", "inter_token_latency_ms", 1.0),
        ("tpot_ms", "time_per_output_token_ms", 1.0),
        ("e2e_ms", "request_latency", 1000.0),
    ):
        dist = _gl_dist(metrics, name, scale)
        if dist is not None:
            out[field] = dist
    rps = metrics.get("requests_per_second")
    rps = rps.get("successful") if isinstance(rps, dict) else None
    if isinstance(rps, dict) and _num(rps.get("mean")) is not None:
        out["requests_per_s"] = round(float(rps["mean"]), 3)
    return out


def _guidellm_level(bench: dict[str, Any]) -> tuple[int, str]:
    cfg = bench.get("config") if isinstance(bench.get("config"), dict) else {}
    strat = cfg.get("strategy") if isinstance(cfg.get("strategy"), dict) else bench.get("scheduler", {})
    strat = strat if isinstance(strat, dict) else {}
    kind = str(strat.get("type_") or strat.get("type") or "")
    streams = _num(strat.get("streams")) or _num(strat.get("max_concurrency"))
    rate = _num(strat.get("rate"))
    if streams:
        return int(streams), f"{kind or 'concurrent'} {int(streams)}"
    metrics = bench.get("metrics") if isinstance(bench.get("metrics"), dict) else {}
    conc = metrics.get("request_concurrency") if isinstance(metrics.get("request_concurrency"), dict) else {}
    mean_conc = _num((conc.get("successful") or {}).get("mean")) if isinstance(conc.get("successful"), dict) else None
    level = max(1, int(round(mean_conc))) if mean_conc else 1
    return level, f"{kind or 'benchmark'}" + (f" @ {rate:g} req/s" if rate else "")


def guidellm_records(bench: dict[str, Any], level: int, stage: str = "ramp") -> list[RequestRecord]:
    """Per-request rows of one GuideLLM benchmark (``requests.successful`` / ``errored`` /
    ``incomplete``); times from each request's timings (``request_start`` … ``request_end``)."""
    reqs = bench.get("requests")
    if not isinstance(reqs, dict):
        raise ResultsFileError("GuideLLM benchmark has no 'requests' object (saved without request samples?)")
    rows: list[RequestRecord] = []
    starts: list[float] = []
    for status_name in ("successful", "errored", "incomplete"):
        for item in reqs.get(status_name) or []:
            if not isinstance(item, dict):
                continue
            rec = _guidellm_record(item, len(rows), level, stage, status_name)
            if rec is not None:
                rows.append(rec)
                starts.append(rec.sent_s)
    t0 = min(starts, default=0.0)
    for r in rows:
        r.sent_s = round(r.sent_s - t0, 6)
    return rows


def _guidellm_record(item: dict[str, Any], i: int, level: int, stage: str, status_name: str) -> RequestRecord | None:
    timings = item.get("timings") if isinstance(item.get("timings"), dict) else item.get("scheduler_info", {})
    timings = timings if isinstance(timings, dict) else {}
    start = _num(item.get("request_start_time")) or _num(timings.get("request_start"))
    end = _num(item.get("request_end_time")) or _num(timings.get("request_end"))
    ttft_ms = _num(item.get("time_to_first_token_ms"))
    first = _num(item.get("first_token_time")) or _num(timings.get("first_iteration"))
    latency = _num(item.get("request_latency"))
    if latency is None and start is not None and end is not None:
        latency = end - start
    ttft = ttft_ms / 1000.0 if ttft_ms is not None else (first - start if first and start else None)
    out_tokens = _num(item.get("output_tokens"))
    if out_tokens is None and isinstance(item.get("output_metrics"), dict):
        out_tokens = _num(item["output_metrics"].get("text_tokens")) or _num(item["output_metrics"].get("tokens"))
    in_tokens = _num(item.get("prompt_tokens"))
    if in_tokens is None and isinstance(item.get("input_metrics"), dict):
        in_tokens = _num(item["input_metrics"].get("text_tokens")) or _num(item["input_metrics"].get("tokens"))
    ok = status_name == "successful"
    rec = RequestRecord(
        i,
        stage=stage,
        level=level,
        api="imported",
        sent_s=start or 0.0,
        ttft_s=ttft if ok else None,
        e2e_s=latency,
        prompt_tokens=int(in_tokens) if in_tokens is not None else None,
        output_tokens=int(out_tokens) if out_tokens is not None and ok else None,
        ok=ok,
        cut=status_name == "incomplete",
    )
    tpot_ms = _num(item.get("time_per_output_token_ms"))
    itl_ms = _num(item.get("inter_token_latency_ms"))
    if ok:
        if tpot_ms is not None:
            rec.tpot_s = tpot_ms / 1000.0
        elif ttft is not None and latency is not None and out_tokens and out_tokens > 1:
            rec.tpot_s = (latency - ttft) / (out_tokens - 1)
        if itl_ms is not None:
            rec.itl_s = [itl_ms / 1000.0]
    if status_name == "errored":
        from .errors import classify

        text = str(item.get("error") or (item.get("info") or {}).get("error") or "errored")[:600]
        status = _status_in(text)
        rec.status = status
        rec.error_class = classify(status, text, "client" if status is None else None).value
        rec.error_excerpt = text
    return rec


# -- result -----------------------------------------------------------------------------------
def import_results(config: Any) -> LoadCheckResult:
    """A LoadCheckResult from ``config.results_file``; inconclusive (with why) when unreadable."""
    from .stage import decide

    path = str(config.results_file)
    base = LoadCheckResult(source=path, started_at=utc_now(), config=config.to_dict())
    try:
        data, notes = _read(path)
        base.warnings.extend(notes)
        kind = detect(data)
        if kind == "vllm_bench":
            level, records = vllm_bench_records(data)
            label = f"vllm bench serve (max_concurrency {data.get('max_concurrency')})"
            stats = {k: round(v, 3) for k, v in (("requests_per_s", _num(data.get("request_throughput"))),
                     ("output_tokens_per_s", _num(data.get("output_throughput")))) if v is not None}  # fmt: skip
            levels = [(level or 1, label, records, stats)]
            base.model = data.get("model_id")
        elif kind == "guidellm":
            levels = guidellm_levels(data)
        else:
            raise ResultsFileError("not a vllm bench serve --save-result JSON nor a GuideLLM benchmarks.json")
    except ResultsFileError as exc:
        base.reason = str(exc)
        return base
    slo_s = config.slo_ttft_ms / 1000.0
    tpot_s = config.slo_tpot_ms / 1000.0 if config.slo_tpot_ms else None
    results, all_records, labels = [], [], []
    for level, label, records, stats in sorted(levels, key=lambda x: x[0]):
        summary = summarise(records, slo_ttft_s=slo_s, slo_tpot_s=tpot_s)
        if stats:  # the tool's own statistics, as it printed them
            for key, value in stats.items():
                setattr(summary, key, value)
        lv = LevelResult(level, summary, "imported", Signals())
        results.append(lv)
        lv.saturation = over_saturation(
            [x.point() for x in results],
            window=config.saturation_window,
            min_slope=config.saturation_slope,
            max_efficiency=config.saturation_max_efficiency,
        )
        all_records.extend(records)
        labels.append(label)
    sat = next((lv.concurrency for lv in results if lv.saturation and lv.saturation.saturated), None)
    k = knee([lv.point() for lv in results], config.slo_ttft_ms, config.max_error_rate, sat)
    total = summarise(all_records, slo_ttft_s=slo_s, slo_tpot_s=tpot_s)
    status = StageStatus.PASS if k is not None else StageStatus.FAIL
    reason = f"imported {len(results)} benchmark(s) from {kind}: " + "; ".join(labels)
    reason += f"; knee at concurrency {k}" if k is not None else "; no benchmark met the SLO without errors"
    ramp = StageOutcome(
        "ramp", "Imported benchmarks (as ramp levels)", 5, status, reason, summary=total, levels=results,
        ended_by="imported", details={"format": kind, "file": path, "benchmarks": labels},
    )  # fmt: skip
    base.stages = [ramp]
    base.knee_concurrency = k
    base.records = all_records
    base.slo = {"ttft_ms": config.slo_ttft_ms, "tpot_ms": config.slo_tpot_ms, "max_error_rate": config.max_error_rate}
    base.totals = {"requests": len(all_records), "imported_from": kind}
    base.target_concurrency = config.max_concurrency
    base.target_concurrency_reason = (
        f"imported {kind} results: only a live ramp against the endpoint verifies the target concurrency"
    )
    base.verdict, base.reason = decide(base, config)
    return base


__all__ = ["ResultsFileError", "detect", "guidellm_levels", "import_results", "vllm_bench_records"]
