"""The protocol buffers wire format, the few parts a Chakra trace needs, written by hand.

Encoding a message is a few lines (varints, length-delimited fields, fixed 64-bit doubles;
https://protobuf.dev/programming-guides/encoding/), so the export needs no protobuf runtime
and no code generated from another project's schema: the Chakra field numbers it writes are
in :mod:`.chakra`. Repeated scalars are packed, as proto3 writes them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

_VARINT = 0
_I64 = 1
_LEN = 2
_UINT64 = 1 << 64


def varint(value: int) -> bytes:
    """``value`` as a base-128 varint; a negative int64 as its 10-byte two's complement."""
    if value < 0:
        value += _UINT64
    if not 0 <= value < _UINT64:
        raise ValueError(f"{value} does not fit 64 bits")
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def tag(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def uint(field: int, value: int) -> bytes:
    """A varint field (uint64, int64, bool, enum)."""
    return tag(field, _VARINT) + varint(int(value))


def blob(field: int, data: bytes) -> bytes:
    """A length-delimited field: bytes, a string's UTF-8, or an embedded message."""
    return tag(field, _LEN) + varint(len(data)) + data


def text(field: int, value: str) -> bytes:
    return blob(field, value.encode())


def double(field: int, value: float) -> bytes:
    return tag(field, _I64) + struct.pack("<d", value)


def packed(field: int, values: Iterable[int]) -> bytes:
    """A packed repeated varint field; nothing when empty (proto3 writes no empty list)."""
    data = b"".join(varint(v) for v in values)
    return blob(field, data) if data else b""


def delimited(message: bytes) -> bytes:
    """One message as a stream of them stores it: its length as a varint, then the message."""
    return varint(len(message)) + message
