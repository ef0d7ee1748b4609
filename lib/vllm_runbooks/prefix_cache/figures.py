"""Plotly figures for runbook 04, each built from a result record (no server access here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..display import PALETTE

if TYPE_CHECKING:
    from .experiment import CounterDeltas, ExperimentResult
    from .mismatch import MismatchReport

FIRST_COLOUR, LATER_COLOUR, EXPECTED_COLOUR = PALETTE["warn"], PALETTE["good"], PALETTE["unknown"]


def ttft_figure(exp: ExperimentResult) -> Any:
    """TTFT by request: the cold first request against the later, cached ones."""
    import plotly.graph_objects as go

    obs = exp.observations
    fig = go.Figure(
        go.Bar(
            x=[o.index + 1 for o in obs],
            y=[o.ttft_s for o in obs],
            marker_color=[FIRST_COLOUR if o.index == 0 else LATER_COLOUR for o in obs],
            text=["first (cold)" if o.index == 0 else "" for o in obs],
        )
    )
    fig.update_layout(
        title="Time to first token by request (first = cold)", xaxis_title="request", yaxis_title="TTFT (s)", height=320
    )
    return fig


def cached_figure(exp: ExperimentResult) -> Any:
    """Cached vs prompt tokens per request, with the full-block expectation as a line."""
    import plotly.graph_objects as go

    obs = exp.observations
    xs = [o.index + 1 for o in obs]
    fig = go.Figure()
    fig.add_bar(x=xs, y=[o.prompt_tokens for o in obs], name="prompt tokens", marker_color=PALETTE["series_light"])
    fig.add_bar(x=xs, y=[o.cached_tokens for o in obs], name="cached tokens", marker_color=LATER_COLOUR)
    if exp.expected_cached is not None:
        fig.add_scatter(
            x=xs,
            y=[o.expected_cached for o in obs],
            name="expected (full shared blocks)",
            mode="lines+markers",
            line={"color": EXPECTED_COLOUR, "dash": "dash"},
        )
    fig.update_layout(
        title="Cached tokens per request", barmode="overlay", xaxis_title="request", yaxis_title="tokens", height=340
    )
    return fig


def deltas_figure(deltas: CounterDeltas, title: str = "Prefix-cache counter deltas (this run)") -> Any:
    """Counter deltas of this run as bars (plotly)."""
    import plotly.graph_objects as go

    names, values = [], []
    for label, v in (
        ("queries", deltas.queries),
        ("hits", deltas.hits),
        ("prompt_tokens_cached", deltas.prompt_tokens_cached),
        *((f"by_source {k}", v) for k, v in sorted(deltas.by_source.items())),
    ):
        names.append(label)
        values.append(v if v is not None else 0)
    fig = go.Figure(go.Bar(x=names, y=values, text=[f"{v:.0f}" for v in values], marker_color=PALETTE["series"]))
    fig.update_layout(title=title, yaxis_title="tokens", height=340)
    return fig


def shared_prefix_figure(report: MismatchReport) -> Any:
    """Distribution of shared-prefix lengths, with block (hit-unit) boundaries marked."""
    import plotly.graph_objects as go

    lengths = report.shared_lengths
    fig = go.Figure(go.Histogram(x=lengths, nbinsx=max(10, min(60, len(lengths))), marker_color=PALETTE["series"]))
    top = max(lengths + [report.unit_tokens]) if lengths else report.unit_tokens
    step = report.unit_tokens
    k = 1
    while k * step <= top * 1.05 and k <= 64:
        fig.add_vline(x=k * step, line={"color": FIRST_COLOUR if k == 1 else PALETTE["faint"], "dash": "dot"})
        k += 1
    fig.update_layout(
        title=f"Shared prefix per request ({report.method}); lines = {step}-token hit units",
        xaxis_title="shared prefix (tokens)",
        yaxis_title="requests",
        height=340,
    )
    return fig


def experiment_figure(exp: ExperimentResult) -> Any:
    """TTFT and cached tokens per request side by side (plotly)."""
    return cached_figure(exp)


# -- result.figure(name): each takes the result and is None when its step did not run -------------
def ttft_by_request(result: Any) -> Any:
    """Prompt-processing time per request: the first against the later ones."""
    exp = result.experiment
    return ttft_figure(exp) if exp and exp.observations else None


def cached_tokens_per_request(result: Any) -> Any:
    """Cached prompt tokens per request."""
    exp = result.experiment
    return cached_figure(exp) if exp and exp.observations else None


def counter_deltas(result: Any) -> Any:
    """The cache counters' per-run deltas."""
    exp = result.experiment
    return deltas_figure(exp.deltas) if exp and exp.deltas.ok else None


def shared_prefix_distribution(result: Any) -> Any:
    """How long the prefix the recorded requests share is."""
    mm = result.mismatch
    return shared_prefix_figure(mm) if mm and mm.ok else None
