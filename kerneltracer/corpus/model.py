"""The corpus data model: unique op call signatures with who calls them, and how often.

Values (inputs, kwargs, outputs) keep the JSON form torch_dispatch writes:

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
from dataclasses import dataclass, field
from typing import Any

import orjson

RANGE_KEYS = ("min", "max", "true")
TAG = "$"
PHASES = ("forward", "backward")


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


@dataclass
class Signature:
    """One unique (op, inputs, kwargs) call, aggregated over models and phases."""

    sig_id: str
    op: str
    inputs: list[Any]
    kwargs: dict[str, Any]
    outputs: list[Any] | None  # None: not recorded (an operator_inp log)
    phase_calls: dict[str, int] = field(default_factory=dict)
    model_calls: dict[str, int] = field(default_factory=dict)
    # module path -> calls; indices folded past core.modulepaths.MAX_PATHS, never dropped
    modules: dict[str, int] = field(default_factory=dict)
    # model -> module path -> calls (bounded the same way): what per-module costs sum by
    model_modules: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(self.model_calls.values())

    @property
    def models(self) -> list[str]:
        return sorted(self.model_calls)


@dataclass(frozen=True)
class CorpusProblem:
    """A job whose op table could not be read, or a line of it that was skipped."""

    model: str
    path: str  # relative to the run dir
    reason: str


@dataclass(frozen=True)
class Placement:
    """Where a model label's calls ran in a parallel layout: one rank (a simulation's role
    dir) of a job's layout, standing for ``ranks`` (its tp / dp peers run the same)."""

    layout: str  # "tp8.pp2"
    rank: int
    ranks: tuple[int, ...]
    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1


SINGLE = "single"  # the layout of a model label without a placement: one device


@dataclass
class Corpus:
    models: tuple[str, ...]  # sorted: every model whose torch_dispatch job was read
    signatures: list[Signature]  # sorted by op, then calls (most first), then id
    problems: list[CorpusProblem] = field(default_factory=list)
    not_ok: list[tuple[str, str]] = field(default_factory=list)  # (model, status) left out
    # Models traced with weights fake: their signatures are the real shapes, but no value
    # (integer ranges) was seen, and nothing of them was timed.
    fake_models: tuple[str, ...] = ()
    # The distinct models (display ids) behind ``models``, whose labels are per variant
    # (``tiny-llama [decode]``): one model traced in two phases is one model here.
    model_ids: tuple[str, ...] = ()
    # sig_id -> the call as operator_inp text, for every signature that text can hold inertly
    # (the build checks each once; one it cannot write is a problem there, and left out).
    log_calls: dict[str, str] = field(default_factory=dict)
    # Model labels of a parallel job's ranks (``model [tp8.pp2 rank 8]``) -> their place.
    placements: dict[str, Placement] = field(default_factory=dict)

    @property
    def distinct_models(self) -> tuple[str, ...]:
        return self.model_ids or self.models

    def ops(self) -> list[str]:
        return sorted({s.op for s in self.signatures})

    def by_model(self) -> dict[str, list[Signature]]:
        out: dict[str, list[Signature]] = {m: [] for m in self.models}
        for sig in self.signatures:
            for model in sig.model_calls:
                out.setdefault(model, []).append(sig)
        return out
