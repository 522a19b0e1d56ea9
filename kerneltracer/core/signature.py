"""The op-signature value format: one call's inputs, kwargs and outputs as JSON, and its id.

torch_dispatch writes it, the corpus aggregates it, the replay worker decodes it back into
tensors and the cost model reads it, on both sides of the process boundary:

- a tensor is a dict with ``shape``, ``dtype``, ``device``, optional ``stride`` and, for
  integer tensors, the ``min`` / ``max`` value seen (merged over calls and models), for
  bool tensors the count of ``true`` values of the call whose outputs are recorded;
- a scalar JSON has no type for is tagged: ``{"$": "dtype"|"device"|"layout"|
  "memory_format"|"float"|"opaque", "v": text}``;
- sequences are lists; ints, floats, bools, strings and null are themselves.

A signature's identity leaves the integer ranges and true counts out: the same call with
other index values is the same signature, and its range grows to cover both (its true
count stays the first one's).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

RANGE_KEYS = ("min", "max", "true")
TAG = "$"


def is_tensor(value: Any) -> bool:
    return isinstance(value, dict) and "shape" in value and "dtype" in value and TAG not in value


def strip_ranges(value: Any) -> Any:
    """The value without integer ranges: what a signature's identity is made of."""
    if is_tensor(value):
        return {k: v for k, v in value.items() if k not in RANGE_KEYS}
    if isinstance(value, list):
        return [strip_ranges(v) for v in value]
    if isinstance(value, dict):
        return {k: strip_ranges(v) for k, v in value.items()}
    return value


def merge_ranges(into: Any, other: Any) -> Any:
    """``into`` with every integer tensor's range widened to cover ``other``'s (same shape)."""
    if is_tensor(into) and is_tensor(other):
        if "min" not in other:
            return into  # a bool tensor's true count too: into's outputs are the ones kept
        if "min" not in into:
            return {**into, "min": other["min"], "max": other["max"]}
        return {
            **into,
            "min": min(into["min"], other["min"]),
            "max": max(into["max"], other["max"]),
        }
    if isinstance(into, list) and isinstance(other, list) and len(into) == len(other):
        return [merge_ranges(a, b) for a, b in zip(into, other, strict=True)]
    if isinstance(into, dict) and isinstance(other, dict) and TAG not in into:
        return {k: merge_ranges(v, other.get(k)) for k, v in into.items()}
    return into


def signature_key(op: str, inputs: list[Any], kwargs: dict[str, Any], ranges: bool = True) -> bytes:
    """Canonical bytes of a signature; ``ranges=False`` when the values have none to strip."""
    if ranges:
        inputs = strip_ranges(inputs)
        # kwargs go key by key: a kwargs dict is never itself a tensor, whatever its keys
        kwargs = {k: strip_ranges(v) for k, v in kwargs.items()}
    return orjson.dumps([op, inputs, kwargs], option=orjson.OPT_SORT_KEYS)


def id_of_key(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


def signature_id(op: str, inputs: list[Any], kwargs: dict[str, Any]) -> str:
    return id_of_key(signature_key(op, inputs, kwargs))


def merge_kwargs(into: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    return {k: merge_ranges(v, other.get(k)) for k, v in into.items()}
