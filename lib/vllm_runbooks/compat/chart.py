"""Compatibility chart: image CUDA versions x driver branches, this host marked.

Why a chart: approvers read "which image runs on which branch" faster from a grid than from a
table of minimums, and the marked cell shows where this host sits and what one step would change.
"""

from __future__ import annotations

import datetime as _dt

import plotly.graph_objects as go

from . import _html as H
from .decide import VERDICTS, decide
from .facts import load_facts, parse_version, vstr
from .inputs import CompatInputs


def branch_verdict(
    image_cuda: str,
    branch: int,
    *,
    compute_capability: str | None,
    brand_class: str | None,
    compat_libs: bool,
    today: _dt.date,
) -> tuple[str, str]:
    """Verdict for an image on a driver branch, read as "a current release of that branch".

    The decision runs with `<branch>.0` as the driver version (the branch's earliest possible
    release); if the branch also holds the image's published minimum, the cell says natively
    compatible from that release, which is what an upgrade within the branch gives.
    """
    facts = load_facts()
    inputs = CompatInputs(
        image_cuda_version=image_cuda,
        driver_version=f"{branch}.0",  # the branch's earliest possible release, as a well-formed version
        compute_capability=compute_capability,
        brand_class=brand_class,
        compat_libs=compat_libs,
    )
    d = decide(inputs, today=today)
    tk = facts.toolkit_minimum(parse_version(image_cuda) or (0, 0))
    note = d.summary
    if d.verdict not in ("compatible", "arch_unsupported") and tk and tk.min_driver[0] == branch:
        return "compatible", f"native from {tk.min_text} ({tk.status}); earlier {branch} releases: {d.verdict}"
    return d.verdict, note


def compat_chart(
    inputs: CompatInputs,
    *,
    today: _dt.date | None = None,
    compat_libs: bool | None = None,
    cuda_versions: list[str] | None = None,
) -> go.Figure:
    """Plotly heatmap of verdicts; cells use this host's GPU (CC, brand) and compat-lib setting."""
    facts = load_facts()
    today = today or _dt.date.today()
    use_compat = bool(inputs.compat_libs if compat_libs is None else compat_libs)
    img = parse_version(inputs.image_cuda_version)
    drv = parse_version(inputs.driver_version)
    rows = cuda_versions or [vstr(v) for v in facts.known_cuda_minors() if v >= (12, 4)]
    host_row = vstr(img[:2]) if img and len(img) >= 2 else None
    if host_row and host_row not in rows:
        rows.append(host_row)
    rows.sort(key=lambda r: parse_version(r) or (0,))
    branches = sorted({b.branch for b in facts.branches()} | set(facts.fc_columns()) | ({drv[0]} if drv else set()))
    z, text = [], []
    for r in rows:
        zr, tr = [], []
        for b in branches:
            v, note = branch_verdict(
                r,
                b,
                compute_capability=inputs.compute_capability,
                brand_class=inputs.brand_class,
                compat_libs=use_compat,
                today=today,
            )
            zr.append(VERDICTS.index(v))
            bi = facts.branch(b)
            kind = f" {bi.type}" if bi and bi.type else ""
            tr.append(f"CUDA {r} on R{b}{kind}<br><b>{v}</b><br>{note}")
        z.append(zr)
        text.append(tr)
    n = len(VERDICTS)
    scale = []
    for i, v in enumerate(VERDICTS):
        scale += [[i / n, H.COLORS[v]], [(i + 1) / n, H.COLORS[v]]]
    xs = [f"R{b}" for b in branches]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=xs,
            y=[f"CUDA {r}" for r in rows],
            text=text,
            hovertemplate="%{text}<extra></extra>",
            zmin=-0.5 + 0.5,
            zmax=n,
            colorscale=scale,
            xgap=2,
            ygap=2,
            colorbar={"tickvals": [i + 0.5 for i in range(n)], "ticktext": list(VERDICTS), "title": "verdict"},
        )
    )
    # Shift z so each integer sits in the middle of its colour band.
    fig.data[0].z = [[c + 0.5 for c in row] for row in z]
    if host_row and drv:
        fig.add_trace(
            go.Scatter(
                x=[f"R{drv[0]}"],
                y=[f"CUDA {host_row}"],
                mode="markers+text",
                marker={"symbol": "x", "size": 18, "color": "black", "line": {"width": 2}},
                text=["this host"],
                textposition="top center",
                name="this host",
                hovertext=[f"driver {inputs.driver_version}, image CUDA {inputs.image_cuda_version}"],
                hoverinfo="text",
                showlegend=False,
            )
        )
    gpu = inputs.gpu_name or (f"CC {inputs.compute_capability}" if inputs.compute_capability else "GPU unknown")
    fig.update_layout(
        title=f"Image CUDA x driver branch ({gpu}, {inputs.brand_class or 'brand unknown'}, compat libs "
        f"{'on' if use_compat else 'off'}); cell = current release of the branch",
        xaxis_title="host driver branch",
        yaxis_title="image CUDA",
        height=120 + 36 * len(rows),
        margin={"l": 90, "r": 20, "t": 60, "b": 50},
    )
    return fig
