"""The one table of compressed-log formats and the one opener that undoes them.

Why one module: the diagnose-log reader and the node probe must agree on what a compressed log
is (by magic bytes, never by name: a ``.log`` may be gzip and a ``.gz`` may be plain) and must
both say when a zstd stream ends short. It is standard-library only (``zstandard`` is imported
lazily and is optional) and imports nothing heavy at module load, because ``probe
--write-script`` inlines it into a single-file script for bare nodes and diagnose-log's start-up
time is budgeted.
"""

from __future__ import annotations

import io
import re
from typing import Any

#: Bytes of a stream's start that decide its format (a zstd frame header is at most 18 bytes).
HEAD_BYTES = 18
#: bzip2 is matched with its block magic, so a text log that starts with "BZh" is not one.
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


class CompressionUnavailable(OSError):
    """The log is compressed in a format this Python cannot read (zstd without ``zstandard``)."""


def compression_of(head: bytes) -> str | None:
    """The compression a stream starts with: gzip, bzip2, xz, zstd, or None for plain bytes.

    ``head`` should hold the first :data:`HEAD_BYTES` bytes (fewer only at the end of a stream).
    """
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return "bzip2" if _BZIP2.match(head) else None


def head_of(f: Any) -> bytes:
    """The first bytes of ``f`` without consuming them (``peek``, or read and seek back)."""
    head = f.peek(HEAD_BYTES)[:HEAD_BYTES] if hasattr(f, "peek") else b""
    if not head and f.seekable():
        head = f.read(HEAD_BYTES)
        f.seek(0)
    return bytes(head)


def decompressing(f: Any) -> Any:
    """``f`` itself when it is plain, else a decompressing reader over it (with ``readline``).

    gzip, bzip2 and xz come from the standard library. zstd needs the ``zstandard`` package:
    where it is missing (a bare node) :class:`CompressionUnavailable` is raised rather than
    handing back compressed bytes that look like a log; ``f`` is left open for the caller. A
    damaged or cut zstd stream raises EOFError when it ends short (see :class:`_CheckedEnd`).
    """
    head = head_of(f)
    kind = compression_of(head)
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=f, mode="rb")
    if kind == "bzip2":
        import bz2

        return bz2.BZ2File(f)
    if kind == "xz":
        import lzma

        return lzma.LZMAFile(f)
    if kind == "zstd":
        try:
            import zstandard  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise CompressionUnavailable(
                "zstd-compressed log: the zstandard package is not installed here (decompress it with zstd -d first)"
            ) from None
        try:
            expected = zstandard.frame_content_size(head)  # -1 when the frame does not say
        except zstandard.ZstdError:
            expected = -1
        reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
        return io.BufferedReader(_CheckedEnd(reader, expected, zstandard.ZstdError))
    return f


class _CheckedEnd(io.RawIOBase):
    """A zstd reader that says when its stream ends short (zstandard reads a cut frame as a clean end)."""

    def __init__(self, inner: Any, expected: int, error: type[Exception]) -> None:
        super().__init__()
        self.inner, self.expected, self.seen, self.error = inner, expected, 0, error

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        try:
            n = self.inner.readinto(buf)
        except self.error as e:
            raise OSError(f"zstd stream damaged after {self.seen} bytes: {e}") from None
        self.seen += n
        if n == 0 and (self.seen == 0 or (self.expected >= 0 and self.seen < self.expected)):
            raise EOFError(f"zstd stream ends after {self.seen} bytes (damaged or cut short)")
        return n

    def close(self) -> None:
        self.inner.close()
        super().close()
