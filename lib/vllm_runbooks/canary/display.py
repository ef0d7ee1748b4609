"""Canary figures: latency per step and tool-call accuracy (plotly, shown offline by display.show_figure)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..display import PALETTE

if TYPE_CHECKING:
    from .model import CanaryReport

STATUS_COLOUR = {"pass": PALETTE["good"], "fail": PALETTE["bad"], "skip": PALETTE["warn"]}


def latency_figure(report: CanaryReport) -> Any:
    """Per step: total duration (bar, coloured by status) and each named request timing (markers)."""
    import plotly.graph_objects as go

    labels = [f"{s.order:g}. {s.title}" for s in report.steps]
    fig = go.Figure()
    fig.add_bar(
        x=labels,
        y=[s.duration_s for s in report.steps],
        marker_color=[STATUS_COLOUR[s.status.value] for s in report.steps],
        text=[s.status.value for s in report.steps],
        name="step duration",
        hovertext=[s.reason[:200] for s in report.steps],
    )
    xs, ys, names = [], [], []
    for label, s in zip(labels, report.steps, strict=True):
        for name, value in s.timings.items():
            xs.append(label)
            ys.append(value)
            names.append(name)
    if xs:
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="markers",
            text=names,
            name="request timings",
            marker={"symbol": "diamond", "size": 9, "color": "#333"},
            hovertemplate="%{text}: %{y:.3f} s<extra></extra>",
        )
    fig.update_layout(
        title=f"Canary latency per step — verdict {report.verdict}",
        yaxis_title="seconds",
        yaxis_type="log" if any(y > 0 for y in ys) else "linear",
        height=420,
        margin={"l": 60, "r": 20, "t": 60, "b": 140},
    )
    return fig


def tool_accuracy_figure(report: CanaryReport) -> Any:
    """Tool-call outcome counts, and valid / checked per mode (required / named × plain / stream)."""
    from plotly.subplots import make_subplots

    acc = report.tool_accuracy() or {}
    fig = make_subplots(rows=1, cols=2, subplot_titles=("outcomes (counts)", "valid calls by mode"))
    if not acc:
        fig.update_layout(title="Tool-call accuracy — step not run", height=360)
        return fig
    kinds = [
        ("valid calls", acc.get("valid_calls", 0), PALETTE["good"]),
        ("schema errors", acc.get("schema_errors", 0), PALETTE["bad"]),
        ("invalid JSON", acc.get("invalid_json", 0), PALETTE["bad"]),
        ("unknown tool", acc.get("unknown_tool_names", 0), PALETTE["bad"]),
        ("wrong name", acc.get("wrong_name", 0), PALETTE["bad"]),
        ("missed calls", acc.get("missed_calls", 0), PALETTE["warn"]),
        ("request failures", acc.get("request_failures", 0), PALETTE["unknown"]),
        ("unexpected calls", acc.get("unexpected_calls", 0), PALETTE["warn"]),
    ]
    fig.add_bar(
        x=[k[0] for k in kinds],
        y=[k[1] for k in kinds],
        marker_color=[k[2] for k in kinds],
        text=[k[1] for k in kinds],
        showlegend=False,
        row=1,
        col=1,
    )
    modes = acc.get("by_mode") or {}
    fig.add_bar(
        x=list(modes),
        y=[m.get("valid", 0) for m in modes.values()],
        name="valid",
        marker_color=PALETTE["good"],
        row=1,
        col=2,
    )
    fig.add_bar(
        x=list(modes),
        y=[m.get("calls", 0) - m.get("valid", 0) for m in modes.values()],
        name="invalid",
        marker_color=PALETTE["bad"],
        row=1,
        col=2,
    )
    fig.add_bar(
        x=list(modes),
        y=[m.get("requests", 0) - m.get("answered", 0) for m in modes.values()],
        name="failed requests",
        marker_color=PALETTE["unknown"],
        row=1,
        col=2,
    )
    rate = acc.get("schema_accuracy")
    rate_txt = f"{rate:.1%}" if rate is not None else "n/a"
    fig.update_layout(
        barmode="stack",
        title=f"Tool-call schema accuracy {rate_txt} ({acc.get('valid_calls', 0)}/{acc.get('calls', 0)} calls; "
        f"threshold {acc.get('threshold', 0):.0%})",
        height=400,
    )
    return fig
