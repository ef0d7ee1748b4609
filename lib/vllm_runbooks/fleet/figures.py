"""The fleet's plot: nodes per verdict and per driver branch, coloured by what to do with them.

Where people would rather look than read: which branch holds the nodes that block the rollout.
"""

from __future__ import annotations

from typing import Any


def counts_figure(result: Any) -> Any:
    """Two bar charts side by side: nodes per verdict; nodes per driver branch stacked by action."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .result import ACTION_COLOURS

    fig = make_subplots(rows=1, cols=2, subplot_titles=("Nodes per verdict", "Nodes per driver branch"))
    verdicts = result.verdict_counts()
    fig.add_trace(
        go.Bar(x=list(verdicts), y=list(verdicts.values()), marker_color="#4a6fa5", name="verdict", showlegend=False),
        row=1,
        col=1,
    )
    branches = result.branch_counts()
    names = list(branches)
    for action, colour in ACTION_COLOURS.items():
        ys = [branches[b].get(action, 0) for b in names]
        if any(ys):
            fig.add_trace(go.Bar(x=names, y=ys, name=action, marker_color=colour), row=1, col=2)
    fig.update_layout(
        barmode="stack",
        height=380,
        margin={"l": 40, "r": 20, "t": 50, "b": 40},
        title=f"Fleet for CUDA {result.target.image_cuda} ({result.target.profile})",
    )
    fig.update_yaxes(title_text="nodes")
    return fig
