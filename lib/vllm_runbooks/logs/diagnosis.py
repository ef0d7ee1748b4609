"""Result records of the log classifier: findings, one log's diagnosis, several logs' diagnoses.

They are the contract with runbook 02 (scraps are their ``to_dict()``) and they display
themselves: a table in Jupyter and a plotly timeline of findings by line number.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..records import Record

#: Order of stages on the timeline's y axis (start-up order).
STAGE_ORDER: tuple[str, ...] = (
    "container_start",
    "cuda_init",
    "model_load",
    "kv_cache",
    "multi_gpu",
    "serving",
    "unknown",
)

#: Diagnosis status values.
STATUS_OK = "ok"  # the log was read (fully or up to a stated limit) and classified
STATUS_EMPTY = "empty"  # nothing (or only whitespace) to read: not evidence of health
STATUS_UNREADABLE = "unreadable"  # missing path, permission denied, not a file, ...

#: How sure the label is. ``decisive``: a line that states the cause (or, for ``healthy``, that
#: the server answered, with nothing failure-looking). ``likely``: the cause is inferred (a
#: warning, a numeric code, an OOM placed by the last phase marker, unexplained errors).
#: ``inconclusive``: the log cannot decide; ``would_decide`` says what evidence would.
CONFIDENCES: tuple[str, ...] = ("decisive", "likely", "inconclusive")


def _score_text(value: Any) -> str:
    """A scorer score for display ('0.93'); anything else as text."""
    return f"{value:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value or "")


def _candidate_cells(candidates: Any) -> str:
    """Escaped 'label score' lines of a candidates list (any shape: it is data)."""
    from ..display import esc

    out = []
    for c in candidates if isinstance(candidates, list) else []:
        if isinstance(c, dict):
            out.append(f"{esc(c.get('label'))} <b>{esc(_score_text(c.get('score')))}</b>")
        else:
            out.append(esc(c))
    return "<br>".join(out)


def _rest_cells(scorer: Any) -> str:
    """Escaped 'line N: text' of the lines the scorer rests on."""
    from ..display import esc

    lines = scorer.get("lines") if isinstance(scorer, dict) else None
    out = []
    for ln in lines if isinstance(lines, list) else []:
        if isinstance(ln, dict):
            out.append(f"line {esc(ln.get('line'))}: <code>{esc(str(ln.get('text') or '')[:200])}</code>")
        else:
            out.append(f"<code>{esc(str(ln)[:200])}</code>")
    return "<br>".join(out)


@dataclass
class LogFinding(Record):
    """One signature hit: which line, what it said, what it means, what to do next."""

    SCHEMA: ClassVar[str] = "log_finding"
    SCHEMA_VERSION: ClassVar[int] = 1

    signature: str
    label: str
    stage: str
    severity: str
    priority: int
    line: int
    text: str
    match: str = ""
    advice: str = ""
    source: str = ""
    refined_by: str | None = None
    proves: str | None = None


@dataclass
class LogDiagnosis(Record):
    """The classifier's verdict on one log, with the evidence it rests on.

    ``label`` is the root cause (highest-priority finding), ``healthy`` only with proof that the
    server answered and nothing failure-looking, ``unrecognized_error`` for failure-looking lines
    no signature explains, else ``inconclusive`` (also for empty or unreadable logs, with
    ``status`` saying why). ``confidence`` is one of :data:`CONFIDENCES`; ``evidence`` holds the
    deciding lines; ``would_decide`` says what evidence would settle an inconclusive verdict.
    """

    SCHEMA: ClassVar[str] = "log_diagnosis"
    SCHEMA_VERSION: ClassVar[int] = 1

    source: str
    label: str
    status: str = STATUS_OK
    reason: str = ""
    labels: list[str] = field(default_factory=list)
    findings: list[LogFinding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    lines_scanned: int = 0
    bytes_scanned: int = 0
    file_bytes: int | None = None
    compression: str | None = None
    truncated: bool = False
    long_lines: int = 0
    non_utf8: bool = False
    unread: list[str] = field(default_factory=list)
    engine: str = ""
    elapsed_s: float = 0.0
    signatures_version: int = 1
    confidence: str = "inconclusive"
    evidence: list[dict[str, Any]] = field(default_factory=list)
    would_decide: str = ""
    #: The learned scorer's top labels ``[{label, score}]`` (empty when it did not run) and its
    #: reading: model version, best label and score, threshold, whether it named the cause, the
    #: lines it rests on (``logs/scorer.py``; it runs only where no signature decided).
    candidates: list[dict[str, Any]] = field(default_factory=list)
    scorer: dict[str, Any] = field(default_factory=dict)

    # -- derived views -------------------------------------------------------------------
    @property
    def root_cause(self) -> LogFinding | None:
        """The finding that decided ``label`` (None for healthy / inconclusive)."""
        best = None
        for f in self.findings:
            if f.label == self.label and f.severity != "info" and (best is None or f.priority > best.priority):
                best = f
        return best

    @property
    def scored(self) -> bool:
        """Whether ``label`` was named by the learned scorer (then ``likely``, never decisive)."""
        return bool(self.scorer.get("names_cause")) and self.scorer.get("label") == self.label

    @property
    def advice(self) -> str:
        rc = self.root_cause
        if rc is not None:
            return rc.advice
        if self.scored and self.scorer.get("advice"):
            return f"Likely {self.label} (learned scorer, not a signature); {self.scorer['advice']}"
        if self.status != STATUS_OK:
            return f"No verdict: {self.reason}. Collect the full container log (docker logs / kubectl logs)."
        if self.would_decide:
            return self.would_decide
        return "No failure signature found."

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LogDiagnosis:
        obj = super().from_dict(data)
        obj.findings = [f if isinstance(f, LogFinding) else LogFinding.from_dict(f) for f in obj.findings]
        return obj

    def to_frame(self) -> Any:
        """Findings as a pandas DataFrame (one row per finding, in line order)."""
        import pandas as pd

        rows = [dataclasses.asdict(f) for f in sorted(self.findings, key=lambda f: f.line)]
        cols = [f.name for f in dataclasses.fields(LogFinding)]
        return pd.DataFrame(rows, columns=cols)

    def timeline(self) -> Any:
        """Plotly figure: findings by line number, one row per start-up stage."""
        import plotly.graph_objects as go

        fig = go.Figure()
        by_label: dict[str, list[LogFinding]] = {}
        for f in sorted(self.findings, key=lambda f: f.line):
            by_label.setdefault(f.label, []).append(f)
        for label, items in by_label.items():
            fig.add_trace(
                go.Scatter(
                    x=[f.line for f in items],
                    y=[f.stage for f in items],
                    mode="markers",
                    name=label,
                    marker={
                        "size": [8 + f.priority / 8 for f in items],
                        "symbol": ["star" if f is self.root_cause else "circle" for f in items],
                        "line": {"width": 1},
                    },
                    text=[f"line {f.line} · {f.signature}<br>{html.escape(f.text[:160])}" for f in items],
                    hovertemplate="%{text}<extra>" + html.escape(label) + "</extra>",
                )
            )
        used = [s for s in STAGE_ORDER if any(f.stage == s for f in self.findings)]
        fig.update_layout(
            title=f"{self.source}: {self.label}",
            xaxis_title="line number",
            yaxis={"categoryorder": "array", "categoryarray": used[::-1] or list(STAGE_ORDER)},
            height=260 + 30 * len(used),
            margin={"l": 10, "r": 10, "t": 40, "b": 40},
        )
        return fig

    figure = timeline

    def candidates_view(self) -> Any:
        """The learned scorer's candidates, scores and the lines they rest on, as a table.

        Shown beside the timeline in runbook 02: what the scorer considered even when it named
        nothing (a verdict stays ``unrecognized_error`` below the threshold).
        """
        from ..display import HtmlView

        return HtmlView(self._candidates_html())

    def _candidates_html(self) -> str:
        from ..display import cells_table, esc

        if not self.candidates:
            return (
                "<p><i>learned scorer: not run (a signature or proof decided, or nothing looked like a failure)</i></p>"
            )
        named = self.scored
        sc = self.scorer if isinstance(self.scorer, dict) else {}
        note = (
            f"named <b>{esc(self.label)}</b> ({esc(self.confidence)}, score {esc(_score_text(sc.get('score')))} "
            f"&ge; threshold {esc(_score_text(sc.get('threshold')))})"
            if named
            else f"named nothing (best {esc(sc.get('label'))} {esc(_score_text(sc.get('score')))} below threshold "
            f"{esc(_score_text(sc.get('threshold')))} or no cause): verdict stays {esc(self.label)}"
        )
        table = cells_table(
            ["candidates (score)", "lines it rests on"],
            [[_candidate_cells(self.candidates), _rest_cells(self.scorer)]],
        )
        return f"<div><small>learned scorer {esc(sc.get('model'))}: {note}</small></div>{table}"

    def summary(self) -> str:
        """One line for text output and logs."""
        rc = self.root_cause
        where = f" (line {rc.line}: {rc.text[:120]})" if rc else ""
        extra = f" [{self.status}: {self.reason}]" if self.status != STATUS_OK else ""
        return f"{self.source}: {self.label} ({self.confidence}){where}{extra}"

    def _repr_html_(self) -> str:
        from ..display import cells_table, colour, esc

        shown = colour(self.label)
        head = (
            f"<div><b>{esc(self.source)}</b> → <span style='color:{shown};font-weight:bold'>"
            f"{esc(self.label)}</span> <small>({esc(self.confidence)}; {esc(self.status)}; "
            f"{self.lines_scanned:,} lines, "
            f"{self.bytes_scanned:,} bytes"
            + (f", {esc(self.compression)}" if self.compression else "")
            + (", truncated" if self.truncated else "")
            + (f", {self.long_lines} long lines cut" if self.long_lines else "")
            + (", non-UTF-8 bytes" if self.non_utf8 else "")
            + ")</small></div>"
        )
        notes = "".join(f"<li>{esc(n)}</li>" for n in ([self.reason] if self.reason else []) + self.unread)
        notes_html = f"<ul>{notes}</ul>" if notes else ""
        advice = f"<p><b>Next:</b> {esc(self.advice)}</p>"
        rc = self.root_cause
        rows = [
            [
                ("★ " if f is rc else "") + esc(f.label),
                esc(f.line),
                esc(f.stage),
                esc(f.severity),
                f"<code>{esc(f.text[:200])}</code>",
            ]
            for f in sorted(self.findings, key=lambda f: (-f.priority, f.line))[:50]
        ]
        table = (
            cells_table(["label", "line", "stage", "severity", "text"], rows) if rows else "<p><i>no findings</i></p>"
        )
        scores = self._candidates_html() if self.candidates else ""
        return head + notes_html + advice + scores + table


@dataclass
class LogDiagnoses(Record):
    """Diagnoses of several logs (e.g. every container of a multi-GPU deployment)."""

    SCHEMA: ClassVar[str] = "log_diagnoses"
    SCHEMA_VERSION: ClassVar[int] = 1

    items: list[LogDiagnosis] = field(default_factory=list)

    @property
    def label(self) -> str:
        """Overall root cause: the strongest finding across all logs, else the scorer's best cause."""
        best: tuple[int, str] | None = None
        for d in self.items:
            rc = d.root_cause
            if rc is not None and (best is None or rc.priority > best[0]):
                best = (rc.priority, rc.label)
        if best is not None:
            return best[1]
        scored = sorted((d for d in self.items if d.scored), key=lambda d: -float(d.scorer.get("score") or 0))
        if scored:
            return scored[0].label
        if self.items and all(d.label == "healthy" for d in self.items):
            return "healthy"
        if any(d.label == "unrecognized_error" for d in self.items):
            return "unrecognized_error"
        return "inconclusive"

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> LogDiagnosis:
        return self.items[i]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LogDiagnoses:
        obj = super().from_dict(data)
        obj.items = [d if isinstance(d, LogDiagnosis) else LogDiagnosis.from_dict(d) for d in obj.items]
        return obj

    def to_frame(self) -> Any:
        import pandas as pd

        rows = []
        for d in self.items:
            rc = d.root_cause
            rows.append(
                {
                    "source": d.source,
                    "label": d.label,
                    "confidence": d.confidence,
                    "status": d.status,
                    "line": rc.line if rc else None,
                    "text": rc.text if rc else (d.reason or d.would_decide),
                    "lines": d.lines_scanned,
                    "bytes": d.bytes_scanned,
                }
            )
        return pd.DataFrame(rows)

    def candidates_view(self) -> Any:
        """One table for every log the learned scorer read: verdict, candidates with scores, the
        lines they rest on. Runbook 02 shows it beside the timelines."""
        from ..display import HtmlView, badge, cells_table, esc

        rows = [
            [
                esc(d.source),
                badge(d.label) + (" <small>(learned)</small>" if d.scored else ""),
                esc(d.confidence),
                _candidate_cells(d.candidates),
                _rest_cells(d.scorer),
            ]
            for d in self.items
            if d.candidates
        ]
        if not rows:
            return HtmlView("<p><i>learned scorer: not run on any log (signatures or proof decided each)</i></p>")
        return HtmlView(cells_table(["log", "verdict", "confidence", "candidates (score)", "lines it rests on"], rows))

    def _repr_html_(self) -> str:
        from ..display import cells_table, esc

        rows = [
            [
                esc(d.source),
                f"<b>{esc(d.label)}</b>",
                esc(d.confidence),
                esc(d.status),
                esc(d.root_cause.line if d.root_cause else ""),
                f"<code>{esc((d.root_cause.text if d.root_cause else (d.reason or d.would_decide))[:160])}</code>",
            ]
            for d in self.items
        ]
        return f"<div>Overall: <b>{esc(self.label)}</b></div>" + cells_table(
            ["log", "label", "confidence", "status", "line", "evidence"], rows
        )
