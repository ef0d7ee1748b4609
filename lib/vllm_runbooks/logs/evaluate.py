"""Score the classifier on a labelled corpus (JSON lines: id, label, log, context).

Kept in the library (not only the script) so a test can hold the accuracy floor. Entries whose
``context.signature_in_log`` is false lack the deciding line; they are scored separately,
because no classifier can be right on them except by guessing.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from .classify import diagnose_text
from .signatures import LABELS

# The team's labelled corpus sits beside the checkout (../shared/); override with VLLM_RUNBOOKS_CORPUS.
DEV_CORPUS = Path(
    os.environ.get("VLLM_RUNBOOKS_CORPUS")
    or Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "logs_dev.jsonl"
)


#: Labels that name no cause: a verdict with one of them is not "naming a cause".
NOT_A_CAUSE = frozenset({"healthy", "unrecognized_error", "inconclusive"})


#: Labels that say no failure was seen (the rest are a cause or an unexplained error).
NOT_A_FAILURE = frozenset({"healthy", "inconclusive"})


def failure_called_healthy(expected: str, predicted: str) -> bool:
    """A real failure (a cause, or an unexplained error) the verdict called healthy: the worst miss."""
    return expected not in NOT_A_FAILURE and predicted == "healthy"


def healthy_called_failure(expected: str, predicted: str) -> bool:
    """A healthy log the verdict called a failure: a false alarm that would block a rollout."""
    return expected == "healthy" and predicted not in NOT_A_FAILURE


def figures(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """The four figures the issue tracker reports, from (expected, predicted) pairs.

    ``accuracy``; ``precision_named``: right among the logs where a cause was named;
    ``recall_failures``: real failures with a known cause whose cause was named right;
    ``failures_called_healthy`` and ``healthy_called_failure`` (counts; the goal for both is 0).
    """
    n = len(pairs)
    named = [(e, p) for e, p in pairs if p not in NOT_A_CAUSE]
    causes = [(e, p) for e, p in pairs if e not in NOT_A_CAUSE]
    return {
        "n": n,
        "accuracy": sum(e == p for e, p in pairs) / n if n else None,
        "named": len(named),
        "precision_named": sum(e == p for e, p in named) / len(named) if named else None,
        "failures_with_cause": len(causes),
        "recall_failures": sum(e == p for e, p in causes) / len(causes) if causes else None,
        "failures_called_healthy": sum(failure_called_healthy(e, p) for e, p in pairs),
        "healthy_called_failure": sum(healthy_called_failure(e, p) for e, p in pairs),
    }


def per_label(pairs: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Support, precision and recall per label (labels that occur as expected or predicted)."""
    out: dict[str, dict[str, Any]] = {}
    for lab in LABELS:
        support = sum(e == lab for e, _ in pairs)
        predicted = sum(p == lab for _, p in pairs)
        if support or predicted:
            tp = sum(e == p == lab for e, p in pairs)
            out[lab] = {
                "support": support,
                "precision": tp / predicted if predicted else None,
                "recall": tp / support if support else None,
            }
    return out


def load_corpus(path: str | Path = DEV_CORPUS) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: not JSON: {exc}") from None
    return rows


def evaluate(path: str | Path = DEV_CORPUS, engine: str = "auto") -> dict[str, Any]:
    """Accuracy, per-label precision/recall, confusion, healthy false alarms, misses."""
    rows = load_corpus(path)
    scored: list[dict[str, Any]] = []
    for r in rows:
        d = diagnose_text(r["log"], engine=engine)
        rc = d.root_cause
        scored.append(
            {
                "id": r["id"],
                "expected": r["label"],
                "secondary": r.get("secondary_labels") or [],
                "predicted": d.label,
                "signature_in_log": (r.get("context") or {}).get("signature_in_log", True) is not False,
                "evidence": f"line {rc.line}: {rc.text[:140]}" if rc else d.reason,
            }
        )
    main = [s for s in scored if s["signature_in_log"]]
    special = [s for s in scored if not s["signature_in_log"]]
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    for s in main:
        confusion[s["expected"]][s["predicted"]] += 1
        if s["expected"] == s["predicted"]:
            tp[s["expected"]] += 1
        else:
            fp[s["predicted"]] += 1
            fn[s["expected"]] += 1
    per_label = {}
    for lab in LABELS:
        support = tp[lab] + fn[lab]
        predicted = tp[lab] + fp[lab]
        if support or predicted:
            per_label[lab] = {
                "support": support,
                "precision": tp[lab] / predicted if predicted else None,
                "recall": tp[lab] / support if support else None,
            }
    correct = sum(s["expected"] == s["predicted"] for s in main)
    return {
        "corpus": str(path),
        "engine": engine,
        "n": len(scored),
        "n_main": len(main),
        "accuracy": correct / len(main) if main else 0.0,
        "accuracy_all": sum(s["expected"] == s["predicted"] for s in scored) / len(scored) if scored else 0.0,
        "per_label": per_label,
        "confusion": {k: dict(v) for k, v in confusion.items()},
        "healthy_false_alarms": [s for s in main if healthy_called_failure(s["expected"], s["predicted"])],
        "healthy_called_inconclusive": [
            s for s in main if s["expected"] == "healthy" and s["predicted"] == "inconclusive"
        ],
        "failures_called_healthy": [s for s in scored if failure_called_healthy(s["expected"], s["predicted"])],
        "failures": sum(s["expected"] not in NOT_A_FAILURE for s in scored),
        "errors": [s for s in main if s["expected"] != s["predicted"]],
        "special": special,
    }


def format_report(rep: dict[str, Any]) -> str:
    """Plain-text report for the terminal."""
    out = [
        f"corpus: {rep['corpus']}  engine: {rep['engine']}",
        f"accuracy (signature in log): {rep['accuracy']:.3f}  ({rep['n_main']} logs)",
        f"accuracy (all {rep['n']} logs):   {rep['accuracy_all']:.3f}",
        "",
        f"{'label':30} {'n':>3} {'precision':>9} {'recall':>7}",
    ]
    for lab, m in rep["per_label"].items():
        p = "-" if m["precision"] is None else f"{m['precision']:.2f}"
        r = "-" if m["recall"] is None else f"{m['recall']:.2f}"
        out.append(f"{lab:30} {m['support']:>3} {p:>9} {r:>7}")
    out += ["", "confusion (expected -> predicted, off-diagonal only):"]
    off = [(e, p, n) for e, row in rep["confusion"].items() for p, n in row.items() if e != p]
    out += [f"  {e:28} -> {p:28} {n}" for e, p, n in sorted(off)] or ["  (none)"]
    out += ["", f"healthy logs called a failure: {len(rep['healthy_false_alarms'])}"]
    out += [f"  {s['id']}: {s['predicted']} ({s['evidence']})" for s in rep["healthy_false_alarms"]]
    out += [f"healthy logs called inconclusive (no proof in the excerpt): {len(rep['healthy_called_inconclusive'])}"]
    out += [f"  {s['id']}" for s in rep["healthy_called_inconclusive"]]
    out += [f"failures called healthy: {len(rep['failures_called_healthy'])} of {rep['failures']}"]
    out += [f"  {s['id']}: expected {s['expected']}" for s in rep["failures_called_healthy"]]
    out += ["", "misclassified (signature in log):"]
    out += [f"  {s['id']}: expected {s['expected']}, got {s['predicted']} ({s['evidence']})" for s in rep["errors"]]
    out += ["", "deciding line missing (signature_in_log: false), scored separately:"]
    out += [
        f"  {s['id']}: expected {s['expected']}, got {s['predicted']}"
        + (" (ok)" if s["expected"] == s["predicted"] else "")
        for s in rep["special"]
    ]
    return "\n".join(out)
