"""The fleet's plot: nodes per verdict, per driver branch (coloured by what to do with them) and per
hardware verdict.

Where people would rather look than read: which branch holds the nodes that block the rollout, and
how many nodes runbook 01 calls faulty or degraded before anyone blames the image.
"""

from __future__ import annotations

from typing import Any


def counts_figure(result: Any) -> Any:
    """Three bar charts side by side: nodes per verdict; per driver branch stacked by action; per hardware verdict."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from ..display import PALETTE
    from .result import ACTION_COLOURS, HARDWARE_COLOURS

    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=("Nodes per verdict", "Nodes per driver branch", "Nodes per hardware verdict"),
    )
    verdicts = result.verdict_counts()
    fig.add_trace(
        go.Bar(
            x=list(verdicts),
            y=list(verdicts.values()),
            marker_color=PALETTE["series"],
            name="verdict",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    branches = result.branch_counts()
    names = list(branches)
    for action, colour in ACTION_COLOURS.items():
        ys = [branches[b].get(action, 0) for b in names]
        if any(ys):
            fig.add_trace(go.Bar(x=names, y=ys, name=action, marker_color=colour), row=1, col=2)
    hardware = result.hardware_counts()
    fig.add_trace(
        go.Bar(
            x=list(hardware),
            y=list(hardware.values()),
            marker_color=[HARDWARE_COLOURS.get(k, PALETTE["unknown"]) for k in hardware],
            name="hardware",
            showlegend=False,
        ),
        row=1,
        col=3,
    )
    fig.update_layout(
        barmode="stack",
        height=380,
        margin={"l": 40, "r": 20, "t": 50, "b": 40},
        title=f"Fleet for CUDA {result.target.image_cuda} ({result.target.profile})",
    )
    fig.update_yaxes(title_text="nodes")
    return fig
