"""One bounded reader for every log source: plain, gzip, bzip2, xz and zstd files, bytes, streams.

Why one reader: the classifier and the evidence collector must agree on what "the log" is and
must both survive hostile input (a zip bomb, ``/dev/zero``, a 7 GB stdin, a single 2 GB line).
Every source is read in blocks with two caps: total (decompressed) bytes and bytes per line. A
line longer than the cap is cut into pieces (the line number stays the same); nothing ever holds
a whole member or a whole line in memory. Sources that are not regular uncompressed files
(pipes, devices, stdin, compressed members) get a default byte cap even when the caller gives
none, and a block that is mostly NUL bytes with no line break stops the read as binary data.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..compression import HEAD_BYTES, CompressionUnavailable, compression_of, decompressing

#: Bytes read from the source per block.
CHUNK_BYTES = 8 << 20
#: A line longer than this is cut (counted in ``long_lines``); the rest is read as pieces.
MAX_LINE_BYTES = 4 << 20
#: Byte cap used when the caller gives none and the size is not known in advance (stdin, pipes,
#: devices, compressed members): bounds time and guards against decompression bombs.
DEFAULT_STREAM_MAX_BYTES = 4 << 30


def _looks_binary(head: bytes) -> bool:
    """NUL bytes in more than 1 of 1000 bytes at the start: /dev/zero, /dev/urandom, an image."""
    return len(head) >= 4096 and head.count(b"\x00") * 1000 > len(head)


class LogUnreadable(Exception):
    """The source cannot be opened at all (missing, a directory, permission denied, ...)."""


@dataclass
class ReadStats:
    """What the reader did: bytes, caps hit, damage seen. Filled while reading."""

    name: str = "<text>"
    compression: str | None = None
    file_bytes: int | None = None
    bytes_read: int = 0
    truncated: bool = False
    long_lines: int = 0
    binary_stop: bool = False
    cap: int | None = None
    unread: list[str] = field(default_factory=list)


def _is_text_source(source: Any) -> bool:
    """A str is log text (not a path) when it has a newline or is too long to be a path."""
    return isinstance(source, str) and ("\n" in source or len(source) > 4096)


def _open_raw(source: Any, stats: ReadStats) -> tuple[IO[bytes], bool]:
    """(binary stream with ``peek``, size known in advance)."""
    if _is_text_source(source):
        source = str(source).encode("utf-8", "surrogateescape")
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        stats.name, stats.file_bytes = "<text>", len(data)
        return io.BufferedReader(io.BytesIO(data)), True  # type: ignore[arg-type]
    if hasattr(source, "read"):
        stats.name = str(getattr(source, "name", "<stream>"))
        stream = source if hasattr(source, "peek") else io.BufferedReader(source)
        return stream, False
    path = Path(os.fspath(source))
    stats.name = str(path)
    try:
        if path.is_dir():
            raise LogUnreadable("is a directory")
        raw = open(path, "rb")  # noqa: SIM115 - closed by LogReader
        st = os.fstat(raw.fileno())
    except LogUnreadable:
        raise
    except FileNotFoundError:
        raise LogUnreadable("no such file") from None
    except PermissionError:
        raise LogUnreadable("permission denied") from None
    except OSError as exc:
        raise LogUnreadable(f"cannot open: {exc.strerror or exc}") from None
    regular = stat.S_ISREG(st.st_mode)
    stats.file_bytes = st.st_size if regular else None
    return raw, regular


class LogReader:
    """An opened, capped log source; iterate :meth:`blocks` (or :meth:`lines`) once.

    ``max_bytes`` caps the (decompressed) bytes read; ``None`` means "whole file" for a regular
    uncompressed file and :data:`DEFAULT_STREAM_MAX_BYTES` for anything else.
    """

    def __init__(self, source: Any, *, max_bytes: int | None = None, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.stats = ReadStats()
        raw, sized = _open_raw(source, self.stats)
        self._owns = not hasattr(source, "read")
        try:
            kind = compression_of(raw.peek(HEAD_BYTES)[:HEAD_BYTES])  # type: ignore[attr-defined]
        except (OSError, ValueError) as exc:
            self._close(raw)
            raise LogUnreadable(f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        self.stats.compression = kind
        self._raw = raw
        try:
            self._stream = decompressing(raw) if kind else raw
        except CompressionUnavailable as exc:
            self._close(raw)
            raise LogUnreadable(str(exc)) from None
        if max_bytes is None and (kind is not None or not sized):
            max_bytes = DEFAULT_STREAM_MAX_BYTES
        self.stats.cap = max_bytes
        self.max_line_bytes = max(1, int(max_line_bytes))
        self._buf: bytearray | None = None

    def _close(self, raw: IO[bytes]) -> None:
        if self._owns:
            raw.close()

    def close(self) -> None:
        """Close what this reader opened (a caller's stream is left open)."""
        if self._stream is not self._raw:
            try:
                self._stream.close()
            except Exception:  # noqa: BLE001 - closing a damaged archive must not raise
                pass
        self._close(self._raw)

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, want: int) -> tuple[bytes | bytearray, BaseException | None]:
        """Up to ``want`` bytes, and the error that stopped reading (data before it is kept).

        Plain sources are read into one reused buffer (``readinto``): no new 8 MiB object and
        its page faults per block. The buffer is only valid until the next call.
        """
        if self.stats.compression is None:
            readinto = getattr(self._stream, "readinto", None)
            try:
                if readinto is None:
                    return self._stream.read(want), None
                if self._buf is None or len(self._buf) < want:
                    self._buf = bytearray(want)
                view = memoryview(self._buf)
                got = 0
                while got < want:  # a pipe returns short reads: fill the block
                    n = readinto(view[got:want])
                    if not n:
                        break
                    got += n
                view.release()
                return (self._buf if got == len(self._buf) else self._buf[:got]), None
            except (OSError, ValueError) as exc:
                return b"", exc
        parts: list[bytes] = []
        got = 0
        read1 = getattr(self._stream, "read1", None) or self._stream.read
        while got < want:
            try:
                piece = read1(want - got)
            except Exception as exc:  # noqa: BLE001 - EOFError, OSError, zlib/lzma errors, a cut zstd frame
                return b"".join(parts), exc
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
        return b"".join(parts), None

    def blocks(
        self, chunk: int = CHUNK_BYTES, *, count_lines: bool = True
    ) -> Iterator[tuple[bytes, int, int, int, bool]]:
        """Yield ``(buf, start, end, first_line_no, continues)``: ``buf[start:end]`` is whole lines.

        The span ends with a newline except for the last one of the source and for pieces of an
        over-long line (``continues`` is True when the next span continues the same line). Large
        blocks are yielded in place (no copy): only the line that straddles two reads is joined.
        With ``count_lines=False`` the line number is always 1 (a caller that counts newlines
        itself saves a pass over the data).
        """
        st = self.stats
        cap = st.cap
        carry = b""
        line_no = 1
        in_long = False
        while True:
            want = chunk
            if cap is not None:
                if st.bytes_read >= cap:
                    st.truncated = True
                    break
                want = min(want, cap - st.bytes_read)
            data, err = self._read(want)
            if err is not None:
                st.unread.append(
                    f"{st.compression or 'file'} stream unreadable after {st.bytes_read + len(data):,} bytes: {err}"
                )
            if not data:
                break
            first_block = st.bytes_read == 0
            st.bytes_read += len(data)
            if first_block and _looks_binary(data[: 1 << 20]):
                st.binary_stop = True
                st.unread.append(f"binary data, not a text log: stopped after {st.bytes_read:,} bytes")
                break
            first = data.find(b"\n")
            if first < 0:
                if len(data) >= 4096 and data.count(b"\x00") * 2 > len(data) and not carry.strip(b"\x00"):
                    st.binary_stop = True
                    st.unread.append(f"binary data (NUL bytes, no line breaks): stopped after {st.bytes_read:,} bytes")
                    carry = b""
                    break
                carry += bytes(data)
                if len(carry) >= self.max_line_bytes:
                    if not in_long:
                        st.long_lines += 1
                        in_long = True
                    yield carry, 0, len(carry), line_no, True
                    carry = b""
                if err is not None:
                    break
                continue
            last = data.rfind(b"\n")
            start = 0
            if carry:
                head = carry + bytes(data[: first + 1])
                yield head, 0, len(head), line_no, False
                line_no += 1
                start = first + 1
            in_long = False
            if last + 1 > start:
                yield data, start, last + 1, line_no, False
                if count_lines:
                    line_no += data.count(b"\n", start, last + 1)
            carry = bytes(data[last + 1 :])
            if len(carry) >= self.max_line_bytes:
                st.long_lines += 1
                in_long = True
                yield carry, 0, len(carry), line_no, True
                carry = b""
            if err is not None:
                break
        if carry:
            yield carry, 0, len(carry), line_no, False

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """Yield ``(line_no, line_bytes)`` without newlines, each at most ``max_line_bytes`` long.

        The rest of a cut line is skipped; ``stats`` says what was cut, capped or damaged.
        """
        for number, line, _skipped in self.cut_lines():
            yield number, line

    def cut_lines(self, chunk: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes, int]]:
        """Yield ``(line_no, line_bytes, skipped)``: :meth:`lines` with the bytes cut off each line.

        The one line splitter (``bounded.iter_lines`` decodes it for user-handed files): a reader
        that reports each cut line needs ``skipped`` (0: the line is whole). A cut line is yielded
        once its end is found (or the read ends), with at most ``max_line_bytes`` of it held.
        """
        cap = self.max_line_bytes
        head: tuple[int, bytes] | None = None  # a cut line whose rest is being skipped
        skipped = 0
        for buf, start, end, first, continues in self.blocks(chunk):
            if continues:
                if head is None:
                    head, skipped = (first, bytes(buf[start : start + cap])), end - start - cap
                else:
                    skipped += end - start
                continue
            data = buf[start:end]
            lines = data.split(b"\n")
            if data.endswith(b"\n"):
                lines.pop()
            for k, line in enumerate(lines):
                if head is not None and k == 0:
                    yield head[0], head[1], skipped + len(line)
                    head = None
                    continue
                yield first + k, line[:cap].rstrip(b"\r"), max(0, len(line) - cap)
        if head is not None:
            yield head[0], head[1], skipped


def open_log(source: Any, *, max_bytes: int | None = None, max_line_bytes: int = MAX_LINE_BYTES) -> LogReader:
    """Open a log (path, bytes, log text, or binary stream such as ``sys.stdin.buffer``) for reading.

    Raises :class:`LogUnreadable` when it cannot be opened; damage found while reading is recorded
    in ``reader.stats.unread`` instead.
    """
    return LogReader(source, max_bytes=max_bytes, max_line_bytes=max_line_bytes)
