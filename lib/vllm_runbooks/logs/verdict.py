"""From findings to a verdict: label, confidence, deciding lines, and what would decide.

Why a separate step: the scan only says which lines matched what; the verdict encodes the
project's rule that a log is never called ``healthy`` without proof. Order of decision:

1. a recognised failure (highest priority wins; a root cause outranks its symptoms);
2. unexplained errors (ERROR lines, tracebacks, unknown return codes) -> ``unrecognized_error``;
3. failure-looking warnings -> ``unrecognized_error``, unless the server's first answer (or, with
   no answer, the last start-up stage finished) comes *after* every one of them (then ``healthy``,
   ``likely``, the warnings listed);
4. proof that the server answered, nothing failure-looking -> ``healthy``;
5. proof that the engine finished the GPU stages of start-up (KV cache allocated, engine
   initialised) and the log stops there, nothing failure-looking -> ``healthy``, ``likely``, and
   ``would_decide`` asks for a request answered. A later ``progress`` line (CUDA-graph capture
   begun, not finished) voids it: a log that stops during capture may be a hang or a kill;
6. otherwise ``inconclusive``, saying what evidence would decide.

``healthy`` on a log that was not read whole (stopped at the byte cap, over-long lines cut) is at
most ``likely``: the unread part may hold the failure, and ``would_decide`` names it.

After these rules, :func:`apply_scores` lets the learned scorer speak where they left
``unrecognized_error`` or ``inconclusive``: above its calibrated threshold it names a cause, always
``likely`` (never ``decisive``), with its top candidates and the lines it rests on; it never turns
anything into ``healthy`` and never overrides a signature's label or a ``healthy`` verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .diagnosis import STATUS_OK, LogDiagnosis, LogFinding
from .signatures import INCONCLUSIVE, SignatureSet

if TYPE_CHECKING:
    from .scorer import Model, ScoredLine

#: Verdicts the learned scorer may replace by a cause (nothing a signature or proof decided).
SCORABLE = frozenset({"unrecognized_error", INCONCLUSIVE})

#: Deciding lines kept in ``evidence``.
MAX_EVIDENCE = 8


def may_score(d: LogDiagnosis, lines: Sequence[ScoredLine]) -> bool:
    """Whether the learned scorer may change this verdict: a readable log, failure-looking lines to
    read, and a verdict no signature or proof decided. One rule for ``apply_scores`` and for the
    caller that decides whether the model's weights are worth loading at all."""
    return bool(lines) and d.status == STATUS_OK and d.label in SCORABLE


def _ev(f: LogFinding, role: str) -> dict[str, object]:
    return {"line": f.line, "text": f.text, "signature": f.signature, "label": f.label, "role": role}


def _rank(f: LogFinding) -> tuple[int, int]:
    return (-f.priority, f.line)


def _unread_part(d: LogDiagnosis) -> str:
    """What of the log was not read, in words ('' when it was read whole)."""
    parts = []
    if d.truncated:
        parts.append(f"everything after the first {d.bytes_scanned:,} bytes")
    if d.long_lines:
        parts.append(f"the rest of {d.long_lines} over-long line(s) that were cut")
    return "; ".join(parts)


def decide(d: LogDiagnosis) -> LogDiagnosis:
    """Fill ``label``, ``labels``, ``confidence``, ``evidence`` and ``would_decide`` of ``d``."""
    if d.status != STATUS_OK:
        d.label, d.confidence, d.labels, d.evidence = INCONCLUSIVE, "inconclusive", [], []
        d.would_decide = (
            "a readable, non-empty log: collect the full container log from process start "
            "(docker logs <container> / kubectl logs <pod> --previous)"
        )
        return d
    findings = d.findings
    serving = [f for f in findings if f.severity == "info" and f.proves == "serving"]
    started = [f for f in findings if f.severity == "info" and f.proves == "started"]
    progress = [f for f in findings if f.severity == "info" and f.proves == "progress"]
    if started and progress and max(f.line for f in progress) > max(f.line for f in started):
        started = []  # the log went on into a later stage (graph capture begun) and stops in it
    specific = [f for f in findings if f.severity != "info" and f.label not in ("unrecognized_error", "healthy")]
    hard = [f for f in findings if f.label == "unrecognized_error" and f.severity in ("critical", "error")]
    soft = [f for f in findings if f.label == "unrecognized_error" and f.severity == "warning"]

    ranked: dict[str, tuple[int, int]] = {}
    for f in specific + hard:
        if f.label not in ranked or _rank(f) < ranked[f.label]:
            ranked[f.label] = _rank(f)
    d.labels = sorted(ranked, key=lambda lab: ranked[lab])
    d.would_decide = ""

    if specific:
        top = min(specific, key=_rank)
        d.label = top.label
        inferred = top.signature == "nvidia_return_code" or (top.refined_by or "").endswith("(last phase before)")
        d.confidence = "decisive" if top.severity == "critical" and not inferred else "likely"
        if d.label in ("oom_runtime", "oom_weights") and top.refined_by is None:
            d.confidence = "likely"
            d.would_decide = (
                "which start-up phase the OOM happened in: the lines before it (weight loading, "
                "memory profiling, CUDA-graph capture, or requests being served)"
            )
        d.evidence = [_ev(top, "cause")] + [
            _ev(f, "also") for f in sorted(specific, key=_rank)[1:MAX_EVIDENCE] if f is not top
        ]
        return d
    if hard:
        d.label, d.confidence = "unrecognized_error", "likely"
        d.evidence = [_ev(f, "unexplained") for f in sorted(hard, key=lambda f: f.line)[:MAX_EVIDENCE]]
        d.would_decide = (
            "a known cause for the lines shown: read the first one in context; if it recurs, "
            "add a signature to log_signatures.yaml"
        )
        return d
    # The proof that forgives earlier warnings: the server's first answer (a later one could follow
    # a failure it did not recover from), else the last start-up stage finished.
    proof = serving[0] if serving else max(started, key=lambda f: f.line) if started else None
    if soft and not (proof and proof.line > max(f.line for f in soft)):
        d.label, d.confidence = "unrecognized_error", "inconclusive"
        d.evidence = [_ev(f, "failure-looking") for f in soft[:MAX_EVIDENCE]]
        d.would_decide = (
            "whether start-up continued past these lines: the rest of the log up to the server "
            "answering (e.g. 'Application startup complete', requests with 200) or an error that names the cause"
        )
        return d
    if proof:
        d.label = "healthy"
        d.confidence = "likely" if soft or not serving else "decisive"
        d.evidence = [_ev(proof, "proof")] + [_ev(f, "noted") for f in soft[: MAX_EVIDENCE - 1]]
        if not serving:
            d.would_decide = (
                f"a request answered: start-up finished (line {proof.line}) with nothing failing, but the "
                "log stops before the server answers (e.g. 'GET /v1/models' 200, 'Application startup complete')"
            )
        unread = _unread_part(d)
        if unread:  # a failure may hide in what was not read: healthy is then never decisive
            d.confidence = "likely"
            d.would_decide = f"the part of the log that was not read ({unread}): read the whole log"
        return d
    d.label, d.confidence = INCONCLUSIVE, "inconclusive"
    d.evidence = [_ev(f, "progress") for f in progress[-3:]]
    if progress:
        d.would_decide = (
            f"the log stops during start-up (last progress at line {progress[-1].line}) with no failure: "
            "the later lines up to the server answering, or the first error"
        )
    elif d.reason:
        d.would_decide = f"{d.reason}: a text log of the server process"
    else:
        d.would_decide = (
            "no start-up, serving or failure lines were recognised: the full log of the serving "
            "process from its start (docker logs / kubectl logs --previous)"
        )
    return d


def _label_advice(sigset: SignatureSet | None, label: str) -> tuple[str, str]:
    """(advice, source) of the highest-priority decisive signature of ``label``, named as such."""
    best = None
    for sig in sigset.signatures if sigset is not None else ():
        if sig.label == label and sig.decisive and (best is None or sig.priority > best.priority):
            best = sig
    if best is None:
        return "", ""
    return f"what signature '{best.id}' advises for this cause: {best.advice}", best.source


def apply_scores(
    d: LogDiagnosis,
    lines: Sequence[ScoredLine],
    model: Model | None,
    sigset: SignatureSet | None = None,
) -> LogDiagnosis:
    """Add the learned scorer's reading to a decided diagnosis; name its cause only where allowed.

    The candidates and scores are recorded whenever the scorer ran, so a reader sees what it
    considered even when it named nothing. A named cause is ``likely``, the lines it rests on
    are the evidence (role ``scored``), and ``would_decide`` says how to confirm it.
    """
    if model is None or not may_score(d, lines):
        return d
    from .scorer import predict

    pred = predict(model, lines)
    if pred is None:
        return d
    d.candidates = pred.candidates
    d.scorer = pred.as_dict()
    if not pred.names_cause:
        return d
    before = d.label
    advice, source = _label_advice(sigset, pred.label)
    d.scorer.update({"replaced": before, "advice": advice, "source": source})
    d.label, d.confidence = pred.label, "likely"
    d.labels = [pred.label] + [lab for lab in d.labels if lab != pred.label]
    scored = [
        {"line": ln["line"], "text": ln["text"], "signature": "learned_scorer", "label": pred.label, "role": "scored"}
        for ln in pred.lines
    ]
    shown = {e["line"] for e in scored}
    rest = [e for e in d.evidence if e.get("role") != "progress" and e.get("line") not in shown]
    d.evidence = (scored + rest)[:MAX_EVIDENCE]
    alts = ", ".join(f"{c['label']} {c['score']:.2f}" for c in pred.candidates)
    d.would_decide = (
        f"confirmation of the learned scorer's reading ({alts}; threshold {pred.threshold:.2f}): read the "
        "lines shown in context; a signature for this wording in log_signatures.yaml would make it decisive"
    )
    return d
