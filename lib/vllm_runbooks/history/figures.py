"""Plotly charts of a history: verdicts over time, and the trend of each watched figure."""

from __future__ import annotations

from typing import Any

from ..display import PALETTE
from .model import History

TONE_COLOUR = {2: PALETTE["good"], 1: PALETTE["warn"], 0: PALETTE["bad"], None: PALETTE["muted"]}
MAX_TRENDS = 12


def verdict_figure(history: History) -> Any:
    """One row per runbook, one marker per run, coloured by how good the verdict is."""
    import plotly.graph_objects as go

    from .detect import load_rules

    rules = load_rules()
    fig = go.Figure()
    flagged = {(r["run_id"], r["runbook"]) for r in history.regressions}
    for level, name in ((2, "good"), (1, "neutral"), (0, "bad"), (None, "no verdict")):
        pts = [p for p in history.points if rules.level(p["verdict"]) == level]
        if not pts:
            continue
        outline = [3 if (p["run_id"], p["runbook"]) in flagged else 0 for p in pts]
        fig.add_trace(
            go.Scatter(
                x=[p["at"] for p in pts],
                y=[p["runbook"] for p in pts],
                mode="markers+text",
                text=[p["verdict"] or p["status"] for p in pts],
                textposition="top center",
                marker={
                    "size": 14,
                    "color": TONE_COLOUR[level],
                    "line": {
                        "width": outline,
                        "color": "black",
                    },
                },
                name=name,
                hovertext=[p["run_id"] for p in pts],
            )
        )
    fig.update_layout(
        title="Verdicts over time (outlined: a regression starts here)",
        height=160 + 60 * len({p["runbook"] for p in history.points}),
        margin={"l": 160},
    )
    return fig


def trend_figure(history: History) -> Any:
    """One small chart per watched figure; the run where a regression starts is marked."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = [n for n in history.watched if any(n in p["figures"] for p in history.points)][:MAX_TRENDS]
    if not names:
        fig = go.Figure()
        fig.update_layout(title="No watched figure in these runs", height=200)
        return fig
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        subplot_titles=[f"{history.watched[n]} — {n}" for n in names],
        vertical_spacing=min(0.08, 0.5 / len(names)),
    )
    for i, name in enumerate(names, start=1):
        pts = [p for p in history.points if name in p["figures"]]
        fig.add_trace(
            go.Scatter(x=[p["at"] for p in pts], y=[p["figures"][name] for p in pts], mode="lines+markers",
                       name=name, showlegend=False, hovertext=[p["run_id"] for p in pts]),
            row=i, col=1,
        )  # fmt: skip
        for reg in (r for r in history.regressions if r["figure"] == name):
            fig.add_trace(
                go.Scatter(x=[reg["at"]], y=[reg["value"]], mode="markers", showlegend=False,
                           marker={"size": 16, "color": PALETTE["bad"], "symbol": "x"}, name="regression"),
                row=i, col=1,
            )  # fmt: skip
    fig.update_layout(title="Key figures over time (× the first run of a regression)", height=140 + 200 * len(names))
    return fig
