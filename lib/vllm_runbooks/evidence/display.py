"""How evidence shows itself in a notebook: small HTML tables and plotly figures.

Everything here reads an ``Evidence`` and returns something Jupyter renders (an object with
``_repr_html_``, a pandas DataFrame or a plotly Figure); nothing here collects or decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..display import PALETTE, FigureView, esc
from ..display import badge as _badge

if TYPE_CHECKING:
    import pandas as pd

    from .model import Evidence

PRE = '<pre style="margin:0;white-space:pre-wrap;max-height:20em;overflow:auto">'

SECTIONS: dict[str, tuple[str, str, list[str] | None]] = {
    # name: (title, item, keys to show or None for all)
    "host": ("Host", "host", ["os", "kernel", "hostname", "machine", "cpus", "memory_bytes", "uptime_s"]),
    "driver": (
        "Driver and CUDA",
        "nvidia",
        [
            "driver_version",
            "driver_branch",
            "cuda_driver_version",
            "cuda_driver_version_int",
            "kernel_module_version",
            "kernel_module",
            "source",
        ],
    ),
    "container_runtime": ("Container runtime and toolkit", "container_runtime", None),
    "image": (
        "Image",
        "image",
        [
            "ref",
            "digest",
            "cuda_version",
            "nvidia_require_cuda",
            "nv_cuda_compat_package",
            "nvidia_disable_require",
            "vllm_env",
            "entrypoint",
            "cmd",
            "labels",
            "env",
        ],
    ),
    "container": (
        "Container",
        "container",
        [
            "name",
            "image",
            "state",
            "exit_code",
            "oom_killed",
            "error",
            "entrypoint",
            "command",
            "shm_size_bytes",
            "ipc_mode",
            "runtime",
            "device_requests",
            "restart_count",
            "env",
        ],
    ),
    "vllm": ("vLLM", "vllm", None),
    "launch": (
        "Launch command and environment",
        "launch",
        ["origin", "command", "flags", "env_origin", "env"],
    ),
    "interconnect": ("Interconnect", "interconnect", None),
    "cuda_probe": ("In-image CUDA probe", "cuda_probe", None),
}


def _fmt(v: Any) -> str:
    if v is None:
        return '<span style="color:#888">unknown</span>'
    if isinstance(v, dict | list):
        if not v:
            return '<span style="color:#888">none</span>'
        text = json.dumps(v, indent=1, ensure_ascii=False)
        return f"{PRE}{esc(text)}</pre>"
    s = str(v)
    if "\n" in s or len(s) > 160:
        return f"{PRE}{esc(s)}</pre>"
    return esc(s)


@dataclass
class Section:
    """One collector's result as a titled key/value table."""

    title: str
    status: str
    reason: str | None
    value: dict[str, Any]
    keys: list[str] | None = None

    def _repr_html_(self) -> str:
        keys = self.keys or list(self.value)
        rows = "".join(
            f"<tr><th style='text-align:left;vertical-align:top'>{esc(k)}</th>"
            f"<td style='text-align:left'>{_fmt(self.value.get(k))}</td></tr>"
            for k in keys
        )
        why = f"<p><b>Why:</b> {esc(self.reason)}</p>" if self.reason else ""
        return f"<h4>{esc(self.title)} {_badge(self.status)}</h4>{why}<table>{rows}</table>"

    def __repr__(self) -> str:
        return f"{self.title} [{self.status}] {self.reason or ''}\n" + "\n".join(
            f"  {k}: {self.value.get(k)!r}" for k in (self.keys or list(self.value))
        )


def section(ev: Evidence, name: str) -> Section:
    """A titled key/value view of one evidence section, with its status and reason."""
    title, item, keys = SECTIONS.get(name, (name, name, None))
    it = ev.items.get(item)
    if it is None:
        return Section(title, "unavailable", "not collected", {}, keys)
    return Section(title, it.status, it.reason, it.value, keys)


def evidence_html(ev: Evidence) -> str:
    """The evidence overview: verdict, key figures, and every collector's status and reason."""
    h = ev.headline().to_dict()
    rows = "".join(
        f"<tr><td>{esc(k)}</td><td>{_badge(v.status)}</td><td style='text-align:left'>"
        f"{esc(v.reason or '')}</td><td>{v.duration_s:.2f}s</td></tr>"
        for k, v in ev.items.items()
    )
    figs = "".join(
        f"<tr><th style='text-align:left'>{esc(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in h["figures"].items()
    )
    return (
        f"<h3>Evidence: {_badge(h['verdict'])}</h3><p>source <code>{esc(ev.source)}</code>, "
        f"collected {esc(ev.collected_at)}, written to <code>{esc(ev.evidence_dir or '')}"
        f"</code></p><table>{figs}</table><table><tr><th>collector</th><th>status</th><th>reason</th>"
        f"<th>time</th></tr>{rows}</table>"
    )


def gpu_table(ev: Evidence) -> pd.DataFrame:
    """One row per GPU (name, compute capability, memory, NVLink), as a DataFrame."""
    import pandas as pd

    cols = [
        "index",
        "name",
        "pci_bus_id",
        "compute_capability",
        "brand",
        "brand_class",
        "architecture",
        "memory_total_mib",
        "memory_used_mib",
        "persistence_mode",
        "mig_mode",
        "ecc_errors_uncorrected",
        "nvlink_active_links",
    ]
    gpus = ev.get("nvidia", "gpus") or []
    df = pd.DataFrame([{c: g.get(c) for c in cols} for g in gpus], columns=cols)
    return df.set_index("index") if len(df) else df


def memory_figure(ev: Evidence) -> FigureView:
    """GPU memory used / total per GPU (a figure that displays itself)."""
    import plotly.graph_objects as go

    gpus = ev.get("nvidia", "gpus") or []
    labels = [f"GPU{g.get('index')}" for g in gpus]
    used = [(g.get("memory_used_mib") or 0) / 1024 for g in gpus]
    free = [max(0.0, ((g.get("memory_total_mib") or 0) - (g.get("memory_used_mib") or 0)) / 1024) for g in gpus]
    fig = go.Figure(
        [
            go.Bar(name="used GiB", x=labels, y=used, marker_color=PALETTE["bad"]),
            go.Bar(name="free GiB", x=labels, y=free, marker_color=PALETTE["muted"]),
        ]
    )
    title = "GPU memory per device" if gpus else "GPU memory per device: no GPUs established"
    fig.update_layout(barmode="stack", title=title, yaxis_title="GiB", height=360)
    return FigureView(fig)


def _topo_score(label: str) -> float:
    if label == "X":
        return 0
    if label.startswith("NV"):
        try:
            return 5 + min(int(label[2:]), 18) / 18 * 2
        except ValueError:
            return 5
    return {"PIX": 4, "PXB": 3, "PHB": 2, "NODE": 1.5, "SYS": 1}.get(label, 0.5)


def topology_figure(ev: Evidence) -> FigureView:
    """The GPU-to-GPU topology matrix as a heatmap (a figure that displays itself)."""
    import plotly.graph_objects as go

    topo = ev.get("nvidia", "topology") or {}
    names = topo.get("gpus") or []
    matrix = topo.get("matrix") or []
    fig = go.Figure()
    if names and matrix:
        z = [[_topo_score(c) for c in row] for row in matrix]
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=names,
                y=names,
                text=matrix,
                texttemplate="%{text}",
                colorscale="Greens",
                showscale=False,
                hovertemplate="%{y}→%{x}: %{text}",
            )
        )
        fig.update_yaxes(autorange="reversed")
        fig.update_layout(title=f"GPU-to-GPU topology ({topo.get('source', '')})", height=420)
    else:
        fig.update_layout(title="GPU-to-GPU topology: not established", height=200)
    return FigureView(fig)


@dataclass
class LogsView:
    """The stored logs: sizes, truncation, and the first errors with line numbers."""

    files: list[dict[str, Any]]
    status: str
    reason: str | None

    def _repr_html_(self) -> str:
        if not self.files:
            return f"<h4>Logs {_badge(self.status)}</h4><p>{esc(self.reason or 'no logs')}</p>"
        parts = [f"<h4>Logs {_badge(self.status)}</h4>"]
        if self.reason:
            parts.append(f"<p><b>Note:</b> {esc(self.reason)}</p>")
        for f in self.files:
            errs = "".join(
                f"<tr><td>{e['line']}</td><td style='text-align:left'><code>{esc(e['text'])}</code></td></tr>"
                for e in f.get("first_errors") or []
            )
            trunc = " (head and tail stored)" if f.get("truncated") else ""
            parts.append(
                f"<p><b>{esc(f['name'])}</b>: {f['lines']} lines, {f['bytes']} bytes, stored as "
                f"<code>{esc(f['stored_as'])}</code>{trunc}</p>"
                + (
                    f"<table><tr><th>line</th><th>first error lines</th></tr>{errs}</table>"
                    if errs
                    else "<p>no error lines</p>"
                )
            )
        return "".join(parts)


def logs_view(ev: Evidence) -> LogsView:
    """The logs view of the evidence."""
    it = ev.items.get("logs")
    return LogsView(
        (it.value.get("files") if it else None) or [],
        it.status if it else "unavailable",
        it.reason if it else "not collected",
    )


def unavailable_table(ev: Evidence) -> pd.DataFrame:
    """What could not be established, and why, as a DataFrame."""
    import pandas as pd

    rows = [
        {"collector": k, "status": v.status, "reason": v.reason or ""} for k, v in ev.items.items() if v.status != "ok"
    ]
    return pd.DataFrame(rows, columns=["collector", "status", "reason"])


def _dicts(v: Any) -> list[dict[str, Any]]:
    """The dict rows of a list read from evidence.json (anything else in it is not a row)."""
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


_TONE = {"healthy": "good", "degraded": "warn", "faulty": "bad", "pass": "good", "fail": "bad"}


@dataclass
class HardwareView:
    """The hardware verdict with every finding (source linked), and the start-up fit per check."""

    hardware: dict[str, Any]
    fit: dict[str, Any]

    def _repr_html_(self) -> str:
        from ..display import banner, cells_table, html_table, link

        hw, fit = _dict(self.hardware), _dict(self.fit)
        verdict = str(hw.get("verdict") or "unknown")
        counts = _dict(hw.get("counts"))
        parts = [
            banner(
                f"Hardware: {verdict}",
                f"{counts.get('faulty', 0)} faulty, {counts.get('degraded', 0)} degraded, {counts.get('info', 0)} "
                f"notes; GPUs {hw.get('gpus_seen')} of {hw.get('expected_gpus') or '?'} expected "
                f"({hw.get('expected_from') or 'no expectation'})",
                _TONE.get(verdict, "unknown"),
            ),
            cells_table(
                ["severity", "GPU", "check", "finding", "action", "source"],
                [
                    [
                        esc(f.get("severity")),
                        esc(f.get("gpu")),
                        esc(f.get("check")),
                        esc(f.get("text")),
                        esc(f.get("action")),
                        link(f.get("source")),
                    ]
                    for f in _dicts(hw.get("findings"))
                ],
            ),
        ]
        status = str(fit.get("status") or "unknown")
        parts.append(
            banner(
                f"Start-up fit: {status}",
                f"--gpu-memory-utilization {fit.get('gpu_memory_utilization')} ({fit.get('utilization_from')})",
                _TONE.get(status, "unknown"),
            )
        )
        parts.append(html_table(_dicts(fit.get("memory")), ["gpu", "status", "free_mib", "needed_mib", "why"]))
        rows = [{"check": k, **_dict(fit.get(k))} for k in ("disk", "ready_timeout")]
        parts.append(html_table(rows, ["check", "status", "why"]))
        return "\n".join(parts)


def hardware_view(ev: Evidence) -> HardwareView:
    """Runbook 01's hardware verdict and start-up fit as one view."""
    return HardwareView(ev.established("hardware"), ev.established("fit"))
