"""Classifier behaviour: precedence, streaming edge cases, engines agree, CLI shape, dev accuracy."""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import platform
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from ci_rules import need_path, unavailable
from vllm_runbooks.cli import logs as cli_logs
from vllm_runbooks.logs import (
    STATUS_EMPTY,
    STATUS_UNREADABLE,
    LogDiagnosis,
    diagnose_log,
    diagnose_logs,
    diagnose_text,
    re2_available,
)
from vllm_runbooks.logs import classify as classify_mod
from vllm_runbooks.logs.evaluate import DEV_CORPUS, evaluate, figures
from vllm_runbooks.logs.matcher import hyperscan_available

ENGINE_CORE = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
HEALTHY = (
    "(APIServer pid=1) INFO 01-06 23:26:32 [api_server.py:1020] Supported tasks: ['generate']\n"
    "(APIServer pid=1) INFO 01-06 23:26:34 [api_server.py:1333] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    'INFO:     127.0.0.1:55504 - "GET /v1/models HTTP/1.1" 200 OK\n'
)


# ------------------------------------------------------------------ precedence (root cause wins)
def test_804_beats_engine_core_failed_that_follows() -> None:
    log = (
        "INFO 03-26 05:25:01 cuda.py:230] Using Flash Attention backend.\n"
        "ERROR 03-26 05:25:01 engine.py:389] Unexpected error from cudaGetDeviceCount(). Error 804: "
        "forward compatibility was attempted on non supported HW\n"
        "ERROR 03-26 05:25:01 engine.py:389] Traceback (most recent call last):\n"
        f"{ENGINE_CORE}\n"
    )
    d = diagnose_text(log)
    assert d.label == "forward_compat_unsupported"
    assert d.root_cause is not None and d.root_cause.line == 2
    assert "unrecognized_error" in d.labels  # the symptom is kept, ranked below


def test_driver_too_old_beats_generic_and_later_no_gpu() -> None:
    log = (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12080).\n"
        "RuntimeError: No CUDA GPUs are available\n"
        f"{ENGINE_CORE}\n"
    )
    d = diagnose_text(log)
    assert d.labels[:2] == ["driver_too_old", "no_gpu_visible"]


def test_small_shm_beats_the_nccl_error_it_causes() -> None:
    log = (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
        "h:1:2 [1] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-x (size 5967872)\n"
    )
    d = diagnose_text(log)
    assert d.label == "shm_insufficient"
    assert d.labels == ["shm_insufficient", "nccl_error"]


def test_cu_driver_symbol_is_old_driver_not_wheel_mismatch() -> None:
    d = diagnose_text("ImportError: /x/vllm/_C.abi3.so: undefined symbol: cuTensorMapEncodeTiled\n")
    assert d.label == "driver_too_old"
    d2 = diagnose_text("ImportError: /x/vllm/_C.abi3.so: undefined symbol: _ZN3c106detail14torchCheckFail\n")
    assert d2.label == "abi_or_wheel_mismatch"


def test_oom_refined_by_nearest_context() -> None:
    weights = (
        'ERROR [core.py:866]   File "/v/model_executor/model_loader/default_loader.py", line 269, in load_weights\n'
        "ERROR [core.py:866] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 60.00 MiB.\n"
    )
    graphs = (
        "INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 67.7229 GB\n"
        'ERROR   File "/torch/cuda/graphs.py", line 84, in capture_end\n'
        "ERROR RuntimeError: CUDA error: out of memory\n"
    )
    assert diagnose_text(weights).label == "oom_weights"
    assert diagnose_text(weights).root_cause.refined_by == "weight_loading"  # type: ignore[union-attr]
    assert diagnose_text(graphs).label == "oom_runtime"
    assert diagnose_text("torch.OutOfMemoryError: CUDA out of memory.\n").label == "oom_runtime"


def test_a_refined_label_carries_its_own_advice() -> None:
    # Error 35 in a container whose NGC banner found no driver is a container started without GPUs:
    # the advice must say so, not "upgrade the host driver" (blind batch 18, real wording).
    error_35 = (
        "W1011 03:30:55.066908 1 pinned_memory_manager.cc:236] Unable to allocate pinned system memory, pinned "
        "memory pool will not be available: CUDA driver version is insufficient for CUDA runtime version\n"
    )
    banner = "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
    plain, in_container = diagnose_text(error_35), diagnose_text(banner + error_35)
    assert (plain.label, in_container.label) == ("driver_too_old", "no_gpu_visible")
    assert in_container.confidence == "decisive"
    assert "--gpus" in in_container.advice and "Upgrade the host driver" not in in_container.advice
    assert "Upgrade the host driver" in plain.advice
    # a refinement without advice of its own keeps the signature's (the OOM's covers both phases)
    weights = diagnose_text(
        'File "/v/model_executor/model_loader/default_loader.py", line 269, in load_weights\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 60.00 MiB.\n"
    )
    assert weights.label == "oom_weights" and weights.advice.startswith("The GPU ran out of memory")
    # error 804 beside a driver/library mismatch is the mismatch, with its own advice
    mismatch = diagnose_text(
        "Failed to initialize NVML: Driver/library version mismatch\n"
        "failed call to cuInit: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: forward compatibility was attempted on "
        "non supported HW\n"
    )
    assert mismatch.label == "nvml_mismatch" and "Reboot the host" in mismatch.advice
    # a fact marker (the banner) refines only within the window: far before, it says nothing
    far = diagnose_text(banner + "INFO step\n" * 60 + error_35)
    assert far.label == "driver_too_old" and "Upgrade the host driver" in far.advice


def test_unexplained_traceback_is_never_healthy() -> None:
    log = HEALTHY + "Traceback (most recent call last):\n  File \"a.py\", line 3, in f\nKeyError: 'x'\n"
    d = diagnose_text(log)
    assert d.label == "unrecognized_error"
    assert diagnose_text(HEALTHY).label == "healthy"


def test_info_and_warning_mentions_stay_healthy() -> None:
    log = HEALTHY + (
        "(APIServer pid=1) WARNING 07-21 04:58:42 [model.py:1528] Default sampling parameters have been overridden\n"
        "INFO 07-07 20:12:54 serving.py:1] request failed with ValueError: bad input (client error)\n"
        'INFO:     127.0.0.1:59820 - "GET /generate HTTP/1.1" 404 Not Found\n'
    )
    assert diagnose_text(log).label == "healthy"


# ------------------------------------------------------------------ streaming edge cases
def test_empty_and_blank_logs_are_unknown_not_healthy(tmp_path: Path) -> None:
    (tmp_path / "e.log").write_bytes(b"")
    (tmp_path / "b.log").write_bytes(b"\n \n\t\n")
    for name in ("e.log", "b.log"):
        d = diagnose_log(tmp_path / name)
        assert (d.label, d.status) == ("inconclusive", STATUS_EMPTY)
        assert d.reason


def test_missing_and_directory_paths_are_unreadable(tmp_path: Path) -> None:
    d = diagnose_log(tmp_path / "nope.log")
    assert (d.label, d.status, d.reason) == ("inconclusive", STATUS_UNREADABLE, "no such file")
    assert diagnose_log(tmp_path).status == STATUS_UNREADABLE


def test_gzip_xz_bzip2_detected_by_magic_not_suffix(tmp_path: Path) -> None:
    text = (HEALTHY + "Failed to initialize NVML: Driver/library version mismatch\n").encode()
    for name, data, kind in (
        ("a.log", gzip.compress(text), "gzip"),
        ("b.txt", lzma.compress(text), "xz"),
        ("c", bz2.compress(text), "bzip2"),
    ):
        (tmp_path / name).write_bytes(data)
        d = diagnose_log(tmp_path / name)
        assert (d.label, d.compression) == ("nvml_mismatch", kind)
        assert d.root_cause.line == 4  # type: ignore[union-attr]


def test_truncated_gzip_reports_what_could_not_be_read(tmp_path: Path) -> None:
    data = gzip.compress(("INFO x\n" * 50000 + "RuntimeError: No CUDA GPUs are available\n").encode())
    (tmp_path / "t.log.gz").write_bytes(data[: len(data) // 2])
    d = diagnose_log(tmp_path / "t.log.gz")
    assert d.unread and "gzip" in d.unread[0]
    assert d.status == "ok" and d.bytes_scanned > 0


def test_non_utf8_bytes_and_garbage_do_not_crash() -> None:
    raw = (
        b"\xff\xfe garbage \x80\x81\n"
        b"RuntimeError: CUDA error: no kernel image is available for execution on the device \xe9\n"
    )
    d = diagnose_log(raw)
    assert d.label == "arch_unsupported" and d.non_utf8
    assert "\ufffd" in d.root_cause.text  # type: ignore[union-attr]
    binary = bytes(range(256)) * 4000
    d2 = diagnose_log(binary)
    assert d2.status == "unreadable" and d2.label == "inconclusive" and d2.confidence == "inconclusive"
    assert any("binary data" in u for u in d2.unread) and d2.bytes_scanned <= 8 << 20


def test_ansi_and_transport_prefixes_are_stripped() -> None:
    lines = [
        "2025-11-07T10:00:00.123456789Z \x1b[0;36m(EngineCore_DP0 pid=5)\x1b[0;0m ERROR 11-07 10:00:00 [core.py:1] "
        "RuntimeError: No CUDA GPUs are available",
        "vllm_1   | \x1b[31mRuntimeError: No CUDA GPUs are available\x1b[0m",
        "[pod/vllm-0/vllm] 2025-11-07T10:00:00Z RuntimeError: No CUDA GPUs are available",
        "авг 18 14:15:04 llm python3[28059]: RuntimeError: No CUDA GPUs are available",
        "2025-11-07T10:00:00.1+00:00 stderr F RuntimeError: No CUDA GPUs are available",
        "2023-09-03 13:06:49 | ERROR | stderr | RuntimeError: No CUDA GPUs are available",
    ]
    for ln in lines:
        d = diagnose_text(ln + "\n")
        assert d.label == "no_gpu_visible", ln
        assert d.root_cause.text == "RuntimeError: No CUDA GPUs are available" or d.root_cause.text.startswith(  # type: ignore[union-attr]
            "ERROR 11-07"
        ), d.root_cause.text  # type: ignore[union-attr]
    # an escape sequence inside the message itself must not hide it
    assert diagnose_text("No CUDA \x1b[1mGPUs\x1b[0m are available\n").label == "no_gpu_visible"
    # ... nor its written-out form, as pasted into threads: Ollama's GIN access log with "^[[97;42m 200 ^[[0m"
    # (blind batch 24) answered two requests; the raw bytes hold no ESC, so the block must be rewritten anyway
    gin = (
        "[GIN] 2024/03/01 - 01:34:07 |^[[97;42m 200 ^[[0m|  7.799372595s |      <ip> |^[[97;46m POST    ^[[0m "
        '"/api/chat"\n'
    )
    d = diagnose_text("ggml_init_cublas: found 1 CUDA devices:\n" + gin)
    assert d.label == "healthy" and d.evidence[0]["text"].startswith("[GIN] 2024/03/01 - 01:34:07 | 200 |")
    # ... also after a caret that is not one (a traceback's markers: the check finds "^" first, then "^[[")
    d = diagnose_text("ggml_init_cublas: found 1 CUDA devices:\n    x = f(y)\n        ^^^^\n" + gin)
    assert d.label == "healthy" and d.evidence[0]["text"].startswith("[GIN] 2024/03/01 - 01:34:07 | 200 |")
    # ... and when the block's first caret starts its only code
    one = '[GIN] 2024/03/01 - 01:34:07 |^[[97;42m 200 | 7.799372595s | <ip> | POST "/api/chat"\n'
    assert diagnose_text(one).label == "healthy"


def test_stderr_relogged_at_error_level_keeps_its_own_level() -> None:
    # FastChat / LLaVA log their own stderr through a logger at ERROR (blind batch 16): uvicorn's
    # INFO lines inside are a server that came up, not errors
    log = (
        "2023-09-03 13:06:49 | INFO | controller | Init controller\n"
        "2023-09-03 13:06:49 | ERROR | stderr | INFO:     Started server process [76682]\n"
        "2023-09-03 13:06:49 | ERROR | stderr | INFO:     Application startup complete.\n"
        "2023-09-03 13:06:49 | ERROR | stderr | INFO:     Uvicorn running on http://0.0.0.0:10000\n"
    )
    assert diagnose_text(log).label == "healthy"
    # a real error wrapped the same way is still read
    assert diagnose_text(
        log + "2023-09-03 13:07:00 | ERROR | stderr | RuntimeError: No CUDA GPUs are available\n"
    ).label == ("no_gpu_visible")


def test_one_megabyte_line_is_capped_but_matched() -> None:
    big = b"x" * (1 << 20) + b" CUDA error: no kernel image is available for execution on the device " + b"y" * 5000
    d = diagnose_log(big + b"\nINFO ok\n")
    assert d.label == "arch_unsupported"
    assert d.lines_scanned == 2
    assert len(d.root_cause.text) <= classify_mod.KEEP_CHARS + 2  # type: ignore[union-attr]
    assert "no kernel image" in d.root_cause.text  # type: ignore[union-attr]


def test_line_longer_than_the_cut_limit_and_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classify_mod, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(classify_mod, "MAX_LINE_BYTES", 10000)
    body = "".join(f"INFO line {i}\n" for i in range(3000))
    log = ("z" * 50000 + "\n" + body + "RuntimeError: No CUDA GPUs are available\n").encode()
    d = diagnose_log(log)
    assert d.label == "no_gpu_visible"
    assert d.root_cause.line == 3002  # type: ignore[union-attr]
    assert d.lines_scanned == 3002 and d.long_lines == 1


def test_max_bytes_sets_truncated() -> None:
    log = ("INFO fine\n" * 1000 + "RuntimeError: No CUDA GPUs are available\n").encode()
    d = diagnose_log(log, max_bytes=500)
    assert d.truncated and d.label == "inconclusive" and d.bytes_scanned == 500


def test_finding_lines_and_text_are_exact() -> None:
    log = "a\nb\nc\nRuntimeError: No CUDA GPUs are available\nd\n"
    d = diagnose_text(log)
    assert d.lines_scanned == 5
    assert [(f.line, f.text, f.match) for f in d.findings if f.label == "no_gpu_visible"] == [
        (4, "RuntimeError: No CUDA GPUs are available", "No CUDA GPUs are available")
    ]


# ------------------------------------------------------------------ engines agree
def _corpus_logs() -> list[str]:
    return [json.loads(x)["log"] for x in DEV_CORPUS.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("engine", ["re", "re2", "hyperscan"])
def test_engines_give_identical_findings(engine: str) -> None:
    need_path(DEV_CORPUS, "the team's dev corpus (../shared/corpus)")
    if engine == "re2" and not re2_available():
        unavailable("google-re2 not installed (a declared dependency)")
    if engine == "hyperscan" and not hyperscan_available():
        if platform.machine() != "x86_64" or sys.platform != "linux":
            pytest.skip("hyperscan is declared for x86_64 Linux only")
        unavailable("hyperscan not installed (a declared dependency on x86_64 Linux)")
    for log in _corpus_logs():
        a = diagnose_text(log, engine="re")
        b = diagnose_text(log, engine=engine, threads=2)
        assert b.engine == engine
        assert [(f.signature, f.label, f.line) for f in a.findings] == [
            (f.signature, f.label, f.line) for f in b.findings
        ]
        assert a.label == b.label


def test_engines_agree_on_a_multiblock_file_with_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classify_mod, "PARALLEL_MIN_BYTES", 1024)
    monkeypatch.setattr(classify_mod, "CHUNK_BYTES", 64 * 1024)
    lines = [f'INFO:     10.0.0.{i % 250}:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK' for i in range(40000)]
    lines[123] = "Starting vLLM API server 0 on http://0.0.0.0:8000"
    lines[20000] = "ERROR 11-07 [x.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB"
    lines[39999] = "RuntimeError: NCCL error: unhandled system error"
    p = tmp_path / "m.log"
    p.write_text("\n".join(lines) + "\n")
    results = {e: diagnose_log(p, engine=e, threads=3) for e in ("re", "re2")}
    for d in results.values():
        assert [(f.line, f.signature) for f in d.findings if f.severity != "info"] == [
            (20001, "cuda_oom"),
            (40000, "nccl_error"),
        ]
        assert d.label == "oom_runtime" and d.lines_scanned == 40000


# ------------------------------------------------------------------ records, display, CLI
def test_record_round_trip_and_display() -> None:
    d = diagnose_text("INFO x\nFailed to initialize NVML: Driver/library version mismatch\n")
    back = LogDiagnosis.from_dict(json.loads(d.to_json()))
    assert back.label == d.label and back.root_cause is not None and back.root_cause.line == 2
    html = d._repr_html_()
    assert "nvml_mismatch" in html and "Driver/library version mismatch" in html
    fig = d.timeline()
    assert fig.data and list(fig.data[0].x) == [2]
    frame = d.to_frame()
    assert list(frame["line"]) == [2]


def test_diagnose_logs_overall_label(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("RuntimeError: NCCL error: unhandled system error\n")
    (tmp_path / "rank1.log").write_text("torch.OutOfMemoryError: CUDA out of memory.\n")
    ds = diagnose_logs([tmp_path / "rank0.log", tmp_path / "rank1.log", tmp_path / "missing.log"])
    assert [d.label for d in ds] == ["nccl_error", "oom_runtime", "inconclusive"]
    assert ds.label == "oom_runtime"  # OOM outranks the NCCL error it causes on the peer
    assert "missing.log" in ds._repr_html_()


def _cli(argv: list[str]) -> tuple[int, str]:
    ap = argparse.ArgumentParser()
    cli_logs.register(ap.add_subparsers())
    args = ap.parse_args(["diagnose-log", *argv])
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = args.func(args)
    return rc, buf.getvalue()


def test_cli_json_shape(tmp_path: Path) -> None:
    good = tmp_path / "a.log"
    good.write_text(HEALTHY + "ValueError: No available memory for the cache blocks.\n")
    rc, out = _cli([str(good), str(tmp_path / "missing.log"), "--format", "json"])
    data = json.loads(out)
    assert rc == 2 and isinstance(data, list) and len(data) == 2
    assert data[0]["path"] == str(good) and data[0]["label"] == "kv_cache_insufficient"
    f = next(f for f in data[0]["findings"] if f["label"] == "kv_cache_insufficient")
    assert f["line"] == 4 and "cache blocks" in f["text"] and f["advice"]
    assert data[1]["label"] == "inconclusive" and data[1]["status"] == "unreadable" and data[1]["reason"]


def test_cli_text(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_text("RuntimeError: No CUDA GPUs are available\n")
    rc, out = _cli([str(p)])
    assert rc == 0 and "no_gpu_visible" in out and "line       1" in out and "next:" in out


# ------------------------------------------------------------------ dev-corpus accuracy floor
def test_dev_corpus_accuracy_floor() -> None:
    need_path(DEV_CORPUS, "the team's dev corpus (../shared/corpus)")
    rep = evaluate(DEV_CORPUS)
    # measured 0.975 (77/79) at 1,747 excerpts: the excerpts labelled healthy that stop after the
    # engine finished start-up are healthy (likely); oomw-006 has no phase marker; abi-007 and
    # cfg-003 are named by the learned scorer only when its score clears the calibrated threshold
    # (cfg-003 does not at 0.84, at 1,747 and 1,348 excerpts; both do at 0.78, at 1,450). Those
    # are the only misses allowed besides an answer that names no cause: a wrong cause is a regression.
    assert rep["accuracy"] >= 0.96, rep["errors"]
    no_cause = {"inconclusive", "unrecognized_error"}
    allowed = {"oomw-006"} | {e["id"] for e in rep["errors"] if e["predicted"] in no_cause}
    assert {e["id"] for e in rep["errors"]} <= allowed, rep["errors"]
    assert rep["healthy_false_alarms"] == []
    assert rep["failures_called_healthy"] == []
    assert len(rep["special"]) == 3


def test_corrupt_gzip_from_the_start_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00garbage" * 10)
    d = diagnose_log(tmp_path / "bad.gz")
    assert (d.label, d.status, d.compression) == ("inconclusive", STATUS_UNREADABLE, "gzip")
    assert "gzip" in d.reason


def test_figures_count_each_kind_of_miss() -> None:
    # the figures every report and test reads: each pair below is one kind, so a wrong rule moves a count
    pairs = [
        ("nccl_error", "nccl_error"),  # named right
        ("oom_runtime", "oom_weights"),  # named wrong
        ("driver_too_old", "healthy"),  # a failure called healthy
        ("unrecognized_error", "healthy"),  # an unexplained failure called healthy too
        ("inconclusive", "healthy"),  # not a failure: no miss of that kind
        ("healthy", "shm_insufficient"),  # a healthy log called a failure
        ("healthy", "unrecognized_error"),  # ... also when no cause is named
        ("healthy", "inconclusive"),  # not a failure called
        ("no_gpu_visible", "unrecognized_error"),  # a cause not named
    ]
    f = figures(pairs)
    assert f["n"] == 9 and f["accuracy"] == 1 / 9
    assert f["named"] == 3 and f["precision_named"] == 1 / 3
    assert f["failures_with_cause"] == 4 and f["recall_failures"] == 1 / 4
    assert f["failures_called_healthy"] == 2
    assert f["healthy_called_failure"] == 2
