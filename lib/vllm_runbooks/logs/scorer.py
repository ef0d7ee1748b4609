"""The learned scorer: names a likely cause for failure-looking lines no signature decides.

Why: signatures are exact about the wordings they were written for and silent on the next tool's
wording of the same fact ("error modifying OCI spec" vs "nvidia-container-cli: initialization
error", ggml's ``cudaMalloc failed`` vs PyTorch's ``CUDA out of memory``). The scorer reads the
lines that look like a failure (``scorer_lines`` in ``data/log_signatures.yaml``, picked in the
same prefilter pass as the signatures, a bounded number) and scores every cause label by words,
word pairs and character 4-grams of those lines, normalised NVIDIA / NCCL return codes, library
names and the start-up phase the line was printed in (the OOM phase markers).

The model is a multinomial logistic regression over those binary features (each log's vector
scaled to unit length), trained offline and deterministically by ``scripts/train_log_scorer.py``;
prediction is a weighted sum and a softmax in pure Python. Weights ship as data:
``data/log_scorer.json`` (one feature a line, its weight toward each label) with the SHA-256 of
its training data and the script's version. Its answer is never ``decisive``; below the
calibrated threshold it names nothing (``verdict.apply_scores`` keeps ``unrecognized_error`` /
``inconclusive`` and shows the scores).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

#: The pseudo-label for "these lines name no cause" (healthy, inconclusive and cause-unknown logs).
NO_CAUSE = "none"
#: Characters of a line that are read for features (long lines: the window the scan kept).
MAX_LINE_CHARS = 1000
#: Lines handed to the scorer per log: the first and the last failure-looking lines.
HEAD_LINES = 48
TAIL_LINES = 48
#: Lines shown as "the lines it rests on".
REST_LINES = 3
#: Candidates shown beside the verdict.
TOP_CANDIDATES = 3
MODEL_FILE = "log_scorer.json"
MODEL_FORMAT = "vllm-runbooks-log-scorer"
#: The kind of model in the file; a file of another kind (the earlier naive Bayes) is refused.
MODEL_KIND = "logistic-regression"

_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/]+[\w.@+~-]+){2,}[\\/]?")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_LIB = re.compile(r"\blib([A-Za-z][A-Za-z0-9_+-]*?)(?:64_[0-9]+)?\.(?:so|dll|dylib)\b")
_HEXISH = re.compile(r"^(?:0x)?[0-9a-f]{6,}$")
_STOP = frozenset(
    "a an the to of in is on for at and or be by with this that it its from as are was were "
    "has have had you your we our please see if then than into via".split()
)


@dataclass(frozen=True)
class ScoredLine:
    """One failure-looking line as the scorer reads it: number, kept text, phase it was printed in."""

    line: int
    text: str
    phase: str | None = None


def _words(text: str) -> list[str]:
    """Lower-case word tokens: identifiers whole and split at case / underscores; no stop words."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        tok = m.group(0)
        low = tok.lower()
        if len(low) < 2 or low in _STOP or _HEXISH.match(low):
            continue
        out.append(low)
        parts = [p.lower() for piece in tok.split("_") for p in _CAMEL.findall(piece)]
        if len(parts) > 1:
            out.extend(p for p in parts if len(p) > 1 and p not in _STOP and not p.isdigit())
    return out


def line_features(text: str, phase: str | None = None) -> list[str]:
    """Features of one line; the same function serves training and prediction.

    Paths keep their last component (``.../kv_cache_utils.py`` -> ``kv_cache_utils.py``), numbers
    are dropped except as a resolved NVIDIA/NCCL code, so features carry meaning across hosts and
    versions.
    """
    text = text[:MAX_LINE_CHARS]
    feats: list[str] = []
    libs = {m.group(1).lower() for m in _LIB.finditer(text)}
    feats += [f"lib:{name}" for name in sorted(libs)]
    flat = _PATH.sub(lambda m: " " + re.split(r"[\\/]+", m.group(0).rstrip("\\/"))[-1] + " ", text)
    words = _words(flat)
    feats += [f"w:{w}" for w in words]
    feats += [f"b:{a}_{b}" for a, b in zip(words, words[1:], strict=False)]
    for w in set(words):
        if len(w) >= 4:
            padded = f"<{w}>"
            feats += [f"c:{padded[i : i + 4]}" for i in range(len(padded) - 3)]
    code = _code(text)
    if code is not None:
        feats.append(f"code:{code}")
    feats.append(f"phase:{phase or 'none'}")
    return feats


def _code(text: str) -> str | None:
    from .codes import resolve

    try:
        c = resolve(text[:4000])
    except Exception:  # noqa: BLE001 - a broken code table must not stop the scorer
        return None
    return c.name if c is not None else None


def doc_features(lines: Iterable[ScoredLine]) -> set[str]:
    """The binary feature set of a log: every feature of any of its failure-looking lines."""
    out: set[str] = set()
    for ln in lines:
        out.update(line_features(ln.text, ln.phase))
    return out


def feature_kind(feature: str) -> str:
    """The kind prefix of a feature (``w``, ``b``, ``c``, ``code``, ``lib``, ``phase``)."""
    return feature.split(":", 1)[0]


@dataclass
class Model:
    """A multinomial logistic regression as shipped: per feature, its weight toward each label.

    Why this model: the first scorer (naive Bayes counts) ranked the right cause first for about
    half of what it missed, but its scores for new wordings stayed below any threshold that kept
    its precision; a discriminative model trained on the same features learns which features
    separate neighbouring causes (``oom_weights`` / ``oom_runtime``, ``nccl_error`` /
    ``shm_insufficient``) instead of counting each feature on its own. Every weight is still one
    reviewable number per feature and label ("``w:shm`` pushes +5.28 toward ``shm_insufficient``").
    """

    classes: list[str]
    #: feature -> {label index: weight}; a feature whose weights all rounded to 0 keeps an empty
    #: map, because it still counts in the length the input is normalised by.
    weights: dict[str, dict[int, float]]
    bias: list[float]
    #: How much each kind of feature counts in the input vector (``w``, ``b``, ``c``, ...).
    kind_weights: dict[str, float]
    temperature: float
    threshold: float
    meta: dict[str, Any] = field(default_factory=dict)

    def inputs(self, feats: set[str]) -> dict[str, float]:
        """The input vector: known features by kind weight, scaled to unit length.

        Unit length keeps a log with many failure-looking lines from looking more certain than
        a log with one line; features never seen in training are ignored.
        """
        known = sorted(f for f in feats if f in self.weights)
        vals = {f: self.kind_weights.get(feature_kind(f), 1.0) for f in known}
        norm = math.sqrt(sum(v * v for v in vals.values()))
        return {f: v / norm for f, v in vals.items()} if norm > 0 else {}

    def logits(self, feats: set[str]) -> list[float]:
        """Per label: bias plus the weighted sum of the log's (normalised) features."""
        out = list(self.bias)
        for f, v in self.inputs(feats).items():
            for c, w in self.weights[f].items():
                out[c] += v * w
        return out

    def posterior(self, feats: set[str]) -> list[float]:
        """Calibrated probabilities: softmax of the logits divided by the temperature."""
        j = self.logits(feats)
        top = max(j)
        ex = [math.exp((x - top) / self.temperature) for x in j]
        z = sum(ex)
        return [x / z for x in ex]

    def to_json(self) -> dict[str, Any]:
        """The shipped layout (sorted, rounded weights): byte-reproducible from the same data."""
        return {
            "format": MODEL_FORMAT,
            "model": MODEL_KIND,
            **self.meta,
            "classes": self.classes,
            "params": {
                "bias": self.bias,
                "kind_weights": dict(sorted(self.kind_weights.items())),
                "temperature": self.temperature,
                "threshold": self.threshold,
            },
            "features": {f: [[c, w] for c, w in sorted(per.items())] for f, per in sorted(self.weights.items())},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        """Read the shipped layout back (checked: a malformed or other kind of file raises ``ValueError``)."""
        if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT or data.get("model") != MODEL_KIND:
            raise ValueError("not a log scorer file of this version")
        p = data["params"]
        classes = [str(c) for c in data["classes"]]
        bias = [float(b) for b in p["bias"]]
        if len(bias) != len(classes):
            raise ValueError("bias does not match the labels")
        weights = {
            str(f): {int(c): float(w) for c, w in per if 0 <= int(c) < len(classes)}
            for f, per in data["features"].items()
        }
        temperature = float(p["temperature"])
        if not temperature > 0:
            raise ValueError("temperature must be positive")
        skip = ("format", "model", "classes", "params", "features")
        return cls(
            classes=classes,
            weights=weights,
            bias=bias,
            kind_weights={str(k): float(v) for k, v in p["kind_weights"].items()},
            temperature=temperature,
            threshold=float(p["threshold"]),
            meta={k: v for k, v in data.items() if k not in skip},
        )


@dataclass
class Prediction:
    """What the scorer says about one log: best label, top candidates, and the lines it rests on."""

    label: str
    score: float
    candidates: list[dict[str, Any]]
    lines: list[dict[str, Any]]
    threshold: float
    names_cause: bool
    model: str

    def as_dict(self) -> dict[str, Any]:
        """The ``scorer`` block of a diagnosis (plain JSON)."""
        return {
            "model": self.model,
            "label": self.label,
            "score": self.score,
            "threshold": self.threshold,
            "names_cause": self.names_cause,
            "lines": self.lines,
        }


def predict(model: Model, lines: Sequence[ScoredLine]) -> Prediction | None:
    """Score a log's failure-looking lines; None when there are none to read."""
    if not lines:
        return None
    per_line = [set(line_features(ln.text, ln.phase)) for ln in lines]
    feats: set[str] = set().union(*per_line)
    post = model.posterior(feats)
    order = sorted(range(len(post)), key=lambda c: (-post[c], model.classes[c]))
    best = order[0]
    label = model.classes[best]
    candidates = [{"label": model.classes[c], "score": round(post[c], 4)} for c in order[:TOP_CANDIDATES]]
    rest = _rested_on(model, lines, per_line, best)
    names = label != NO_CAUSE and post[best] >= model.threshold
    version = f"{model.meta.get('script_version', '?')}/{str(model.meta.get('training', {}).get('sha256', ''))[:12]}"
    return Prediction(label, round(post[best], 4), candidates, rest, model.threshold, names, version)


def _rested_on(model: Model, lines: Sequence[ScoredLine], per_line: list[set[str]], best: int) -> list[dict[str, Any]]:
    """The lines whose features pull hardest toward ``best`` against the other labels' mean."""
    n = len(model.classes)
    inputs = model.inputs(set().union(*per_line))
    pull = {}
    for f in inputs:
        per = model.weights[f]
        others = sum(w for c, w in per.items() if c != best) / max(1, n - 1)
        pull[f] = inputs[f] * (per.get(best, 0.0) - others)
    scored = sorted(
        ((sum(pull.get(f, 0.0) for f in feats), i) for i, feats in enumerate(per_line)),
        key=lambda t: (-t[0], lines[t[1]].line),
    )
    out = []
    for s, i in scored[:REST_LINES]:
        if s <= 0 and out:
            break
        out.append({"line": lines[i].line, "text": lines[i].text, "weight": round(s, 2)})
    return out


@lru_cache(maxsize=1)
def default_model() -> Model | None:
    """The shipped model, loaded on first use; None when the file is missing or malformed."""
    try:
        raw = (resources.files("vllm_runbooks") / "data" / MODEL_FILE).read_bytes()
        return Model.from_json(json.loads(raw.decode("utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
