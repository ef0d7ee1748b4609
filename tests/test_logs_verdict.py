"""Healthy needs proof; inconclusive says what would decide; phases place OOMs; codes are data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_rules import need_path
from vllm_runbooks.logs import diagnose_text
from vllm_runbooks.logs.codes import code_tables, resolve
from vllm_runbooks.logs.evaluate import DEV_CORPUS, evaluate, load_corpus

ROOT = Path(__file__).resolve().parents[1]
OTHER = Path(__file__).parent / "data" / "logs_other_projects.jsonl"
HELDOUT = Path(__file__).parent / "data" / "logs_heldout.jsonl"

SERVING = 'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'


def test_healthy_needs_proof_that_the_server_answered() -> None:
    d = diagnose_text("INFO 01-01 00:00:00 [model_runner.py:1] Loading weights took 7.51 GiB\nINFO something\n")
    assert (d.label, d.confidence) == ("inconclusive", "inconclusive")
    assert "stops during start-up" in d.would_decide and d.evidence
    d = diagnose_text("INFO 01-01 00:00:00 [core.py:1] # GPU blocks: 1381\n" + SERVING)
    assert (d.label, d.confidence) == ("healthy", "decisive")
    assert d.evidence[0]["role"] == "proof" and d.evidence[0]["line"] == 2


def test_finished_start_up_is_healthy_only_likely_and_asks_for_a_request() -> None:
    # The engine allocated its KV cache and nothing failed (the team's corpus calls such logs
    # healthy), but the log stops before a request, so healthy is not decisive.
    d = diagnose_text("INFO 01-01 00:00:00 [core.py:1] # GPU blocks: 1381\nINFO something\n")
    assert (d.label, d.confidence) == ("healthy", "likely")
    assert d.evidence[0]["role"] == "proof" and d.evidence[0]["line"] == 1
    assert "a request answered" in d.would_decide
    # "# GPU blocks: 0" is not a finished start-up (it is the KV-cache failure).
    assert diagnose_text("INFO 01-01 00:00:00 [core.py:1] # GPU blocks: 0\n").label != "healthy"
    # A failure-looking line after the finished start-up blocks healthy ...
    warn = "WARNING 01-01 00:00:01 [worker.py:2] CUDA graph capture failed, falling back\n"
    init = "INFO 01-01 00:00:00 [core.py:1] init engine (profile, create kv cache, warmup model) took 9.1 s\n"
    d = diagnose_text(init + warn)
    assert d.label == "unrecognized_error"
    # ... one before it is noted, and start-up went on past it.
    d = diagnose_text(warn + "INFO 01-01 00:00:02 [api_server.py:3] Supported tasks: ['generate']\n")
    assert (d.label, d.confidence) == ("healthy", "likely") and d.evidence[1]["role"] == "noted"


def test_a_log_that_stops_during_graph_capture_is_not_healthy() -> None:
    # Review of blind batches 7-9: the KV cache is allocated before CUDA graphs are captured, and a
    # capture that hangs (or a pod killed by its start-up probe) leaves the log ending there.
    kv = "INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: 123,456 tokens\n"
    capture = "INFO 01-01 00:00:01 [gpu_model_runner.py:2] Capturing CUDA graph shapes:  14%|#4 | 10/67\n"
    d = diagnose_text(kv + capture)
    assert d.label == "inconclusive", d.summary()
    done = "INFO 01-01 00:00:09 [gpu_model_runner.py:3] Graph capturing finished in 8 secs\n"
    d = diagnose_text(kv + capture + done)
    assert (d.label, d.confidence) == ("healthy", "likely")


def test_a_warning_after_the_first_answer_is_not_forgiven_by_a_later_stage() -> None:
    # Ollama binds its port before GPU discovery: a GPU warning after "Listening on" and a runner
    # that then starts (on the CPU too) is not proof that the GPU path works.
    text = (
        'level=INFO source=routes.go:1 msg="Listening on 127.0.0.1:11434 (version 0.5.7)"\n'
        "W0101 00:00:00.000 1 rm.go:109] NVML not detected: could not find the GPU, initialisation failed\n"
        'level=INFO source=server.go:3 msg="llama runner started in 2.01 seconds"\n'
    )
    assert diagnose_text(text, scorer=False).label == "unrecognized_error"


def test_requests_refused_after_answered_ones_are_not_healthy() -> None:
    # Blind batch 7: vLLM answering GET /v1/models but refusing every chat completion with 400
    # (started without its tool-calling flags) was called healthy, decisive.
    text = (
        'INFO:     10.0.0.1:39972 - "GET /v1/models HTTP/1.1" 200 OK\n'
        'INFO:     10.0.0.1:39972 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    )
    base = diagnose_text(text, scorer=False)
    assert (base.label, base.confidence) == ("unrecognized_error", "inconclusive")
    assert [e["line"] for e in base.evidence] == [2] and base.evidence[0]["signature"] == "request_rejected"
    assert diagnose_text(text).label != "healthy"
    # A refusal the server was proven up after is noted, not decisive against it; 5xx counts too.
    later = 'INFO:     10.0.0.1:2 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
    assert diagnose_text(later, scorer=False).label == "unrecognized_error"
    d = diagnose_text(later + "INFO:     Application startup complete.\n", scorer=False)
    assert (d.label, d.confidence) == ("healthy", "likely")


def test_an_error_sent_inside_an_answered_stream_is_not_healthy() -> None:
    # Blind batch 10: a streamed completion answers 200 (its chunks prove the server answered), then
    # sends its failure as an error chunk; the response bodies are the whole log.
    chunk = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m"}\n'
    error = 'data: {"error": {"message": "pop from empty list", "type": "InternalServerError", "code": 500}}\n'
    assert diagnose_text(chunk, scorer=False).label == "healthy"
    d = diagnose_text(chunk + error, scorer=False)
    assert d.label == "unrecognized_error"
    assert [(e["line"], e["signature"]) for e in d.evidence if e["role"] != "proof"] == [(2, "request_rejected")]
    assert diagnose_text(chunk + error).label != "healthy"


def test_nothing_recognised_is_inconclusive_not_healthy() -> None:
    d = diagnose_text("hello\nworld\n")
    assert d.label == "inconclusive" and d.would_decide and not d.evidence


def test_failure_looking_warning_blocks_healthy_and_is_shown() -> None:
    warn = "W0101 00:00:00.000 1 rm.go:109] NVML not detected: could not find the GPU, initialisation failed\n"
    d = diagnose_text(warn)
    assert d.label == "unrecognized_error" and d.evidence[0]["line"] == 1
    assert d.would_decide
    # the same warning *before* the server answered is noted, not a failure
    d = diagnose_text(warn + SERVING)
    assert (d.label, d.confidence) == ("healthy", "likely")
    assert [e["role"] for e in d.evidence] == ["proof", "noted"]
    # and after the server answered it blocks `healthy`
    assert diagnose_text(SERVING + warn).label == "unrecognized_error"


def test_recognised_failure_after_startup_wins_over_the_proof() -> None:
    log = "INFO:     Application startup complete.\nERROR:    [Errno 98] error while attempting to bind on address\n"
    d = diagnose_text(log)
    assert (d.label, d.confidence) == ("other_config_error", "decisive")
    assert d.evidence[0]["role"] == "cause" and d.evidence[0]["line"] == 2


@pytest.mark.parametrize(
    ("before", "label"),
    [
        ("INFO [default_loader.py:1] Starting to load model x\n", "oom_weights"),
        ("INFO [gpu_model_runner.py:1] Model loading took 7.6 GiB\nINFO Memory profiling takes 3 s\n", "oom_runtime"),
        ("INFO [model_runner.py:1] Capturing CUDA graphs for decoding\n", "oom_runtime"),
    ],
)
def test_oom_phase_is_the_phase_entered_before_it(before: str, label: str) -> None:
    filler = "".join(f"INFO tick {i}\n" for i in range(60))  # beyond the refinement window
    d = diagnose_text(before + filler + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert d.label == label
    assert d.root_cause is not None and (d.root_cause.refined_by or "").endswith("(last phase before)")
    assert d.confidence == "likely"


def test_oom_without_any_phase_says_what_would_decide() -> None:
    d = diagnose_text("torch.OutOfMemoryError: CUDA out of memory.\n")
    assert d.label == "oom_runtime" and d.confidence == "likely" and "phase" in d.would_decide


@pytest.mark.parametrize(
    ("line", "label", "name"),
    [
        ("cudaSetDevice err: 35", "driver_too_old", "CUDA_ERROR_INSUFFICIENT_DRIVER"),
        ("cuInit err: 999", "unrecognized_error", "CUDA_ERROR_UNKNOWN"),
        ("nvml init failed: ERROR_LIBRARY_NOT_FOUND", "libcuda_missing", "NVML_ERROR_LIBRARY_NOT_FOUND"),
        ("nvmlInit returned 18", "nvml_mismatch", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
        ("NCCL failure: result 2 in init", "nccl_error", "ncclSystemError"),
    ],
)
def test_numeric_codes_resolve_from_the_data(line: str, label: str, name: str) -> None:
    code = resolve(line)
    assert code is not None and (code.label, code.name) == (label, name)
    assert code.source.startswith("https://")
    assert diagnose_text(line + "\n").label == label


def test_a_bare_number_without_the_library_decides_nothing() -> None:
    assert resolve("worker exited with error 35") is None
    assert all(t in code_tables() for t in ("nvml", "cuda", "nccl"))


def test_json_carries_label_confidence_evidence_and_would_decide(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_text("INFO Using max model len 32768\n")
    q = tmp_path / "b.log"
    q.write_text("ERROR x Authorization: Bearer sk-abcdefghijklmnop1234567890 failed\nRuntimeError: frobnicator\n")
    r = subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", "diagnose-log", "--format", "json", str(p), str(q)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "lib")},
        check=False,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    a, b = json.loads(r.stdout)
    assert (a["label"], a["confidence"]) == ("inconclusive", "inconclusive") and a["would_decide"]
    assert b["label"] == "unrecognized_error" and b["evidence"] and b["confidence"] == "likely"
    assert "sk-abcdefghijklmnop1234567890" not in r.stdout  # output is redacted


@pytest.mark.parametrize("path", [OTHER, HELDOUT, DEV_CORPUS], ids=["other-projects", "heldout", "dev"])
def test_no_failure_is_called_healthy(path: Path) -> None:
    need_path(path, "a labelled log set")
    rep = evaluate(path)
    assert rep["n"] >= 40 and rep["failures"] >= 30
    assert rep["failures_called_healthy"] == [], rep["failures_called_healthy"]
    assert rep["healthy_false_alarms"] == []


def test_other_projects_set_is_well_formed_and_from_other_projects() -> None:
    rows = load_corpus(OTHER)
    assert len(rows) >= 40 and len({r["id"] for r in rows}) == len(rows)
    assert all(r["source_url"].startswith("https://github.com/") for r in rows)
    assert not any("github.com/vllm-project/" in r["source_url"] for r in rows)
    assert len({r["software"] for r in rows}) >= 15
    assert evaluate(OTHER)["accuracy"] >= 0.9


def test_compiled_database_cache_rebuilds_a_corrupt_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The on-disk cache is keyed on the signature file, rewritten atomically, and a corrupt entry is ignored."""
    from vllm_runbooks.logs import dbcache
    from vllm_runbooks.logs.matcher import hyperscan_available
    from vllm_runbooks.logs.signatures import default_signatures_bytes

    monkeypatch.setenv("VLLM_RUNBOOKS_CACHE", str(tmp_path))
    monkeypatch.setattr(dbcache, "_MEMO", {})
    key = dbcache.cache_key(default_signatures_bytes(), "hyperscan" if hyperscan_available() else "auto")
    path = tmp_path / "logsig" / f"{key}.pkl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a pickle")
    first = dbcache.default_compiled()
    assert path.read_bytes() != b"not a pickle" and not list(path.parent.glob(".tmp-*"))
    monkeypatch.setattr(dbcache, "_MEMO", {})
    again = dbcache.default_compiled()  # read back from disk this time
    assert again is not first and again.patterns == first.patterns
    assert dbcache.cache_key(default_signatures_bytes() + b"\n# edit", "hyperscan") != key


def test_healthy_on_a_cut_log_is_at_most_likely_and_names_the_unread_part() -> None:
    text = "INFO 01-01 00:00:00 [core.py:1] # GPU blocks: 1381\n" + SERVING
    tail = "ERROR 01-01 00:00:09 [core.py:9] CUDA error: an illegal memory access was encountered\n"
    d = diagnose_text(text + tail, max_bytes=len(text))
    assert d.truncated and d.label == "healthy"
    assert d.confidence == "likely"
    assert f"after the first {len(text):,} bytes" in d.would_decide


def test_healthy_with_cut_long_lines_is_at_most_likely() -> None:
    from vllm_runbooks.logs.verdict import decide

    d = diagnose_text("INFO 01-01 00:00:00 [core.py:1] # GPU blocks: 1381\n" + SERVING)
    assert (d.label, d.confidence) == ("healthy", "decisive")
    d.long_lines = 2  # as the reader reports lines longer than MAX_LINE_BYTES
    d = decide(d)
    assert (d.label, d.confidence) == ("healthy", "likely")
    assert "2 over-long line(s)" in d.would_decide
