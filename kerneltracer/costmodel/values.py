"""Reading the JSON signature form (see :mod:`kerneltracer.core.signature`): tensors, their
element counts and sizes in bytes, without torch.

A tensor is ``{"shape": [...], "dtype": "bfloat16", ...}``; a shape may hold a symbolic size
(a string), which has no element count: such values answer None and the caller gives up on
the call rather than guess.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

TAG = "$"

# Bytes per element of every dtype torch names (str(dtype) without "torch."). Sub-byte
# types (int1..int7, uint1..uint7) are stored one per byte; float4_e2m1fn_x2 packs two
# values in one byte and is one element per byte in its shape.
DTYPE_BYTES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1,
    "qint32": 4,
    "qint8": 1,
    "quint8": 1,
    "quint4x2": 1,
    "quint2x4": 1,
    "bits16": 2,
    "bits8": 1,
    "bits1x8": 1,
    "bits2x4": 1,
    "bits4x2": 1,
    **{f"int{n}": 1 for n in range(1, 8)},
    **{f"uint{n}": 1 for n in range(1, 8)},
}


def is_tensor(value: Any) -> bool:
    return isinstance(value, dict) and "shape" in value and "dtype" in value and TAG not in value


def tensors(value: Any) -> Iterator[dict[str, Any]]:
    """Every tensor in a value, depth first (lists of tensors, kwargs dicts)."""
    if is_tensor(value):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from tensors(v)
    elif isinstance(value, dict) and TAG not in value:
        for v in value.values():
            yield from tensors(v)


def shape(t: Any) -> list[int] | None:
    """A tensor's shape as ints; None when it is not a tensor or a size is symbolic."""
    if not is_tensor(t):
        return None
    dims = t["shape"]
    if not isinstance(dims, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        return None
    return dims


def numel(t: Any) -> int | None:
    dims = shape(t)
    return None if dims is None else math.prod(dims)


def nbytes(t: Any) -> int | None:
    """numel x element size; None for a symbolic shape or a dtype this table lacks."""
    n = numel(t)
    size = DTYPE_BYTES.get(str(t.get("dtype"))) if n is not None else None
    return None if n is None or size is None else n * size


def total_bytes(value: Any) -> int | None:
    """Bytes of every tensor in a value; None if any of them has no known size."""
    total = 0
    for t in tensors(value):
        b = nbytes(t)
        if b is None:
            return None
        total += b
    return total


def _is_floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


def compute_dtype(inputs: list[Any], outputs: list[Any] | None) -> str | None:
    """The dtype an op computes in: its first floating input, else its first tensor's."""
    found = [str(t["dtype"]) for t in tensors([inputs, outputs or []])]
    return next((d for d in found if _is_floating(d)), found[0] if found else None)


def broadcast(*shapes: list[int]) -> list[int] | None:
    """The broadcast shape of several shapes; None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return out
