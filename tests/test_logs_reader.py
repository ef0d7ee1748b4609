"""The one bounded log reader: every compression, byte and line caps, streams, hostile input."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from vllm_runbooks.logs import diagnose_log, open_log
from vllm_runbooks.logs.reader import DEFAULT_STREAM_MAX_BYTES, LogUnreadable

ROOT = Path(__file__).resolve().parents[1]
LOG = (
    b"INFO 01-01 00:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
)
COMPRESSORS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_every_compression_is_read_and_classified(tmp_path: Path, kind: str) -> None:
    p = tmp_path / f"log.{kind}"
    p.write_bytes(COMPRESSORS[kind](LOG * 3))
    d = diagnose_log(p)
    assert (d.compression, d.label, d.lines_scanned) == (kind, "arch_unsupported", 6)
    with open_log(p) as r:
        assert [n for n, _ in r.lines()] == [1, 2, 3, 4, 5, 6]


def test_compressed_sources_are_capped_by_default(tmp_path: Path) -> None:
    """A decompression bomb cannot run unbounded: compressed members get the stream cap."""
    p = tmp_path / "bomb.gz"
    p.write_bytes(gzip.compress(b"x" * 1000 + b"\n"))
    with open_log(p) as r:
        assert r.stats.cap == DEFAULT_STREAM_MAX_BYTES
    with open_log(p, max_bytes=100) as r:
        list(r.blocks())
        assert r.stats.truncated and r.stats.bytes_read == 100


def test_truncated_zstd_keeps_what_was_read(tmp_path: Path) -> None:
    varied = b"".join(b"INFO %d request %x served\n" % (i, i * 2654435761 % 2**32) for i in range(100_000))
    data = zstandard.ZstdCompressor().compress(LOG + varied)
    p = tmp_path / "cut.zst"
    p.write_bytes(data[: len(data) // 2])
    d = diagnose_log(p)
    assert d.status == "ok" and d.label == "arch_unsupported"
    assert any("unreadable after" in u for u in d.unread)


def test_zstd_cut_inside_its_frame_is_said_once() -> None:
    """The shared zstd end check (compression.py): a frame that ends short is one unread note, not two."""
    data = zstandard.ZstdCompressor().compress(LOG * 50)  # the frame header records the content size
    with open_log(data[:-6]) as r:
        list(r.blocks())
        assert r.stats.compression == "zstd"
        assert len(r.stats.unread) == 1 and "zstd stream ends after" in r.stats.unread[0], r.stats.unread
    with open_log(b"\x28\xb5\x2f\xfd" + b"\0" * 32) as r:
        assert list(r.blocks()) == [] and "zstd stream" in r.stats.unread[0]


def test_long_lines_are_cut_and_line_numbers_stay_right() -> None:
    body = b"y" * (3 << 20) + b"\n" + b"ok\n" + b"RuntimeError: No CUDA GPUs are available\n"
    with open_log(io.BytesIO(body), max_line_bytes=1 << 20) as r:
        lines = list(r.lines())
    assert [n for n, _ in lines] == [1, 2, 3] and len(lines[0][1]) == 1 << 20
    with open_log(body, max_line_bytes=1 << 20) as r:
        spans = list(r.blocks(chunk=1 << 20))
        assert r.stats.long_lines == 1
        assert max(end - start for _, start, end, _, _ in spans) <= 2 << 20


def test_stream_source_honours_max_bytes() -> None:
    stream = io.BufferedReader(io.BytesIO(b"INFO fine\n" * 100_000))  # 1 MB
    d = diagnose_log(stream, max_bytes=50_000)
    assert d.truncated and d.bytes_scanned == 50_000 and d.label == "inconclusive"


def test_binary_input_stops_early() -> None:
    d = diagnose_log(bytes(range(256)) * 40_000)
    assert d.status == "unreadable" and d.bytes_scanned <= 8 << 20
    assert d.label == "inconclusive" and d.would_decide


def test_unreadable_sources_raise_only_inside_the_reader(tmp_path: Path) -> None:
    with pytest.raises(LogUnreadable):
        open_log(tmp_path / "missing.log")
    with pytest.raises(LogUnreadable):
        open_log(tmp_path)
    d = diagnose_log(tmp_path / "missing.log")
    assert (d.label, d.status, d.confidence) == ("inconclusive", "unreadable", "inconclusive")


def _cli(args: list[str], stdin: object = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    return subprocess.run(
        [sys.executable, "-m", "vllm_runbooks.cli", "diagnose-log", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_cli_dev_zero_terminates_with_bounded_memory() -> None:
    """``diagnose-log /dev/zero`` and ``diagnose-log - < /dev/zero`` stop (binary, not a log)."""
    r = _cli(["--format", "json", "/dev/zero"])
    assert r.returncode == 2 and '"status": "unreadable"' in r.stdout
    with open("/dev/zero", "rb") as zero:
        r = _cli(["--format", "json", "--max-bytes", "1000000", "-"], stdin=zero)
    assert r.returncode == 2 and '"bytes_scanned": ' in r.stdout


def test_cli_stdin_is_streamed_under_max_bytes() -> None:
    """A text stream larger than --max-bytes is read only up to the cap (not slurped)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('INFO fine\\n' * 10000)"],
        stdout=subprocess.PIPE,
    )
    try:
        r = _cli(["--format", "json", "--max-bytes", "2000000", "-"], stdin=proc.stdout)
    finally:
        proc.kill()
        proc.wait()
    assert r.returncode == 0, r.stderr
    assert '"truncated": true' in r.stdout and '"bytes_scanned": 2000000' in r.stdout
