"""Small HTML helpers so compat results render themselves in Jupyter without extra packages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..display import esc

COLORS = {
    "compatible": "#1a7f37",
    "compatible_minor_version": "#4c9a2a",
    "compatible_forward_compat": "#9a6700",
    "driver_too_old": "#cf222e",
    "arch_unsupported": "#8250df",
    "unknown": "#6e7781",
    "error": "#cf222e",
    "warning": "#9a6700",
    "info": "#0969da",
    "ok": "#1a7f37",
    "confirms": "#1a7f37",
    "contradicts": "#cf222e",
    "neutral": "#6e7781",
    "met": "#1a7f37",
    "unmet": "#cf222e",
}


def badge(text: str) -> str:
    color = COLORS.get(text, "#57606a")
    return (
        f'<span style="background:{color};color:#fff;border-radius:4px;padding:1px 6px;'
        f'font-family:monospace">{esc(text)}</span>'
    )


def link(url: str | None, label: str | None = None) -> str:
    if not url:
        return ""
    return f'<a href="{esc(url)}" target="_blank">{esc(label or url)}</a>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Rows are pre-escaped HTML cells (callers use esc/badge/link)."""
    head = "".join(f"<th style='text-align:left'>{esc(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left;vertical-align:top'>{c}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def ul(items: Iterable[str]) -> str:
    items = list(items)
    return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>" if items else ""
