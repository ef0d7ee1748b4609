"""HTML views of the compatibility decision (kept out of the records so they stay plain data)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display as H

if TYPE_CHECKING:
    from .records import CompatDecision


def decision_html(self: CompatDecision) -> str:
    """The verdict, reasons, facts with sources, evidence used, risks, demands and log checks."""
    parts = [f"<h4>Compatibility verdict: {H.badge(self.verdict)}</h4><p>{H.esc(self.summary)}</p>"]
    if self.missing:
        parts.append(f"<p><b>Missing input:</b> {H.esc(', '.join(self.missing))}</p>")
    parts.append("<b>Reasons</b>" + H.bullets(self.reasons))
    parts.append(
        "<b>Facts relied on</b>"
        + H.cells_table(
            ["fact", "status", "source"], [[H.esc(f.text), H.esc(f.status), H.link(f.source)] for f in self.facts]
        )
    )
    parts.append(
        "<b>Evidence used</b>"
        + H.cells_table(
            ["field", "value", "from"],
            [
                [H.esc(k), H.esc(v), H.esc(self.inputs.sources.get(k) or self.inputs.derived.get(k) or "input")]
                for k, v in self.evidence_used.items()
            ],
        )
    )
    if self.container_start:
        cs = self.container_start
        state = {True: "starts", False: "refused", None: "cannot tell"}[cs.will_start]
        parts.append(f"<b>Container start (NVIDIA_REQUIRE_CUDA):</b> {H.badge(state)} {H.esc(cs.message)}")
    if self.risks:
        parts.append(
            "<br><b>Beside the verdict</b>"
            + H.cells_table(
                ["severity", "kind", "what", "source"],
                [
                    [
                        H.badge(r.severity),
                        H.esc(r.kind),
                        H.esc(r.text),
                        " ".join(H.link(f.source, f.status) for f in r.facts),
                    ]
                    for r in self.risks
                ],
            )
        )
    if self.profile_demands:
        parts.append(
            f"<b>Profile {H.esc(self.profile)} demands</b>"
            + H.cells_table(
                ["demand", "status", "detail", "source"],
                [[H.esc(d.demand), H.badge(d.status), H.esc(d.text), H.link(d.source)] for d in self.profile_demands],
            )
        )
    if self.log_checks:
        n = len(self.contradictions)
        parts.append(
            f"<b>Log findings vs verdict</b> ({n} contradiction{'s' if n != 1 else ''})"
            + H.cells_table(
                ["label", "relation", "why", "line", "text"],
                [
                    [
                        H.esc(c.label),
                        H.badge(c.relation),
                        H.esc(c.why),
                        H.esc(c.line),
                        f"<code>{H.esc(c.text)}</code>",
                    ]
                    for c in self.log_checks
                ],
            )
        )
    if self.routes:
        parts.append("<b>Next lines to investigate</b>" + H.bullets(self.routes))
    return "\n".join(parts)
