"""``vllm_runbooks.bounded``: the one bounded JSON reader and the one line reader (issue 22 item 3).

One JSON reader for run.json, saved records and imported results (bytes and nesting bounded, a
file over its bound refused by its size before a byte is read); one line splitter, the log
reader's, which ``bounded.iter_lines`` decodes for user-handed files.
"""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from vllm_runbooks import bounded
from vllm_runbooks.logs.reader import LogReader


def test_a_file_over_the_bound_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    tracemalloc.start()
    try:
        with pytest.raises(bounded.TooLarge) as caught:
            bounded.load_json(big, 64 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.size == 1 << 30 and caught.value.max_bytes == 64 << 20
    assert "larger than 67108864 bytes" in str(caught.value)
    assert peak < 1 << 20, f"{peak} bytes held to refuse a file by its size"


def test_json_nested_too_deep_non_utf8_and_cut_short(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        bounded.load_json(deep, 1 << 20)
    odd = tmp_path / "odd.json"
    odd.write_bytes(b'{"name": "get_\xff"}')
    value, notes = bounded.load_json(odd, 1 << 20)
    assert value == {"name": "get_\ufffd"} and notes and "not UTF-8" in notes[0]
    with pytest.raises(ValueError, match="not UTF-8"):
        bounded.load_json(odd, 1 << 20, utf8_only=True)
    short = tmp_path / "short.json"
    short.write_text('{"a": [1, 2')
    with pytest.raises(ValueError):
        bounded.load_json(short, 1 << 20)


TRICKY = b"first\r\n\n" + b"L" * 3000 + b"\nlast without newline"


def test_iter_lines_is_the_log_readers_split_decoded(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(TRICKY)
    notes: list[str] = []
    lines = list(bounded.iter_lines(path, max_bytes=1 << 20, max_line_bytes=1024, notes=notes))
    with LogReader(path, max_line_bytes=1024) as reader:
        split = list(reader.lines())
    assert [(ln.number, ln.text.encode()) for ln in lines] == split
    assert [(ln.number, ln.skipped_bytes) for ln in lines] == [(1, 0), (2, 0), (3, 3000 - 1024), (4, 0)]
    assert notes == ["line 3: longer than 1024 bytes, cut"]


def test_a_line_longer_than_the_cap_inside_one_block_is_reported_cut() -> None:
    """Before, ``lines()`` cut such a line silently (``line[:cap]``): nobody could say it was cut."""
    with LogReader(TRICKY, max_line_bytes=1024) as reader:
        got = [(n, len(line), skipped) for n, line, skipped in reader.cut_lines()]
    assert got == [(1, 5, 0), (2, 0, 0), (3, 1024, 3000 - 1024), (4, len(b"last without newline"), 0)]


def test_iter_lines_reads_a_compressed_file_and_says_when_it_stopped(tmp_path: Path) -> None:
    packed = tmp_path / "requests.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"a": 1}\n{"b": 2}\n' * 10))
    lines = list(bounded.iter_lines(packed, max_bytes=1 << 20))
    assert [ln.text for ln in lines[:2]] == ['{"a": 1}', '{"b": 2}'] and len(lines) == 20
    notes: list[str] = []
    cut = list(bounded.iter_lines(packed, max_bytes=20, notes=notes))  # 20 decompressed bytes at most
    assert [ln.text for ln in cut] == ['{"a": 1}', '{"b": 2}', '{"']  # the last line cut by the bound
    assert notes == [f"{packed} is larger than 20 bytes: the rest was not read"]


def test_a_file_of_exactly_the_bound_is_not_called_cut(tmp_path: Path) -> None:
    path = tmp_path / "exact.txt"
    path.write_bytes(b"a\nb\n")
    notes: list[str] = []
    assert [ln.text for ln in bounded.iter_lines(path, max_bytes=4, notes=notes)] == ["a", "b"]
    assert notes == []
    path.write_bytes(b"a\nb\nc\n")
    assert [ln.text for ln in bounded.iter_lines(path, max_bytes=4, notes=notes)] == ["a", "b"]
    assert notes == [f"{path} is larger than 4 bytes: the rest was not read"]


def test_a_missing_file_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="no such file"):
        list(bounded.iter_lines(tmp_path / "nope.txt", max_bytes=10))
