#!/usr/bin/env python3
"""Train the learned log scorer from every labelled excerpt the project holds; deterministic, offline.

Usage: scripts/train_log_scorer.py [--output PATH] [--sets PATH ...] [--cv] [--json]
                                   [--folds N] [--projects N] [--jobs N] [--exclude-set NAME ...]

Reads the labelled sets (the team's dev corpus ``../shared/corpus/logs_dev.jsonl`` and
``tests/data/logs_*.jsonl``), runs each excerpt through the same scan ``diagnose-log`` uses
(``logs.classify.signature_diagnosis``) to get the failure-looking lines and their phases, and
fits a multinomial logistic regression on their features (``logs/scorer.py``; L2-regularised,
class-balanced, L-BFGS from zero in numpy, so the same data gives the same weights). The
temperature and the threshold are calibrated on held-out predictions of ten folds grouped by
project (the GitHub repository of each excerpt's source URL; an excerpt is never scored by a
model that saw its repository), so they are fixed by the data, not by hand. The output
(``lib/vllm_runbooks/data/log_scorer.json`` by default) is byte-identical for the same inputs:
sorted keys, weights rounded to 0.01; it records the SHA-256 of the training rows, of the
signature file and this script's version. Needs only the project's own dependencies.

``--cv`` prints cross-validated figures for the scorer alone and for the whole verdict
(signatures, then the scorer) overall and per label, by default leave-one-project-out
(``--folds 0``, one fold per repository: 723 fits at 1,747 excerpts, each started from the
all-data solution; 2 h 19 min with ``--jobs 2`` on a shared two-core machine; 1,083 projects at
2,980 excerpts would take about three hours, so ``--projects 250`` leaves out a fixed sample of 250
projects and scores only their excerpts: 84 minutes; ``--folds 10``: about ten minutes);
``--json`` prints them as JSON. ``--jobs N`` runs the fold fits in N forked processes (the same
models as one process).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from vllm_runbooks.logs.classify import signature_diagnosis
from vllm_runbooks.logs.evaluate import (
    DEV_CORPUS,
    NOT_A_CAUSE,
    figures,
    healthy_called_failure,
    load_corpus,
    per_label,
)
from vllm_runbooks.logs.scorer import NO_CAUSE, Model, feature_kind, line_features, predict
from vllm_runbooks.logs.signatures import LABELS, default_signatures_bytes
from vllm_runbooks.logs.verdict import SCORABLE, apply_scores, may_score

#: Bump when training changes in a way that changes the output for the same data.
SCRIPT_VERSION = "4"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = ROOT / "lib" / "vllm_runbooks" / "data" / "log_scorer.json"
#: Every labelled set the project holds: the team's dev corpus and ``tests/data/logs_*.jsonl``
#: (a new blind batch is trained on once it is scored and committed there, then retrained).
DEFAULT_SETS = [DEV_CORPUS, *sorted((ROOT / "tests" / "data").glob("logs_*.jsonl"))]
#: Cause labels the scorer may name (the fixed vocabulary without the verdict-only labels).
CAUSES = [lab for lab in LABELS if lab not in NOT_A_CAUSE]
CLASSES = [*CAUSES, NO_CAUSE]
#: Feature weights by kind (character 4-grams overlap each other, so each counts less).
WEIGHTS = {"w": 1.0, "b": 1.0, "c": 0.25, "code": 2.0, "lib": 1.0, "phase": 1.0}
#: Inverse strength of the L2 penalty (chosen on grouped cross-validation: 4 and 64 did worse on
#: new wordings than 16).
C = 16.0
MAX_ITERATIONS = 500
#: A feature must occur in this many training logs to be kept (one-off paths, ids and names go).
MIN_DF = 2
#: Shipped weights are rounded to this many decimals (reviewable, reproducible bytes), and a
#: weight smaller than PRUNE is dropped (most of them: the file is a third of its size, and
#: grouped cross-validation moved by less than 0.01).
DECIMALS = 2
PRUNE = 0.05
#: Folds for calibrating the temperature and the threshold (grouped by project).
CALIBRATION_FOLDS = 10
TEMPERATURES = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
#: Thresholds tried, in steps of 0.01 (version 3; steps of 0.05 jumped from 0.80, at precision
#: 0.9498, to 0.85 on 1,222 excerpts, giving up 3 points of accuracy for a rounding step).
THRESHOLDS = [round(0.10 + 0.01 * i, 2) for i in range(90)]
#: The calibrated threshold is the smallest one at which the cross-validated precision of the
#: causes the scorer names reaches this.
TARGET_PRECISION = 0.95

_REPO = re.compile(r"https?://github\.com/([^/\s]+/[^/\s#?]+)")


def group_of(row: dict[str, Any]) -> str:
    """The fold of an excerpt: the GitHub repository of its source URL (lower case)."""
    m = _REPO.match(str(row.get("source_url") or ""))
    return m.group(1).lower() if m else str(row.get("source_url") or row.get("id"))


def target_of(label: str) -> str:
    """What the scorer learns for a row: its cause, or ``none`` for verdict-only labels."""
    return label if label in CAUSES else NO_CAUSE


def load_sets(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Rows of every set, tagged with the set's file name; missing sets are an error."""
    rows: list[dict[str, Any]] = []
    for p in paths:
        for r in load_corpus(p):
            rows.append({**r, "_set": Path(p).name})
    return rows


def training_sha256(rows: Sequence[dict[str, Any]]) -> str:
    """SHA-256 of the rows as trained on (id, label, log, source URL), independent of file layout."""
    h = hashlib.sha256()
    for r in rows:
        item = [r["_set"], r["id"], r["label"], r.get("source_url", ""), r["log"]]
        h.update(json.dumps(item, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def extract(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per row: the signatures' verdict, the scorer's lines, and the binary feature set."""
    out = []
    for r in rows:
        d, lines = signature_diagnosis(str(r["log"]).encode("utf-8", "surrogateescape"))
        feats: set[str] = set()
        for ln in lines:
            feats.update(line_features(ln.text, ln.phase))
        out.append({"row": r, "diag": d, "lines": lines, "feats": feats, "group": group_of(r)})
    return out


def fold_of(group: str, folds: int) -> str:
    """The fold a project falls in: itself (``folds`` 0), else a stable hash of its name."""
    if folds <= 0:
        return group
    return f"fold-{int(hashlib.sha256(group.encode('utf-8')).hexdigest()[:8], 16) % folds}"


def _inputs(feats: set[str], vocab: dict[str, int]) -> tuple[list[int], list[float]]:
    """Column indices and values of one log, as ``Model.inputs`` builds them at prediction."""
    known = sorted(f for f in feats if f in vocab)
    vals = [WEIGHTS.get(feature_kind(f), 1.0) for f in known]
    norm = math.sqrt(sum(v * v for v in vals))
    return [vocab[f] for f in known], [v / norm for v in vals]


class _Rows:
    """A sparse matrix (rows of a log each) with the two products the gradient needs."""

    def __init__(self, rows: Sequence[tuple[list[int], list[float]]], ncols: int) -> None:
        counts = [len(cols) for cols, _ in rows]
        self.n, self.m = len(rows), ncols
        self.cols = np.array([c for cols, _ in rows for c in cols], dtype=np.int64)
        self.vals = np.array([v for _, vals in rows for v in vals], dtype=np.float64)
        self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        by_col = np.argsort(self.cols, kind="stable")
        # the entries again in column order, so X.T @ G gathers once (a quarter faster, same sums)
        self.vals_by_col = self.vals[by_col]
        self.row_by_col = np.repeat(np.arange(self.n), counts)[by_col]
        self.col_starts = np.searchsorted(self.cols[by_col], np.arange(ncols))

    def dot(self, w: np.ndarray) -> np.ndarray:
        """X @ W (every row has at least one entry)."""
        return np.add.reduceat(self.vals[:, None] * w[self.cols], self.starts, axis=0)

    def tdot(self, g: np.ndarray) -> np.ndarray:
        """X.T @ G (every column has at least one entry: the vocabulary comes from these rows)."""
        return np.add.reduceat(self.vals_by_col[:, None] * g[self.row_by_col], self.col_starts, axis=0)


def _lbfgs(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x: np.ndarray, history: int = 10) -> np.ndarray:
    """Minimise a smooth convex function: L-BFGS with a backtracking (Armijo) line search.

    Written here so training needs nothing beyond numpy; from the same start it takes the same
    steps, so the weights are the same on every run.
    """
    loss, g = fun(x)
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
    for _ in range(MAX_ITERATIONS):
        q = g.copy()
        alphas = []
        for s, y, rho in reversed(pairs):
            a = rho * float(np.dot(s, q))
            alphas.append(a)
            q -= a * y
        if pairs:
            s, y, _ = pairs[-1]
            q *= float(np.dot(s, y)) / float(np.dot(y, y))
        else:
            q /= max(1.0, float(np.linalg.norm(g)))
        for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
            q += s * (a - rho * float(np.dot(y, q)))
        direction = -q
        slope = float(np.dot(g, direction))
        if slope >= 0:  # not a descent direction: restart from the gradient
            pairs, direction, slope = [], -g, -float(np.dot(g, g))
        step = 1.0
        while True:
            nx = x + step * direction
            nloss, ng = fun(nx)
            if nloss <= loss + 1e-4 * step * slope or step < 1e-10:
                break
            step *= 0.5
        s, y = nx - x, ng - g
        sy = float(np.dot(s, y))
        if sy > 1e-12:
            pairs = [*pairs, (s, y, 1.0 / sy)][-history:]
        x, loss, g = nx, nloss, ng
        if float(np.max(np.abs(g))) < 1e-6 * max(1.0, abs(loss)):
            break
    return x


class Solution(NamedTuple):
    """The unrounded optimum of one fit: its feature names and weights, bias last."""

    names: list[str]
    theta: np.ndarray


def fit(
    items: Sequence[dict[str, Any]],
    temperature: float = 1.0,
    threshold: float = 1.0,
    start: Solution | None = None,
) -> Model:
    """Fit the logistic regression: class-balanced cross-entropy times C plus half the squared weights."""
    return to_model(solve(items, start), temperature, threshold)


def solve(items: Sequence[dict[str, Any]], start: Solution | None = None) -> Solution:
    """The minimiser of the fit's objective over ``items``' features (document frequency >= MIN_DF).

    ``start`` (another solution, e.g. on all the data) only chooses where L-BFGS starts: the
    objective is strictly convex, so the minimiser is the same, and the stopping rule (the
    gradient's largest component below 1e-6 of the loss) the same. Leave-one-project-out fits
    start from the all-data solution and take about a fifth of the time.
    """
    idx = {c: i for i, c in enumerate(CLASSES)}
    df: dict[str, int] = {}
    for it in items:
        for f in it["feats"]:
            df[f] = df.get(f, 0) + 1
    names = sorted(f for f, n in df.items() if n >= MIN_DF)
    vocab = {f: i for i, f in enumerate(names)}
    rows, targets = [], []
    for it in items:
        cols, vals = _inputs(it["feats"], vocab)
        if cols:
            rows.append((cols, vals))
            targets.append(idx[target_of(it["row"]["label"])])
    k, d = len(CLASSES), len(names)
    theta = np.zeros(d * k + k)
    if rows and start is not None:
        at = {f: i for i, f in enumerate(start.names)}
        prior = start.theta[: len(start.names) * k].reshape(len(start.names), k)
        for i, f in enumerate(names):
            if f in at:
                theta[i * k : (i + 1) * k] = prior[at[f]]
        theta[d * k :] = start.theta[len(start.names) * k :]
    if rows:
        x = _Rows(rows, d)
        y = np.array(targets, dtype=np.int64)
        per_class = np.bincount(y, minlength=k)
        sample_w = len(y) / (np.count_nonzero(per_class) * per_class[y])
        onehot = np.zeros((len(y), k))
        onehot[np.arange(len(y)), y] = 1.0

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            w, b = theta[: d * k].reshape(d, k), theta[d * k :]
            z = x.dot(w) + b
            z -= z.max(axis=1, keepdims=True)
            lse = np.log(np.exp(z).sum(axis=1))
            loss = C * float(np.sum(sample_w * (lse - z[np.arange(len(y)), y]))) + 0.5 * float(np.sum(w * w))
            grad = C * sample_w[:, None] * (np.exp(z - lse[:, None]) - onehot)
            return loss, np.concatenate([(x.tdot(grad) + w).ravel(), grad.sum(axis=0)])

        theta = _lbfgs(objective, theta)
    return Solution(names, theta)


def to_model(sol: Solution, temperature: float, threshold: float) -> Model:
    """The shipped form of a solution: weights rounded to DECIMALS, those below PRUNE dropped."""
    k, d = len(CLASSES), len(sol.names)
    w = np.round(sol.theta[: d * k].reshape(d, k), DECIMALS)
    weights = {f: {c: float(w[i, c]) for c in range(k) if abs(w[i, c]) >= PRUNE} for i, f in enumerate(sol.names)}
    bias = [float(v) for v in np.round(sol.theta[d * k :], DECIMALS)]
    return Model(
        classes=list(CLASSES),
        weights=weights,
        bias=bias,
        kind_weights=dict(WEIGHTS),
        temperature=temperature,
        threshold=threshold,
    )


#: What the fold fits read (set by ``fold_models``, before a pool forks: nothing is pickled to workers).
_FORKED: tuple[Sequence[dict[str, Any]], str, Solution | None] = ((), "", None)


def _fit_without(fold: str) -> tuple[str, Model]:
    """One fold's model (in this process or a forked worker): trained on every item outside ``fold``."""
    items, key, start = _FORKED
    return fold, fit([it for it in items if it[key] != fold], start=start)


def fold_models(
    items: Sequence[dict[str, Any]],
    key: str,
    start: Solution | None = None,
    jobs: int = 1,
    only: Iterable[str] | None = None,
) -> dict[str, Model]:
    """Per fold (``it[key]``; ``only`` these): the model trained on every other item (from ``start``, see ``solve``).

    Each fit is deterministic and independent of the others, so ``jobs`` forked workers give the
    same models as one process, only sooner (leave-one-project-out is hundreds of fits).
    """
    global _FORKED
    folds = sorted(only) if only is not None else sorted({it[key] for it in items})
    _FORKED = (items, key, start)
    try:
        if jobs <= 1 or len(folds) < 2:
            return dict(map(_fit_without, folds))
        with multiprocessing.get_context("fork").Pool(min(jobs, len(folds))) as pool:
            return dict(pool.imap(_fit_without, folds, chunksize=1))
    finally:
        _FORKED = ((), "", None)


def held_out_logits(items: Sequence[dict[str, Any]], models: dict[str, Model], key: str) -> list[list[float]]:
    """Logits of every item from the model that did not see its fold (empty: no features)."""
    return [models[it[key]].logits(it["feats"]) if it["feats"] else [] for it in items]


def _softmax(j: list[float], t: float) -> list[float]:
    top = max(j)
    ex = [math.exp((x - top) / t) for x in j]
    z = sum(ex)
    return [x / z for x in ex]


def temperature(items: Sequence[dict[str, Any]], logits: list[list[float]]) -> tuple[float, float]:
    """The temperature with the least cross-validated log-loss, and that loss."""
    idx = {c: i for i, c in enumerate(CLASSES)}
    scored = [(it, j) for it, j in zip(items, logits, strict=True) if j]
    best_t, best_loss = TEMPERATURES[0], float("inf")
    for t in TEMPERATURES:
        loss = 0.0
        for it, j in scored:
            p = _softmax(j, t)[idx[target_of(it["row"]["label"])]]
            loss -= math.log(max(p, 1e-12))
        loss /= max(1, len(scored))
        if loss < best_loss - 1e-12:
            best_t, best_loss = t, loss
    return best_t, round(best_loss, 4)


def ablation_outcomes(
    items: Sequence[dict[str, Any]], models: dict[str, Model], key: str
) -> list[tuple[str, str, str | None, float]]:
    """Per item, as if its wording were new: (expected, verdict, scorer label, scorer score).

    Leave-one-signature-out inside leave-one-project-out: an excerpt a signature decided is
    scanned again without that signature (the verdict a new wording of the same fact would get),
    and scored by the model trained without the excerpt's fold (``it[key]``). This is the situation the
    scorer exists for, so the threshold is calibrated on it.
    """
    import dataclasses

    from vllm_runbooks.logs.signatures import load_signatures

    full = load_signatures()
    without: dict[str, Any] = {}
    out = []
    for it in items:
        d, lines = it["diag"], it["lines"]
        rc = d.root_cause
        if rc is not None and d.label not in NOT_A_CAUSE and rc.label != "unrecognized_error":
            sid = rc.signature
            if sid not in without:
                keep = tuple(sig for sig in full.signatures if sig.id != sid)
                without[sid] = dataclasses.replace(full, signatures=keep)
            d, lines = signature_diagnosis(
                str(it["row"]["log"]).encode("utf-8", "surrogateescape"), signatures=without[sid], engine="re2"
            )
        label, score = None, 0.0
        if may_score(d, lines):
            pred = predict(models[it[key]], lines)
            if pred is not None:
                label, score = pred.label, pred.score
        out.append((it["row"]["label"], d.label, label, score))
    return out


def outcome_label(verdict: str, label: str | None, score: float, threshold: float) -> str:
    """The final label of an ablation outcome at a threshold (the rule of ``verdict.apply_scores``)."""
    if verdict in SCORABLE and label not in (None, NO_CAUSE) and score >= threshold:
        return str(label)
    return verdict


def choose_threshold(outcomes: Sequence[tuple[str, str, str | None, float]]) -> tuple[float, list[dict[str, Any]]]:
    """The smallest threshold at which the causes the scorer names (on ablation outcomes) reach
    TARGET_PRECISION, with no healthy log the scorer made a failure. A healthy log the signatures
    already call a failure is one at every threshold, so it cannot choose one (counted, it sent the
    threshold to the last value); a cause the scorer names for it counts in the precision."""
    table = []
    chosen = None
    for th in THRESHOLDS:
        named = right = false_alarms = 0
        for e, v, lab, sc in outcomes:
            final = outcome_label(v, lab, sc, th)
            if final != v:
                named += 1
                right += final == e
                false_alarms += healthy_called_failure(e, final) and not healthy_called_failure(e, v)
        f = figures([(e, outcome_label(v, lab, sc, th)) for e, v, lab, sc in outcomes])
        prec = right / named if named else None
        table.append(
            {
                "threshold": th,
                "scorer_named": named,
                "scorer_precision": prec,
                "scorer_false_alarms": false_alarms,
                "accuracy": f["accuracy"],
            }
        )
        if chosen is None and prec is not None and prec >= TARGET_PRECISION and false_alarms == 0:
            chosen = th
    if chosen is None:
        chosen = THRESHOLDS[-1]
    return chosen, table


def cv_report(
    items: Sequence[dict[str, Any]],
    models: dict[str, Model],
    outcomes: Sequence[tuple[str, str, str | None, float]],
    key: str,
) -> dict[str, Any]:
    """Cross-validated figures: signatures alone, scorer alone, both; and on new wordings.

    ``models`` (with the calibrated temperature and threshold) are keyed by ``it[key]``, the fold
    each item is held out in; every item's fold needs one (a sample scores only its own items).
    """
    alone: list[tuple[str, str]] = []
    whole: list[tuple[str, str]] = []
    sigs_only: list[tuple[str, str]] = []
    for it in items:
        exp = it["row"]["label"]
        model = models[it[key]]
        if it["feats"]:
            p = model.posterior(it["feats"])
            c = max(range(len(p)), key=lambda k: (p[k], -k))
            lab = CLASSES[c] if CLASSES[c] != NO_CAUSE and p[c] >= model.threshold else "unrecognized_error"
        else:
            lab = "inconclusive"
        alone.append((exp, lab))
        d = it["diag"]
        sigs_only.append((exp, d.label))
        d2 = apply_scores(type(d).from_dict(d.to_dict()), it["lines"], model)
        whole.append((exp, d2.label))
    th = next(iter(models.values())).threshold
    new_sigs = [(e, v) for e, v, _, _ in outcomes]
    new_both = [(e, outcome_label(v, lab, sc, th)) for e, v, lab, sc in outcomes]
    return {
        "folds": len(models),
        "excerpts": len(items),
        "scorer_alone": figures(alone),
        "signatures_only": figures(sigs_only),
        "signatures_then_scorer": figures(whole),
        "new_wording_signatures_only": figures(new_sigs),
        "new_wording_signatures_then_scorer": figures(new_both),
        "per_label_signatures_then_scorer": per_label(whole),
        "per_label_new_wording": per_label(new_both),
        "per_label_scorer_alone": per_label(alone),
    }


def sampled_projects(groups: Sequence[str], count: int) -> list[str]:
    """``count`` projects in an order no one chose (by the SHA-256 of their names): a fixed sample."""
    return sorted(sorted(set(groups), key=lambda g: hashlib.sha256(g.encode("utf-8")).hexdigest())[:count])


def train(
    paths: Sequence[Path], cv_folds: int | None = None, jobs: int = 1, projects: int = 0
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The shipped JSON document and (with ``cv_folds``; 0 = one per project) the cross-validation report.

    ``jobs``: processes for the fold fits (the output is the same for any number). ``projects``
    (with ``cv_folds`` 0): leave out only that many projects, a fixed sample (``sampled_projects``),
    one at a time, and score only their excerpts: leave-one-project-out over all of them is about
    a thousand fits.
    """
    rows = load_sets(paths)
    items = extract(rows)
    for it in items:
        it["calibration_fold"] = fold_of(it["group"], CALIBRATION_FOLDS)
    models = fold_models(items, "calibration_fold", jobs=jobs)
    t, loss = temperature(items, held_out_logits(items, models, "calibration_fold"))
    for m in models.values():
        m.temperature, m.threshold = t, 0.0
    th, table = choose_threshold(ablation_outcomes(items, models, "calibration_fold"))
    everything = solve(items)
    model = to_model(everything, t, th)
    sets: dict[str, int] = {}
    for r in rows:
        sets[r["_set"]] = sets.get(r["_set"], 0) + 1
    model.meta = {
        "script": "scripts/train_log_scorer.py",
        "script_version": SCRIPT_VERSION,
        "training": {
            "sha256": training_sha256(rows),
            "excerpts": len(rows),
            "projects": len({it["group"] for it in items}),
            "sets": [{"name": k, "rows": v} for k, v in sets.items()],
            "signatures_sha256": hashlib.sha256(default_signatures_bytes()).hexdigest(),
        },
        "calibration": {
            "method": f"{CALIBRATION_FOLDS} folds grouped by project; temperature: least log-loss; threshold: "
            f"smallest whose named causes reach precision {TARGET_PRECISION} when the deciding signature is left out",
            "log_loss": loss,
        },
        "fit": {"c": C, "min_df": MIN_DF, "decimals": DECIMALS, "prune": PRUNE, "class_weight": "balanced"},
    }
    report: dict[str, Any] = {}
    if cv_folds is not None:
        for it in items:
            it["cv_fold"] = fold_of(it["group"], cv_folds)
        held = items
        if cv_folds <= 0 and projects > 0:
            chosen = set(sampled_projects([it["group"] for it in items], projects))
            held = [it for it in items if it["group"] in chosen]
        # one fold per project: hundreds of fits, each started from the all-data solution
        cv_models = fold_models(
            items,
            "cv_fold",
            start=everything if cv_folds <= 0 else None,
            jobs=jobs,
            only={it["cv_fold"] for it in held},
        )
        for m in cv_models.values():
            m.temperature, m.threshold = t, th
        report = cv_report(held, cv_models, ablation_outcomes(held, cv_models, "cv_fold"), "cv_fold")
        if held is not items:
            report["sample"] = {
                "projects": len(chosen),
                "of_projects": len({it["group"] for it in items}),
                "excerpts": len(held),
                "of_excerpts": len(items),
            }
        report["calibration"] = {"temperature": t, "threshold": th, "log_loss": loss, "threshold_table": table}
    return model.to_json(), report


def dump(doc: dict[str, Any]) -> bytes:
    """The canonical bytes of the model file: sorted JSON, one feature per line (reviewable diffs)."""

    def one(value: Any) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    keys = sorted(doc)
    out = ["{"]
    for i, k in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        if k == "features":
            feats = sorted(doc[k].items())
            out.append(f"{one(k)}:{{")
            out += [f"{one(f)}:{one(per)}" + ("," if j < len(feats) - 1 else "") for j, (f, per) in enumerate(feats)]
            out.append("}" + comma)
        else:
            out.append(f"{one(k)}:{one(doc[k])}{comma}")
    out.append("}")
    return ("\n".join(out) + "\n").encode("utf-8")


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a reader never sees half a model."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # a data file of the package: readable by everyone, like the others
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fmt(v: Any) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def format_report(rep: dict[str, Any]) -> str:
    """Plain-text cross-validation report."""
    out = [f"cross-validated, folds grouped by project: {rep['excerpts']} excerpts, {rep['folds']} folds"]
    if "sample" in rep:
        smp = rep["sample"]
        out.append(
            f"leave-one-project-out on a fixed sample: {smp['projects']} of {smp['of_projects']} projects, "
            f"{smp['excerpts']} of {smp['of_excerpts']} excerpts scored"
        )
    cal = rep["calibration"]
    out.append(f"calibrated: temperature {cal['temperature']}, threshold {cal['threshold']}")
    keys = ["accuracy", "precision_named", "recall_failures", "failures_called_healthy", "healthy_called_failure"]
    names = ("signatures_only", "scorer_alone", "signatures_then_scorer")
    names += ("new_wording_signatures_only", "new_wording_signatures_then_scorer")
    out.append(f"{'':36}" + "".join(f"{k:>24}" for k in keys))
    for name in names:
        out.append(f"{name:36}" + "".join(f"{_fmt(rep[name][k]):>24}" for k in keys))
    out.append("")
    out.append(f"{'label':30}{'n':>4}{'precision':>11}{'recall':>8}{'new-wording p':>15}{'new-wording r':>15}")
    new = rep["per_label_new_wording"]
    for lab, m in rep["per_label_signatures_then_scorer"].items():
        nm = new.get(lab, {})
        out.append(
            f"{lab:30}{m['support']:>4}{_fmt(m['precision']):>11}{_fmt(m['recall']):>8}"
            f"{_fmt(nm.get('precision')):>15}{_fmt(nm.get('recall')):>15}"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=str(DEFAULT_OUTPUT))
    ap.add_argument("--sets", nargs="+", default=[str(p) for p in DEFAULT_SETS])
    ap.add_argument("--exclude-set", nargs="*", default=[], help="file names of sets to leave out")
    ap.add_argument("--cv", action="store_true", help="print cross-validated figures")
    ap.add_argument("--folds", type=int, default=0, help="folds for --cv, grouped by project (0: one per project)")
    ap.add_argument(
        "--projects", type=int, default=0, help="with --folds 0: leave out only this many projects (a fixed sample)"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-write", action="store_true", help="compute (and report) without writing")
    ap.add_argument("--jobs", type=int, default=1, help="processes for the fold fits (same output for any number)")
    args = ap.parse_args(argv)
    if args.projects < 0 or (args.projects and (args.folds != 0 or not (args.cv or args.json))):
        ap.error("--projects N needs --cv or --json with --folds 0 (one fold per project), and N >= 0")
    paths = [Path(p) for p in args.sets if Path(p).name not in set(args.exclude_set)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"training sets missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    doc, rep = train(
        paths, cv_folds=args.folds if (args.cv or args.json) else None, jobs=args.jobs, projects=args.projects
    )
    if not args.no_write:
        write_atomic(Path(args.output), dump(doc))
        print(
            f"wrote {args.output}: {len(doc['features'])} features, {doc['training']['excerpts']} excerpts",
            file=sys.stderr,
        )
    if rep:
        print(json.dumps(rep, indent=2, sort_keys=True) if args.json else format_report(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
