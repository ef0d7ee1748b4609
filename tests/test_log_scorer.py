"""The learned log scorer: shipped weights reproducible, verdict rules kept, bounded, explainable.

Inputs are the real labelled excerpts (``../shared/corpus/logs_dev.jsonl``, ``tests/data/logs_*``);
``tests/data/logs_blind_2026_12.jsonl`` and ``logs_blind_2026_12b.jsonl`` to ``_12f`` are the batches
collected for issue 19 from threads not in the sets before them, each scored with the
code as it was before the change it led to (figures in ``docs/LOG_DIAGNOSIS.md``), then added to the
training data: they are no longer unseen, so the floors here guard behaviour, not generalisation
(that is the blind and the project-grouped cross-validated figures).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_rules import need_path
from vllm_runbooks.logs import diagnose_text
from vllm_runbooks.logs.classify import signature_diagnosis
from vllm_runbooks.logs.diagnosis import LogDiagnoses, LogDiagnosis
from vllm_runbooks.logs.evaluate import (
    DEV_CORPUS,
    failure_called_healthy,
    figures,
    healthy_called_failure,
    load_corpus,
)
from vllm_runbooks.logs.scorer import HEAD_LINES, TAIL_LINES, Model, ScoredLine, default_model, predict
from vllm_runbooks.logs.signatures import LABELS, SignatureError, default_signatures_bytes, parse_signatures
from vllm_runbooks.logs.verdict import SCORABLE, apply_scores

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
BLIND = DATA / "logs_blind_2026_12.jsonl"
# every blind batch, in the order collected (_12, _12b, ..., _12l)
BATCHES = sorted(DATA.glob("logs_blind_*.jsonl"))
SETS = sorted(DATA.glob("logs_*.jsonl"))  # every labelled set here, as the training script reads them
SHIPPED = ROOT / "lib" / "vllm_runbooks" / "data" / "log_scorer.json"
SCRIPT = ROOT / "scripts" / "train_log_scorer.py"


def _all_rows() -> list[dict]:
    rows = [r for p in SETS for r in load_corpus(p)]
    if DEV_CORPUS.exists():
        rows += load_corpus(DEV_CORPUS)
    return rows


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return _all_rows()


@pytest.fixture(scope="module")
def model() -> Model:
    m = default_model()
    assert m is not None, "the shipped log_scorer.json does not load"
    return m


def _row(rid: str) -> dict:
    return next(r for r in load_corpus(BLIND) if r["id"] == rid)


# -- shipped like data ----------------------------------------------------------------------------
def test_shipped_model_records_its_inputs(model: Model) -> None:
    meta = model.meta
    assert meta["script"] == "scripts/train_log_scorer.py"
    version = re.search(r'^SCRIPT_VERSION = "([^"]+)"', SCRIPT.read_text(encoding="utf-8"), re.M)
    assert version and meta["script_version"] == version.group(1)
    assert re.fullmatch(r"[0-9a-f]{64}", meta["training"]["sha256"])
    # the signature file decides which lines the scorer reads: a change there needs a retrain
    assert meta["training"]["signatures_sha256"] == hashlib.sha256(default_signatures_bytes()).hexdigest()
    sets = {s["name"]: s["rows"] for s in meta["training"]["sets"]}
    for p in SETS:  # every labelled set in the repository is in the training data, whole
        assert sets.get(p.name) == len(load_corpus(p)), p.name
    assert 0.0 < model.threshold <= 1.0 and model.temperature > 0
    assert set(model.classes) - {"none"} <= set(LABELS) and "healthy" not in model.classes


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_retraining_reproduces_the_shipped_file_byte_for_byte(tmp_path: Path) -> None:
    need_path(DEV_CORPUS, "the team corpus (part of the scorer's training data)")
    out = tmp_path / "log_scorer.json"
    # about 3 minutes alone on 2 cores at 1,974 excerpts (188 s), 7.5 minutes at 4,100 (447 s), longer
    # beside the other tests of a parallel run (it timed out at the suite's 900 s beside a cross-validation);
    # the bounds are for a hang, not for speed
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--output", str(out)], capture_output=True, text=True, timeout=1700, check=False
    )
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == SHIPPED.read_bytes(), (
        "data/log_scorer.json is stale: run scripts/train_log_scorer.py and commit the result"
    )


def test_prediction_needs_no_training_library() -> None:
    code = (
        "import sys, json\n"
        "from vllm_runbooks.logs import diagnose_text\n"
        f"row = [json.loads(x) for x in open({str(BLIND)!r}) if x.strip()][1]\n"
        "d = diagnose_text(row['log'])\n"
        "assert d.candidates, d\n"
        "bad = sorted(m for m in ('numpy', 'sklearn', 'scipy', 'pandas', 'torch') if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert r.stdout.strip() == "", f"prediction imported {r.stdout.strip()}"


def test_malformed_model_file_is_refused_not_half_read(model: Model) -> None:
    good = model.to_json()
    naive_bayes = {k: v for k, v in good.items() if k != "model"}  # the earlier scorer's layout
    short_bias = {**good, "params": {**good["params"], "bias": good["params"]["bias"][:-1]}}
    cold = {**good, "params": {**good["params"], "temperature": 0}}
    for bad in ({}, {"format": "other"}, {"format": "vllm-runbooks-log-scorer"}, naive_bayes, short_bias, cold):
        with pytest.raises((ValueError, KeyError)):
            Model.from_json(bad)
    assert Model.from_json(good).weights == model.weights


# -- what it says ---------------------------------------------------------------------------------
def test_names_a_likely_cause_with_candidates_and_lines() -> None:
    row = _row("bl-toolkit-05")  # podman: error executing hook nvidia-container-runtime-hook
    without = diagnose_text(row["log"], scorer=False)
    assert without.label == "unrecognized_error" and without.candidates == []
    d = diagnose_text(row["log"])
    assert (d.label, d.confidence) == ("container_toolkit_requirement", "likely")
    assert d.scored and d.root_cause is None
    assert len(d.candidates) == 3 and d.candidates[0]["label"] == d.label
    scores = [c["score"] for c in d.candidates]
    assert scores == sorted(scores, reverse=True) and scores[0] >= d.scorer["threshold"]
    assert d.evidence[0]["role"] == "scored" and d.evidence[0]["line"] == 1
    assert d.scorer["lines"][0]["text"].startswith("Error: OCI runtime error")
    assert "learned scorer" in d.advice and "container_toolkit" in d.advice
    assert d.scorer["replaced"] == "unrecognized_error"


def test_below_threshold_the_verdict_stays_with_the_scores_shown(model: Model) -> None:
    strict = Model.from_json(model.to_json())
    strict.meta = model.meta
    strict.threshold = 1.01
    row = _row("bl-toolkit-05")
    d = diagnose_text(row["log"], scorer=strict)
    assert d.label == "unrecognized_error" and d.confidence == "likely"
    assert d.candidates and d.candidates[0]["label"] == "container_toolkit_requirement"
    assert d.scorer["names_cause"] is False and not d.scored
    assert all(e["role"] != "scored" for e in d.evidence)


def test_none_is_a_candidate_that_names_nothing(model: Model) -> None:
    lines = [ScoredLine(1, "x")]
    pred = predict(model, lines)
    assert pred is not None and len(pred.candidates) == 3
    fake = Model.from_json(model.to_json())
    fake.threshold = 0.0
    none = fake.classes.index("none")
    fake.bias = [0.0] * len(fake.classes)
    fake.weights = {"w:zzz": {none: 5.0}, "w:yyy": {c: 5.0 for c in range(len(fake.classes)) if c != none}}
    pred = predict(fake, [ScoredLine(3, "zzz")])
    assert pred is not None and pred.label == "none" and not pred.names_cause
    pred = predict(fake, [ScoredLine(4, "yyy")])  # every cause alike: a tie, and still none wins nothing
    assert pred is not None and pred.label != "none" and pred.score < 0.2


def test_predict_without_lines_is_none(model: Model) -> None:
    assert predict(model, []) is None
    d = diagnose_text("INFO 07-21 04:58:42 [api_server.py:1] vLLM API server version 0.11.0\n")
    assert d.candidates == [] and d.scorer == {}


# -- verdict rules kept ---------------------------------------------------------------------------
def test_rules_hold_on_every_labelled_excerpt(rows: list[dict]) -> None:
    assert len(rows) >= 200
    pairs = []
    for r in rows:
        base = diagnose_text(r["log"], scorer=False)
        d = diagnose_text(r["log"])
        pairs.append((r["label"], d.label))
        if base.label not in SCORABLE:  # signatures and proof are never overridden
            assert (d.label, d.confidence) == (base.label, base.confidence), r["id"]
        if d.scored:  # a learned label is never decisive, never healthy
            assert d.confidence == "likely" and d.label != "healthy", r["id"]
        if base.label != "healthy":
            assert d.label != "healthy", r["id"]
    f = figures(pairs)
    assert _ids(rows, [lab for _, lab in pairs], healthy_called_failure) == HEALTHY_READ_AS_FAILURE, f
    assert _ids(rows, [lab for _, lab in pairs], failure_called_healthy) == NOT_IN_THE_EXCERPT, f
    # 0.944 at 1,747 and 1,450 excerpts (0.948 at 1,348, 0.951 at 1,222, 0.952 at 1,033): most
    # wrong names are the threads' readings of a log that states another fact (a phase-less OOM
    # the thread places at weight loading, NCCL errors in threads that found no cause); each batch
    # adds a few. 0.941 at 2,121 and 2,239; 0.9397 at 2,313 (batch 17 added), where the calibrated
    # temperature moved from 0.75 to 1.0 and the threshold to 0.75, and nine names of the scorer on
    # trained sets dropped below it. 0.9396 at 2,469 (threshold 0.76), 0.9372 at 2,599 (0.79),
    # 0.9376 at 2,643, 0.9370 after the review (threshold 0.80), 0.9357 at 2,980 (0.84), 0.9348 at
    # 3,219 (0.82; batches 24 and 25 added, both scored first at 0.871-0.933 precision), 0.9351 at 3,348
    # (0.83; batch 26 added, scored first at 0.917), 0.9337 at 3,491 (0.83; batches 27 and 28 added, scored
    # first at 0.861 and 0.882; nine right names of the scorer on earlier sets fell below the threshold).
    # 0.9347 at 3,773 (0.83), 0.9325 at 4,100 (batches 31-33 added, scored first at 0.867, 0.857 and 0.889;
    # the threshold went from 0.82 at 3,921 back to 0.83, and nine right names of the scorer on earlier
    # sets fell below it). 0.9299 at 4,381 (batches 34 and 35 added, scored first at 0.876 and 0.854; the
    # threshold rose to 0.85, and nvcc's `Unsupported gpu architecture` is arch_unsupported now, as seven
    # labelled rows read it, which names a wrong cause for the three rows that read it as a build's fault);
    # 0.9292 at 4,423 (batch 36 added, scored first at 0.800; the threshold back at 0.84).
    assert f["precision_named"] >= 0.929, f


#: Failures labelled from their threads whose excerpt shows none: ComfyUI's process dying silently
#: after it served the GUI and took a prompt (nothing failing in the lines pasted), vLLM refusing
#: two requests with 400 before answering the next with 200 (the thread's failure was the client
#: silently dropping its tools), and text-generation-webui answering /api/v1/model with 200 and
#: /api/v1/info/version with 404 (batch 24: KoboldAI Lite needed the missing path, an API gap outside the
#: vocabulary; a 404 says nothing against a server that answers, blind batch 7), and GPUStack's server up
#: while its worker registers no GPU (batch 35: the missing GPU shows only in the UI; the collector marked
#: the excerpt as lacking the deciding line). "Healthy needs proof" calls all four healthy; no rule can see
#: them.
NOT_IN_THE_EXCERPT = {"n-dif-14", "n-tool-08", "olD-09", "wL-09"}

#: Healthy logs the verdict calls a failure: LM Studio writes the level of its plugins' stderr on a line
#: of its own (`2025-11-14 15:50:50 [ERROR]`) and the message below it is an MCP server's INFO (batch
#: 24). Three labelled LM Studio failures use the same header for their real errors, so the tag stays
#: an error line.
ERROR_TAG_ON_ITS_OWN_LINE = {"olD-06"}

#: Healthy logs of servers meant to run without a GPU (batch 27: Ollama on a CPU-only OpenShift cluster, an
#: OpenVINO fork of Ollama on an Intel CPU), which answer requests after their GPU discovery finds no
#: library or no GPU. Labelled threads read the same lines as the failure (batch 12: a container started
#: without the driver libraries; batch 17: GPUs not passed through), and a runbook for a GPU server should
#: flag them: the log cannot say a CPU was intended.
NO_GPU_BY_DESIGN = {"zL-13", "zL-14"}
HEALTHY_READ_AS_FAILURE = ERROR_TAG_ON_ITS_OWN_LINE | NO_GPU_BY_DESIGN


def _ids(rows: list[dict], labels: list[str], mistake: Callable[[str, str], bool]) -> set[str]:
    """Ids of the rows whose verdict is that mistake (the two ``figures`` counts, by row)."""
    return {r["id"] for r, lab in zip(rows, labels, strict=True) if mistake(r["label"], lab)}


# (accuracy, precision) floors per blind batch, in BATCHES order; a batch without its row stops
# collection (zip strict)
FLOORS = [
    (0.85, 0.95),
    (0.85, 0.95),
    (0.85, 0.95),
    (0.83, 0.92),
    (0.82, 0.90),
    (0.77, 0.88),
    (0.81, 0.93),
    (0.79, 0.90),
    (0.77, 0.85),
    (0.87, 0.93),
    (0.82, 0.94),
    (0.74, 0.91),
    (0.84, 0.88),
    (0.88, 0.96),
    (0.82, 0.93),
    (0.93, 0.94),
    (0.75, 0.88),
    (0.85, 0.93),
    (0.82, 0.89),
    (0.70, 0.95),
    (0.83, 0.92),
    (0.90, 0.95),
    (0.73, 0.83),
    (0.87, 0.93),
    (0.82, 0.88),
    (0.86, 0.94),
    (0.85, 0.89),
    (0.92, 0.89),
    (0.83, 0.92),
    (0.75, 0.96),
    (0.85, 0.89),
    (0.82, 0.90),
    (0.81, 0.95),
    (0.85, 0.91),
    (0.84, 0.89),
    (0.80, 0.83),
]


@pytest.mark.parametrize(
    ("batch", "floor", "precision"),
    [(b, *f) for b, f in zip(BATCHES, FLOORS, strict=True)],
    ids=[f"batch{n}" for n in range(1, len(FLOORS) + 1)],
)
def test_blind_batch_figures_after_training_on_it(batch: Path, floor: float, precision: float) -> None:
    # Scored before the change each led to: batch 1 accuracy 0.529 / precision 0.955 / recall
    # 0.467 (signatures only), batch 2 0.664 / 0.952 / 0.664, batch 3 0.596 / 0.946 / 0.609,
    # batch 4 0.607 / 0.894 / 0.578 with the naive Bayes scorer, 0.664 / 0.904 / 0.647 with the
    # logistic regression trained without it, batch 5 0.672 / 0.858 / 0.661 (0.647 / 0.816 / 0.628
    # before six labels were set to the corpus convention for a missing toolkit library). All are
    # training data now, so this guards against regressions; it is not an unseen-data figure
    # (docs/LOG_DIAGNOSIS.md). Batch 4's precision floor is lower because its collectors read six
    # excerpts differently from a decisive signature (a toolkit error on a host without a loaded
    # driver called no_gpu_visible, TGI's warm-up "Not enough memory to handle N prefill tokens"
    # called oom_runtime); the labels stay as collected. Batch 5's floors are lower still: its
    # collectors placed OOMs with no phase marker at weight loading from the thread (the
    # signatures say oom_runtime, likely, and ask for the phase), and read several start-up-only
    # server logs as inconclusive. Batch 6 (scored with batch 5's change: 0.623 / 0.831 / 0.605)
    # has the same kinds of reading: the cause the thread found where the log names another fact
    # (CUDA error 35 on a host with no NVIDIA GPU is no_gpu_visible there). Batch 7 (scored with
    # batch 6's change and the finished-start-up rule: 0.608 / 0.822 / 0.583 as collected, 0.630 /
    # 0.841 / 0.596 with seven labels set to the dev corpus's conventions) has the same kinds, and
    # so has batch 8 (collected with the conventions written down; scored with batch 7's change:
    # 0.659 / 0.861 / 0.653, against 0.627 / 0.806 / 0.611 with the code before either), and batch 9
    # (collected as the search budget ran out, many labels from the error text: 0.510 / 0.767 / 0.452).
    # Batch 10 (scored with batch 9's change and its review: 0.776 / 0.909 / 0.808, against 0.724 /
    # 0.884 / 0.768 with the code before batches 7-9) had one failure called healthy: a crash after
    # the server came up, written as a bracketed "[AMP ERROR]" with a CUDA_ERROR_ enum. Batches 11
    # and 12 were collected in the same session after batch 10 and scored before reading, each with
    # every change before it (figures in docs/LOG_DIAGNOSIS.md). With 1,747 excerpts the calibrated
    # threshold rose to 0.84, which moved batch 5 from 0.851 to 0.838; with 1,974 (batches 13 and 14
    # added: scored first at 0.646 / 0.806 / 0.617, and 0.680 / 0.895 / 0.680 with batch 13's
    # change) to 0.89, which moved batch 9 from 0.824 to 0.804, batch 10 from 0.903 to 0.888 and
    # batch 12 from 0.833 to 0.798 (their floors follow; the threshold is the smallest that keeps
    # the scorer's cross-validated precision on new wordings at 0.95). Batch 15 (2,121 excerpts; scored
    # first with the code as found at 0.639 / 0.893 / 0.664) left the threshold at 0.89 and moved
    # batch 6 from 0.834 to 0.821. Batches 16 and 17 (2,313 excerpts; scored first at 0.831 / 0.888
    # / 0.816 and 0.689 / 0.850 / 0.708, each with the changes before it) moved the calibration to
    # temperature 1.0 and threshold 0.75, which names nine fewer causes on the trained sets: batch 8
    # went from 0.825 to 0.817 (its floor follows). Batch 18 (2,469 excerpts; scored first with the
    # code as found at 0.679 / 0.872 / 0.672) moved the threshold to 0.76: batch 7 went from 0.862 to
    # 0.857, batch 12 from 0.798 to 0.786 and batch 15 from 0.837 to 0.823 (their floors follow).
    # Batch 19 (2,599 excerpts; scored first at 0.685 / 0.865 / 0.675 as found, 0.692 / 0.867 / 0.684
    # after batch 18's change) moved it to 0.79, which names 18 fewer causes on the trained sets:
    # batch 6 went to 0.808, batch 7 to 0.847, batch 9 to 0.794, batch 12 to 0.762, batch 14 to 0.887
    # and batch 17 to 0.811 (their floors follow). Batch 20 (2,643 excerpts; 44 collected as the search
    # budget ran out; scored first at 0.636 / 0.880 / 0.667 as found, 0.614 / 0.840 / 0.636 after
    # batches 18 and 19's changes) left the threshold at 0.79 and moved batch 19 from 0.854 to 0.846.
    # The review of batches 18-20 removed five over-reading patterns (two rows of batches 18 and 19 went
    # back to a miss) and moved the threshold to 0.80: batch 5 went to 0.830 (0.8299), batch 12 to 0.750,
    # batch 19 to 0.838 / 0.897 (their floors follow). Batch 21 (2,792 excerpts; scored first with the
    # code as found at 0.705 / 0.867 / 0.709, two failures called healthy) moved the threshold to 0.81,
    # which names 11 fewer causes on the trained sets: batch 8 went to 0.8095, batch 9 to 0.784,
    # batch 17 to 0.797 / 0.8889 and batch 20 to 0.727 (their floors follow). Batch 22 (2,919 excerpts;
    # scored first at 0.685 / 0.895 / 0.701 as found, 0.693 / 0.895 / 0.701 after batch 21's change) moved
    # it to 0.82, which names 12 fewer causes on the trained sets (and 6 more right): batch 4 went to
    # 0.844, batch 6 to 0.795, batch 7 to 0.836, batch 9 to 0.775, batch 17 to 0.770 and batch 18 to
    # 0.859 (their floors follow). Batch 23 (2,980 excerpts; collected as the search budget ran out, many
    # labels from the error text alone; scored first at 0.557 / 0.750 / 0.512 as found, 0.574 / 0.759 /
    # 0.537 after batches 21 and 22's changes) moved it to 0.84, which names 23 fewer causes on the
    # trained sets: batch 4 went to 0.836, batch 6 to 0.775, batch 7 to 0.820, batch 8 to 0.794, batch
    # 11 to 0.823, batch 17 to 0.757 and batch 20 to 0.705 (their floors follow). The review of batches
    # 21-23 removed over-reads (Ollama's skipped ROCm GPU is failure-looking, not a cause; a node's
    # `nvidia.com/gpu: 0` is dropped): two rows of batch 21 went back to a miss, 0.839 (its floor follows).
    # Batches 24 and 25 (3,219 excerpts; scored first at 0.737 / 0.933 / 0.722 and 0.717 / 0.871 / 0.744):
    # batch 24's LM Studio row (ERROR_TAG_ON_ITS_OWN_LINE) had sent the calibration to its last threshold
    # (0.99) until the calibration stopped counting false alarms the signatures make (script version 4);
    # the threshold is 0.82, and no trained set fell below its floor.
    # Batch 26 (3,348 excerpts; scored first at 0.667 / 0.917 / 0.611 as found) moved it to 0.83; no trained
    # set fell below its floor. Batch 27 (3,463; scored first at 0.713 / 0.861 / 0.721 as found) moved it to
    # 0.82, batch 28 with the review's patterns (3,491; 0.821 / 0.882 / 0.833 as found) back to 0.83, nine
    # fewer right names on the trained sets: batch 7 went to 0.815 (its floor follows).
    # Batch 29 (3,615 excerpts, threshold 0.83): a grammar line made failure-looking for batch 29 (labelled
    # unrecognized_error there) moved one of batch 19's scorer names (tool_call_parse_error on a grammar
    # error) below the threshold: batch 19 went to 0.823 (its floor follows). Batches 31-33 (4,100 excerpts;
    # scored first at 0.730 / 0.867 / 0.716, 0.718 / 0.857 / 0.699 and 0.649 / 0.889 / 0.615) moved the
    # threshold from 0.82 (3,921) back to 0.83: a scorer name of batch 10 (a KV-cache shortage) fell below it,
    # and batch 10 went to 0.873 (its floor follows). Batches 34 and 35 (4,381 excerpts; scored first at
    # 0.717 / 0.876 / 0.709 and 0.767 / 0.854 / 0.745) moved it to 0.85: batch 13 went to 0.846, batch 17 to
    # 0.743 / 0.878, batch 30 to 0.747 and batch 31 to 0.845; nvcc's unsupported architecture, now
    # arch_unsupported as seven labelled rows read it, names a wrong cause for a row of batch 23 that reads it
    # as a CMake bug, which went to 0.838 precision (their floors follow). Batch 36 (4,423 excerpts; scored first
    # at 0.667 / 0.800 / 0.645, as found and after batches 34 and 35's change alike) moved it back to 0.84:
    # batch 17 (0.757 / 0.881), batch 30 (0.753) and batch 31 (0.851) are back above their earlier floors, which
    # hold again; batch 13 stays at 0.846 and batch 23 at 0.838 precision.
    rows = load_corpus(batch)
    labels = [diagnose_text(r["log"]).label for r in rows]
    f = figures(list(zip([r["label"] for r in rows], labels, strict=True)))
    assert f["accuracy"] >= floor and f["precision_named"] >= precision, f
    assert _ids(rows, labels, healthy_called_failure) <= HEALTHY_READ_AS_FAILURE, f
    assert _ids(rows, labels, failure_called_healthy) <= NOT_IN_THE_EXCERPT, f


def test_apply_scores_leaves_decided_verdicts_alone(model: Model) -> None:
    lines = [ScoredLine(1, "Error: OCI runtime error: error executing hook nvidia-container-runtime-hook")]
    for label, conf in (("healthy", "decisive"), ("driver_too_old", "decisive"), ("oom_runtime", "likely")):
        d = LogDiagnosis(source="x", label=label, confidence=conf)
        out = apply_scores(d, lines, model)
        assert (out.label, out.confidence, out.candidates) == (label, conf, [])
    d = LogDiagnosis(source="x", label="unrecognized_error", status="unreadable")
    assert apply_scores(d, lines, model).candidates == []
    assert apply_scores(LogDiagnosis(source="x", label="inconclusive"), lines, None).scorer == {}


# -- bounded --------------------------------------------------------------------------------------
def test_scorer_lines_are_bounded_first_and_last() -> None:
    # one real vLLM line no signature decides, repeated: a log that only fails
    line = next(x for x in _row("bl-arch-05")["log"].splitlines() if "FP8 quantized models" in x)
    text = "\n".join(f"{line} #{i}" for i in range(3000)) + "\n"
    d, lines = signature_diagnosis(text.encode())
    assert len(lines) == HEAD_LINES + TAIL_LINES
    assert [ln.line for ln in lines[:2]] == [1, 2] and lines[-1].line == 3000
    full = diagnose_text(text)
    assert full.label == "arch_unsupported" and full.confidence == "likely"
    assert len(full.scorer["lines"]) <= 3


def test_phase_markers_reach_the_features() -> None:
    log = _row("bl-oomw-01")["log"]  # llama.cpp: load_tensors ... cudaMalloc failed
    _, lines = signature_diagnosis(log.encode())
    assert any(ln.phase == "weight_loading" for ln in lines)


# -- data and view --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("batch", "earlier"),
    [(b, tuple(BATCHES[:i])) for i, b in enumerate(BATCHES)],
    ids=[f"batch{i + 1}" for i in range(len(BATCHES))],
)
def test_blind_batch_is_well_formed_and_from_new_threads(batch: Path, earlier: tuple[Path, ...]) -> None:
    rows = load_corpus(batch)
    # big enough for its figures to mean something (batch 28: 28 rows, collected as the search budget ran out;
    # each row is 3.6 points of its accuracy, which the docs say beside its figures)
    assert len(rows) >= 25
    keys = {"id", "label", "secondary_labels", "source_url", "software", "context", "log"}
    assert all(keys <= set(r) for r in rows) and len({r["id"] for r in rows}) == len(rows)
    assert all(r["label"] in LABELS and r["source_url"].startswith("https://github.com/") for r in rows)
    urls = [r["source_url"].rstrip("/") for r in rows]
    assert len(set(urls)) == len(urls)  # one excerpt per thread
    others = [DATA / "logs_heldout.jsonl", DATA / "logs_other_projects.jsonl", *earlier]
    if DEV_CORPUS.exists():
        others.append(DEV_CORPUS)
    seen = {json.loads(x)["source_url"].rstrip("/") for p in others for x in p.open(encoding="utf-8") if x.strip()}
    assert not seen & set(urls)


def _training_script() -> Any:
    """The training script as a module (registered, so forked fold workers can find its functions)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_log_scorer", SCRIPT)
    assert spec is not None and spec.loader is not None
    train = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = train
    spec.loader.exec_module(train)
    return train


def test_a_fit_started_from_another_solution_reaches_the_same_weights() -> None:
    # Leave-one-project-out starts each fit from the all-data solution (hundreds of fits); the
    # objective is strictly convex, so where L-BFGS starts must not change what it finds.
    train = _training_script()
    items = train.extract(train.load_sets([DATA / "logs_heldout.jsonl", DATA / "logs_other_projects.jsonl"]))
    everything = train.solve(items)
    largest = max({it["group"] for it in items}, key=lambda g: sum(it["group"] == g for it in items))
    rest = [it for it in items if it["group"] != largest]
    cold, warm = train.solve(rest), train.solve(rest, start=everything)
    assert cold.names == warm.names and len(rest) < len(items)
    assert float(abs(cold.theta - warm.theta).max()) < 0.005
    # ... and it did move from the start: the project left out changed the weights
    k = len(train.CLASSES)
    at = {f: i for i, f in enumerate(everything.names)}
    moved = max(
        float(abs(warm.theta[i * k : (i + 1) * k] - everything.theta[at[f] * k : (at[f] + 1) * k]).max())
        for i, f in enumerate(warm.names)
    )
    assert moved > 0.1


def test_fold_fits_in_worker_processes_give_the_same_models() -> None:
    # Leave-one-project-out runs its fits in parallel (--jobs); the models must not depend on it
    train = _training_script()
    items = train.extract(train.load_sets([DATA / "logs_heldout.jsonl"]))
    for it in items:
        it["fold"] = train.fold_of(it["group"], 3)
    alone, forked = train.fold_models(items, "fold"), train.fold_models(items, "fold", jobs=2)
    assert len(alone) == 3 and list(alone) == list(forked)
    assert all(alone[f].to_json() == forked[f].to_json() for f in alone)
    first = next(iter(alone))  # ... and each is the fit on every other fold
    assert alone[first].to_json() == train.fit([it for it in items if it["fold"] != first]).to_json()
    assert len({json.dumps(m.to_json(), sort_keys=True) for m in alone.values()}) == 3


def test_scorer_lines_section_is_validated() -> None:
    base = {"stages": {"unknown": "x"}, "signatures": [
        {"id": "s", "label": "nccl_error", "stage": "unknown", "severity": "error", "priority": 1,
         "patterns": ["NCCL error"], "advice": "a"}
    ]}  # fmt: skip
    assert parse_signatures({**base, "scorer_lines": {"patterns": ["[Ff]ail"]}}).scorer_patterns == ("[Ff]ail",)
    with pytest.raises(SignatureError):
        parse_signatures({**base, "scorer_lines": ["[Ff]ail"]})
    with pytest.raises(SignatureError):
        parse_signatures({**base, "scorer_lines": {"patterns": ["^anchored"]}})


def test_candidates_view_escapes_and_shows_scores() -> None:
    hostile = "<script>alert(1)</script>"
    d = LogDiagnosis(
        source=hostile,
        label="unrecognized_error",
        confidence="likely",
        candidates=[{"label": hostile, "score": 0.5}, hostile],
        scorer={"model": hostile, "label": hostile, "score": 0.5, "threshold": 0.9, "names_cause": False,
                "lines": [{"line": 3, "text": hostile}, hostile]},
    )  # fmt: skip
    for html in (d.candidates_view()._repr_html_(), d._repr_html_(), LogDiagnoses([d]).candidates_view()._repr_html_()):
        assert "<script>" not in html and "&lt;script&gt;" in html
    assert "0.50" in d.candidates_view()._repr_html_() and "line 3" in d.candidates_view()._repr_html_()
    empty = LogDiagnoses([LogDiagnosis(source="a", label="healthy")]).candidates_view()._repr_html_()
    assert "not run" in empty


def test_overall_label_takes_a_learned_cause_after_signature_causes() -> None:
    row = _row("bl-toolkit-05")
    learned = diagnose_text(row["log"])
    healthy = LogDiagnosis(source="b", label="healthy", confidence="decisive")
    assert LogDiagnoses([healthy, learned]).label == "container_toolkit_requirement"
    back = LogDiagnosis.from_dict(json.loads(json.dumps(learned.to_dict())))
    assert back.scored and back.candidates == learned.candidates


def test_every_engine_hands_the_scorer_the_same_lines() -> None:
    # the shipped weights were trained with one engine; Hyperscan, RE2 and re must agree
    for r in load_corpus(BLIND):
        data = r["log"].encode("utf-8", "surrogateescape")
        seen = {
            e: [(ln.line, ln.text, ln.phase) for ln in signature_diagnosis(data, engine=e)[1]]
            for e in ("auto", "re2", "re")
        }
        assert seen["auto"] == seen["re2"] == seen["re"], r["id"]


def test_a_verdict_the_scorer_cannot_change_does_not_load_its_weights() -> None:
    # A log a signature (or proof of serving) decides never pays for reading the weights.
    default_model.cache_clear()
    diagnose_text("INFO:     Uvicorn running on http://0.0.0.0:8000\n")
    diagnose_text("RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n")
    assert default_model.cache_info().misses == 0
    d = diagnose_text("ERROR frobnicator exploded while reticulating splines\n")
    assert d.candidates and default_model.cache_info().misses == 1


def test_blind_scoring_prints_figures_and_counts_but_no_log_text(tmp_path: Path) -> None:
    # A blind batch is scored before anyone reads it (docs/LOG_BLIND_BATCHES.md): the report that
    # records its figures must not show a line of it.
    batch = tmp_path / "batch.jsonl"
    rows = [
        {
            "id": "x1",
            "label": "driver_too_old",
            "log": "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
        },
        {"id": "x2", "label": "shm_insufficient", "log": "zebra-quartz-unique-line: nothing recognisable here"},
    ]
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "eval_log_classifier.py"), "--blind", "--corpus", str(batch)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rep = json.loads(out)
    assert rep["figures"]["n"] == 2 and rep["figures"]["accuracy"] == 0.5, rep
    assert rep["misses"] == {"shm_insufficient -> inconclusive": 1}, rep
    assert "zebra-quartz" not in out and "found version" not in out


def test_leave_one_project_out_on_a_fixed_sample_scores_only_those_projects(monkeypatch: pytest.MonkeyPatch) -> None:
    # --projects N: the full leave-one-project-out is ~1,000 fits; a sample no one chose stands in
    train = _training_script()
    heldout = DATA / "logs_heldout.jsonl"
    items = train.extract(train.load_sets([heldout]))
    groups = [it["group"] for it in items]
    chosen = train.sampled_projects(groups, 4)
    # fixed across runs and machines (SHA-256, not Python's salted hash), whatever the input order
    assert chosen == ["chatdoc-com/ocrflux", "nodefluxio/vortex", "pytorch/pytorch", "qwenlm/qwen-agent"]
    assert chosen == train.sampled_projects(list(reversed(groups)), 4)
    assert set(chosen) < set(groups)
    for it in items:
        it["fold"] = train.fold_of(it["group"], 0)
    models = train.fold_models(items, "fold", only=chosen)
    assert sorted(models) == chosen
    assert models[chosen[0]].to_json() == train.fit([it for it in items if it["group"] != chosen[0]]).to_json()
    fitted_on: list[int] = []  # each sampled project's model is trained on every other item, not the sample's

    def spy(items: list[dict], key: str, **kw: object) -> dict:
        fitted_on.append(len(items))
        return fold_models(items, key, **kw)

    fold_models = train.fold_models
    monkeypatch.setattr(train, "fold_models", spy)
    _, rep = train.train([heldout], cv_folds=0, projects=4)
    assert fitted_on == [len(items), len(items)]  # the calibration's folds, then the sample's
    scored = sum(g in chosen for g in groups)
    assert rep["folds"] == 4 and rep["excerpts"] == scored < len(items)
    assert rep["sample"] == {
        "projects": 4,
        "of_projects": len(set(groups)),
        "excerpts": scored,
        "of_excerpts": len(items),
    }
    assert "4 of " in train.format_report(rep)


def test_threshold_ignores_false_alarms_the_signatures_made() -> None:
    # A healthy log whose own ERROR line the verdict already calls unrecognized_error stays so at every
    # threshold; counted against the scorer it sent the threshold to its last value (0.99) at 3,113
    # excerpts (batch 24's LM Studio row). A healthy log the scorer itself would name a cause for still must.
    train = _training_script()
    right = [("nccl_error", "unrecognized_error", "nccl_error", 0.9)] * 20
    signatures_alarm = ("healthy", "unrecognized_error", train.NO_CAUSE, 0.5)
    renamed = ("healthy", "unrecognized_error", "oom_runtime", 0.5)  # a failure either way: a wrong name, no alarm
    scorer_alarm = ("healthy", "inconclusive", "oom_runtime", 0.7)
    assert train.choose_threshold([*right, signatures_alarm, renamed])[0] == train.THRESHOLDS[0]
    chosen, table = train.choose_threshold([*right, signatures_alarm, scorer_alarm])
    assert chosen == 0.71  # 0.70 reaches 20/21 = 0.952 precision, but names the healthy log
    assert next(r for r in table if r["threshold"] == 0.7)["scorer_precision"] > train.TARGET_PRECISION
