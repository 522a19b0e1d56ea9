"""A minimal PNG reader (8-bit RGB/RGBA/grey, not interlaced): enough to tell a blank
screenshot from a rendered page without pulling in Pillow."""

from __future__ import annotations

import struct
import zlib

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel


def decode(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, rows of raw samples)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or interlace or colour not in _CHANNELS:
        raise ValueError(f"unsupported PNG: depth {depth}, colour {colour}, interlace {interlace}")
    channels = _CHANNELS[colour]
    return (
        width,
        height,
        channels,
        _unfilter(zlib.decompress(idat), width * channels, channels, height),
    )


def _unfilter(raw: bytes, stride: int, bpp: int, height: int) -> list[bytes]:
    rows: list[bytes] = []
    prev = bytearray(stride)
    pos = 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1 : pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            corner = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return rows


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def pixel_stats(data: bytes) -> tuple[int, float]:
    """(distinct colours, variance of the luminance) over the whole image."""
    width, _, channels, rows = decode(data)
    colours: set[bytes] = set()
    total = total_sq = count = 0
    for row in rows:
        for x in range(0, width * channels, channels):
            px = row[x : x + channels]
            colours.add(px)
            lum = px[0] if channels < 3 else (299 * px[0] + 587 * px[1] + 114 * px[2]) // 1000
            total += lum
            total_sq += lum * lum
            count += 1
    mean = total / count
    return len(colours), total_sq / count - mean * mean
