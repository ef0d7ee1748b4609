"""A tiny PNG made in memory with the standard library (no Pillow), sent as a data URL.

Why generated: the image-input step must not depend on a file, a network fetch or an imaging
library on an air-gapped node; a solid-colour square is enough to exercise the server's
multimodal path.
"""

from __future__ import annotations

import base64
import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def make_png(width: int = 32, height: int = 32, rgb: tuple[int, int, int] = (220, 30, 30)) -> bytes:
    """An 8-bit RGB PNG of one colour with a 4-pixel white border (so it is not a flat field)."""
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")  # filter type 0 per scanline
        for x in range(width):
            border = x < 4 or y < 4 or x >= width - 4 or y >= height - 4
            row += bytes((255, 255, 255)) if border else bytes(rgb)
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + _chunk(b"IEND", b"")
    )


def png_data_url(png: bytes | None = None) -> str:
    """The generated PNG as a data URL, so the image step needs no network or file."""
    return "data:image/png;base64," + base64.b64encode(png or make_png()).decode("ascii")
