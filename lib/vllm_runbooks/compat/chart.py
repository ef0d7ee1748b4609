"""Compatibility chart: draws a :class:`~.grid.CompatGrid` (image CUDA × driver branch, host marked).

Why a chart: approvers read "which image runs on which branch" faster from a grid than from a
table of minimums, and the marked cell shows where this host sits and what one step would change.
The grid is decided in :mod:`.grid`; this module only draws it.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .. import display as H
from .inputs import CompatInputs
from .records import VERDICTS


def draw_grid(grid: Any) -> Any:
    """Plotly heatmap of a decided grid, one colour band per verdict, this host marked."""
    import plotly.graph_objects as go

    z = [[VERDICTS.index(v) + 0.5 for v in row] for row in grid.verdicts]  # the middle of each colour band
    text = [
        [
            f"CUDA {r} on R{b}{(' ' + grid.branch_types[b]) if b in grid.branch_types else ''}"
            f"<br><b>{H.esc(v)}</b><br>{H.esc(note)}"
            for b, v, note in zip(grid.branches, vrow, nrow, strict=True)
        ]
        for r, vrow, nrow in zip(grid.rows, grid.verdicts, grid.notes, strict=True)
    ]
    n = len(VERDICTS)
    scale = []
    for i, v in enumerate(VERDICTS):
        scale += [[i / n, H.BADGE_COLOURS[v]], [(i + 1) / n, H.BADGE_COLOURS[v]]]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"R{b}" for b in grid.branches],
            y=[f"CUDA {r}" for r in grid.rows],
            text=text,
            hovertemplate="%{text}<extra></extra>",
            zmin=0,
            zmax=n,
            colorscale=scale,
            xgap=2,
            ygap=2,
            colorbar={"tickvals": [i + 0.5 for i in range(n)], "ticktext": list(VERDICTS), "title": "verdict"},
        )
    )
    if grid.host_row and grid.host_branch is not None:
        fig.add_trace(
            go.Scatter(
                x=[f"R{grid.host_branch}"],
                y=[f"CUDA {grid.host_row}"],
                mode="markers+text",
                marker={"symbol": "x", "size": 18, "color": "black", "line": {"width": 2}},
                text=["this host"],
                textposition="top center",
                name="this host",
                hovertext=[grid.host_label],
                hoverinfo="text",
                showlegend=False,
            )
        )
    fig.update_layout(
        title=grid.title,
        xaxis_title="host driver branch",
        yaxis_title="image CUDA",
        height=120 + 36 * len(grid.rows),
        margin={"l": 90, "r": 20, "t": 60, "b": 50},
    )
    return fig


def compat_chart(
    inputs: CompatInputs,
    *,
    today: _dt.date | None = None,
    compat_libs: bool | None = None,
    cuda_versions: list[str] | None = None,
) -> Any:
    """Decide the grid for this host (:func:`.grid.compat_grid`) and draw it."""
    from .grid import compat_grid

    return draw_grid(compat_grid(inputs, today=today, compat_libs=compat_libs, cuda_versions=cuda_versions))


def compatibility_figure(result: Any) -> Any:
    """Runbook 02's grid (``result.figure("compatibility")``): image CUDA × driver branch for this
    host's GPU, this host marked, as of the day the decision was made."""
    import datetime as _dt

    decision = result.report.decision
    return compat_chart(decision.inputs, today=_dt.date.fromisoformat(decision.evaluated_on))
