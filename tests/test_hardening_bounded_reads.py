"""Issue 8 follow-up: user-handed files elsewhere are read with a bound, and ASCII-only numbers.

requests JSONL (prefix-cache mismatch), tool schema files and nccl-tests output: a huge file, an
endless line, JSON nested too deep and non-UTF-8 bytes each give a clear note, never a crash or
the whole file in memory; full-width digits in a log are no "found version".
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from vllm_runbooks import bounded
from vllm_runbooks.canary import nccl, toolcheck
from vllm_runbooks.compat.inputs import CompatInputs
from vllm_runbooks.compat.side_checks import log_checks
from vllm_runbooks.prefix_cache import mismatch

BODY = {"messages": [{"role": "user", "content": "hello"}]}


def _peak_mib(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_requests_jsonl_endless_line_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mismatch, "REQUEST_MAX_LINE_BYTES", 64 * 1024)
    monkeypatch.setattr(mismatch, "REQUESTS_MAX_BYTES", 4 * 1024 * 1024)
    path = tmp_path / "req.jsonl"
    with path.open("wb") as f:
        f.write((json.dumps(BODY) + "\n").encode())
        f.write(b"x" * (16 * 1024 * 1024))  # one 16 MiB line, no newline
    (bodies, notes), peak = _peak_mib(lambda: mismatch.load_requests(path))
    assert len(bodies) == 1
    assert any("line 2: longer than" in n for n in notes), notes
    assert any("larger than" in n for n in notes), notes
    assert peak < 8, f"{peak:.1f} MiB held for a 16 MiB line"


def test_requests_jsonl_deep_and_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "req.jsonl"
    path.write_bytes(b"[" * 200_000 + b"\n" + json.dumps(BODY).encode() + b"\n\xff\xfe not json\n")
    bodies, notes = mismatch.load_requests(path)
    assert len(bodies) == 1
    assert any("line 1" in n and "nested too deeply" in n for n in notes), notes
    assert any("not UTF-8" in n for n in notes), notes


def test_tool_schema_file_bounded_deep_and_non_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        toolcheck.load_tool_suite(deep)
    monkeypatch.setattr(toolcheck, "TOOL_SCHEMA_MAX_BYTES", 1024)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"tools": [{"type": "function", "function": {"name": "f" * 4096}}]}))
    with pytest.raises(ValueError, match="larger than 1024 bytes"):
        toolcheck.load_tool_suite(big)
    monkeypatch.setattr(toolcheck, "TOOL_SCHEMA_MAX_BYTES", 1 << 20)
    odd = tmp_path / "odd.json"
    odd.write_bytes(b'{"tools": [{"type": "function", "function": {"name": "get_\xff"}}]}')
    suite = toolcheck.load_tool_suite(odd)
    assert suite.tools[0]["function"]["name"] == "get_\ufffd"


NCCL_OK = """# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid   1 on node1 device  0 [0x01] NVIDIA H100
        8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.5
"""


def test_nccl_tests_file_cut_and_non_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nccl, "NCCL_TESTS_MAX_BYTES", 4096)
    path = tmp_path / "nccl.txt"
    path.write_bytes(NCCL_OK.encode() + b"\xff" + b"# filler\n" * 10_000)
    res = nccl.load_nccl_tests(path)
    assert len(res.rows) == 1
    assert res.errors and "larger than 4096 bytes" in res.errors[0]
    assert any("not UTF-8" in n for n in res.notes)
    assert res.problems()  # a cut file never passes


def test_nccl_full_width_digits_are_no_row() -> None:
    wide = NCCL_OK.replace("        8             2", "        ８             ２")
    wide = wide.replace("values : 0 OK", "values : ０ OK")
    res = nccl.parse_nccl_tests(wide)
    assert res.rows == []
    assert res.out_of_bounds is None


def test_found_version_ascii_only() -> None:
    inputs = CompatInputs(image_cuda_version="13.0", driver_version="575.57.08")
    finding = {"label": "driver_too_old", "text": "found version １２０９０", "line": 3}
    checks = log_checks([finding], "driver_too_old", inputs, (13, 0), None)
    assert checks and "libcuda offers" not in checks[0].why
    ascii_ = log_checks([{**finding, "text": "found version 12090"}], "driver_too_old", inputs, (13, 0), None)
    assert "libcuda offers CUDA 12.9" in ascii_[0].why


def test_bounded_iter_lines_counts_and_cuts(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"a\n" + b"b" * 100 + b"\nc\n")
    notes: list[str] = []
    lines = list(bounded.iter_lines(path, max_bytes=1000, max_line_bytes=10, notes=notes))
    assert [(ln.number, ln.text, ln.skipped_bytes > 0) for ln in lines] == [
        (1, "a", False),
        (2, "b" * 10, True),
        (3, "c", False),
    ]
    assert notes == ["line 2: longer than 10 bytes, cut"]


# -- the same class elsewhere: records read back, bundle JSON, parsers, artefact writes -----------------
DEEP = "[" * 200_000


def test_hand_made_evidence_and_run_records_nested_deep(tmp_path: Path) -> None:
    from vllm_runbooks.evidence.model import Evidence
    from vllm_runbooks.execution import runjson, runs

    (tmp_path / "evidence.json").write_text(DEEP)
    with pytest.raises(runjson.ArtefactError, match="nested too deeply"):
        Evidence.load(tmp_path / "evidence.json")
    run = tmp_path / "run"
    run.mkdir()
    (run / "decision.json").write_text(DEEP)
    with pytest.raises(runjson.ArtefactError, match="nested too deeply"):
        runjson.read_artefact_json(run, "decision.json")
    (run / "run.json").write_text(DEEP)
    with pytest.raises(runjson.ArtefactError, match="run manifest unreadable"):
        runjson.verify_artefact(run, run / "decision.json")
    assert "run.json" in runs.load_results(run).refused


def test_bundle_json_nested_deep_is_a_clear_finding(tmp_path: Path) -> None:
    import shutil

    from vllm_runbooks.evidence import collect_evidence

    bundle = tmp_path / "bundle"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "incidents" / "k3-cu130-on-r575", bundle)
    (bundle / "docker-info.json").write_text(DEEP)
    ev = collect_evidence(str(bundle), run_dir=tmp_path / "run", only=["container_runtime"])
    item = ev.items["container_runtime"]
    assert "nested too deeply" in (item.reason or ""), item.reason
    assert "RecursionError" not in (item.reason or "")


def test_parsers_take_ascii_digits_only() -> None:
    from vllm_runbooks.evidence import parsers as P

    assert P.parse_meminfo("MemTotal:       １２３４ kB\n") is None
    assert P.parse_df_bytes("Filesystem 1K-blocks Used\nshm ²³ 0\n") is None  # '²'.isdigit() is True
    assert P.driver_branch("５７５.５７.０８") is None
    assert P.parse_meminfo("MemTotal:       1234 kB\n") == 1234 * 1024


def test_context_keep_leaves_no_half_artefact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_runbooks.evidence import registry

    ctx = registry.Context(source=None, opts=None, out_dir=tmp_path)  # type: ignore[arg-type]

    real_open = Path.open

    class HalfThenDie:
        """A file that takes half of what it is given, then fails like a full disk."""

        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> HalfThenDie:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: bytes) -> int:
            self.handle.write(data[: len(data) // 2])
            self.handle.flush()
            raise OSError("disk full")

    monkeypatch.setattr(Path, "open", lambda self, *a, **k: HalfThenDie(real_open(self, *a, **k)))
    with pytest.raises(OSError):
        ctx.keep("nvidia-smi.txt", b"x" * 1000)
    assert list((tmp_path / "raw").iterdir()) == []


def test_probe_bundle_two_logs_of_one_name_and_no_temporaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_runbooks import probe

    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "vllm.log").write_text(f"log {d}\n")
    monkeypatch.setattr(probe, "BUNDLE_FILES", ("uname.txt",))
    opts = probe.Options(log_paths=[str(tmp_path / "a" / "vllm.log"), str(tmp_path / "b" / "vllm.log")])
    meta = probe.write_bundle(tmp_path / "out", opts)
    assert sorted(meta["logs"]) == ["vllm-2.log", "vllm.log"]
    assert (tmp_path / "out" / "logs" / "vllm.log").read_text() == "log a\n"
    assert (tmp_path / "out" / "logs" / "vllm-2.log").read_text() == "log b\n"
    names = [p.name for p in (tmp_path / "out").rglob("*")]
    assert not [n for n in names if n.endswith(".tmp")], names
