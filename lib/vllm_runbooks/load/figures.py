"""Runbook 05's plots (plotly, embedded offline through ``display.FigureView``).

Why these four: the knee is read off latency and throughput against concurrency; the timeline
of server metrics with the stages as bands shows *when* the queue grew or the KV cache filled;
errors by class and stage answer "memory, communication or load?" at a glance.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..display import PALETTE, TINTS, FigureView
from .result import LoadCheckResult

STAGE_COLOURS = TINTS


def _levels(result: LoadCheckResult) -> list[Any]:
    return [lv for lv in result.ramp_levels() if lv.summary.completed]


def latency_vs_concurrency(result: LoadCheckResult) -> FigureView:
    """TTFT and TPOT percentiles per ramp level, the SLO and the knee."""
    import plotly.graph_objects as go

    levels = _levels(result)
    x = [lv.concurrency for lv in levels]
    fig = go.Figure()
    for metric, dash in (("ttft", "solid"), ("tpot", "dot"), ("e2e", "dash")):
        for p in ("p50", "p95"):
            y = [getattr(lv.summary, f"{metric}_ms").get(p) for lv in levels]
            fig.add_scatter(x=x, y=y, mode="lines+markers", name=f"{metric.upper()} {p}", line={"dash": dash})
    slo = result.slo.get("ttft_ms")
    if slo:
        fig.add_hline(y=slo, line_dash="dash", line_color=PALETTE["bad"], annotation_text=f"TTFT SLO {slo:g} ms")
    if result.knee_concurrency:
        fig.add_vline(x=result.knee_concurrency, line_color=PALETTE["good"], annotation_text="knee")
    fig.update_layout(
        title="Latency vs concurrency",
        xaxis={"title": "concurrency", "type": "log"},
        yaxis={"title": "ms", "type": "log"},
        height=420,
    )
    return FigureView(fig)


def throughput_vs_concurrency(result: LoadCheckResult) -> FigureView:
    """Requests/s, goodput/s and output tokens/s per ramp level."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    levels = _levels(result)
    x = [lv.concurrency for lv in levels]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[lv.summary.requests_per_s for lv in levels], name="requests/s"))
    fig.add_trace(go.Scatter(x=x, y=[lv.summary.goodput_per_s for lv in levels], name="goodput/s (meets SLO)"))
    fig.add_trace(
        go.Scatter(
            x=x, y=[lv.summary.output_tokens_per_s for lv in levels], name="output tokens/s", line={"dash": "dot"}
        ),
        secondary_y=True,
    )
    if result.knee_concurrency:
        fig.add_vline(x=result.knee_concurrency, line_color=PALETTE["good"], annotation_text="knee")
    fig.update_layout(title="Throughput vs concurrency", xaxis={"title": "concurrency", "type": "log"}, height=420)
    fig.update_yaxes(title_text="requests/s", secondary_y=False)
    fig.update_yaxes(title_text="output tokens/s", secondary_y=True)
    return FigureView(fig)


def metrics_timeline(result: LoadCheckResult) -> FigureView:
    """Waiting / running requests and KV usage over the run, each stage a shaded band."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    m = result.metrics
    t = [s.t_s for s in m]
    fig.add_trace(go.Scatter(x=t, y=[s.waiting for s in m], name="waiting", mode="lines+markers"))
    fig.add_trace(go.Scatter(x=t, y=[s.running for s in m], name="running", mode="lines+markers"))
    kv = [None if s.kv_usage is None else s.kv_usage * 100 for s in m]
    fig.add_trace(go.Scatter(x=t, y=kv, name="KV usage %", line={"dash": "dot"}), secondary_y=True)
    gpu = [s.gpu_mem_used_mib for s in m]
    if any(g is not None for g in gpu):
        fig.add_trace(go.Scatter(x=t, y=gpu, name="GPU memory used (MiB, NVML)", line={"dash": "dashdot"}))
    pre = [s.preemptions for s in m]
    if any(p for p in pre):
        fig.add_trace(go.Scatter(x=t, y=pre, name="preemptions (total)", line={"dash": "dash"}))
    for i, st in enumerate(result.stages):
        if st.t_end_s > st.t_start_s:
            fig.add_vrect(
                x0=st.t_start_s,
                x1=st.t_end_s,
                fillcolor=STAGE_COLOURS[i % len(STAGE_COLOURS)],
                opacity=0.6,
                layer="below",
                line_width=0,
                annotation_text=st.stage,
                annotation_position="top left",
            )
    fig.update_layout(
        title="Server metrics during the run (stages shaded)", xaxis={"title": "s since start"}, height=420
    )
    fig.update_yaxes(title_text="requests", secondary_y=False)
    fig.update_yaxes(title_text="KV usage %", range=[0, 100], secondary_y=True)
    if not m:
        fig.add_annotation(text="no /metrics samples (not exposed, or not a live run)", showarrow=False)
    return FigureView(fig)


def errors_by_class(result: LoadCheckResult) -> FigureView:
    """Failed requests per stage, stacked by error class."""
    import plotly.graph_objects as go

    counts: dict[str, Counter] = {}
    for r in result.records:
        if r.counted and not r.ok:
            counts.setdefault(r.error_class or "unclassified", Counter())[r.stage] += 1
    if not result.records:
        for s in result.stages:
            for cls, n in (s.summary.errors_by_class if s.summary else {}).items():
                counts.setdefault(cls, Counter())[s.stage] += n
    stages = [s.stage for s in result.stages]
    fig = go.Figure()
    for cls, by_stage in sorted(counts.items()):
        fig.add_bar(x=stages, y=[by_stage.get(s, 0) for s in stages], name=cls)
    fig.update_layout(
        barmode="stack", title="Errors by class and stage", yaxis={"title": "failed requests"}, height=380
    )
    if not counts:
        fig.add_annotation(text="no failed requests", showarrow=False)
    return FigureView(fig)


FIGURES = {
    "latency_vs_concurrency": latency_vs_concurrency,
    "throughput_vs_concurrency": throughput_vs_concurrency,
    "metrics_timeline": metrics_timeline,
    "errors_by_class": errors_by_class,
}

__all__ = ["FIGURES", "errors_by_class", "latency_vs_concurrency", "metrics_timeline", "throughput_vs_concurrency"]
