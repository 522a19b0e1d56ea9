"""The loader's numpy columns: per-event lists turned into typed arrays, chunks joined, ids
that are not 64-bit integers read as -1."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kerneltracer.core.heap import release_free_heap

_DTYPES: dict[str, Any] = {
    "ph": np.uint8,
    "cat": np.int32,
    "name": np.int32,
    "ts": np.float64,
    "dur": np.float64,
    "pid": np.int32,
    "tid": np.int32,
    "stream": np.int64,
    "corr": np.int64,
    "device": np.int64,
}


class Columns:
    """Rows appended one event at a time (the per-event path)."""

    def __init__(self) -> None:
        self.ph: list[int] = []
        self.cat: list[int] = []
        self.name: list[int] = []
        self.ts: list[float] = []
        self.dur: list[float] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.stream: list[int] = []
        self.corr: list[int] = []
        self.device: list[int] = []

    def arrays(self) -> dict[str, np.ndarray]:
        out = {
            k: np.asarray(getattr(self, k), dtype=d) for k, d in _DTYPES.items() if d != np.int64
        }
        for k in ("stream", "corr", "device"):
            out[k] = int_column(getattr(self, k))
        return out


class Flows:
    """Flow events (``s`` start on the host, ``f`` finish on the GPU) of the flow categories.

    Appended as lists, packed into arrays every ``_PACK_AT`` flows: a million flows as
    Python ints and floats would hold over 100 MB until the end of the load."""

    _PACK_AT = 1 << 16

    def __init__(self) -> None:
        self.id: list[Any] = []
        self.start: list[bool] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.ts: list[Any] = []
        self._packed: list[dict[str, np.ndarray]] = []

    def pack(self, at: int = _PACK_AT) -> None:
        """Move the listed flows into a chunk of arrays once there are ``at`` of them."""
        if len(self.id) < max(at, 1):
            return
        self._packed.append(
            {
                "id": int_column(self.id),
                "start": np.array(self.start, dtype=bool),
                "pid": np.array(self.pid, dtype=np.int32),
                "tid": np.array(self.tid, dtype=np.int32),
                "ts": np.array(self.ts, dtype=np.float64),
            }
        )
        self.id, self.start, self.pid, self.tid, self.ts = [], [], [], [], []

    def arrays(self) -> dict[str, np.ndarray]:
        """Flow columns (``id`` as int64, -1 when not an integer)."""
        self.pack(at=1)
        keys = ("id", "start", "pid", "tid", "ts")
        if not self._packed:
            empty = {"id": np.int64, "start": bool, "pid": np.int32, "tid": np.int32}
            return {k: np.empty(0, dtype=empty.get(k, np.float64)) for k in keys}
        return {k: np.concatenate([c[k] for c in self._packed]) for k in keys}


# Id columns kept as int32 where every value of a chunk fits (stream, correlation and
# device ids are small counters in every trace seen): 36 MiB less at 3M events, in the
# columns and in every selection made of them.
_NARROWED = ("stream", "corr", "device")
_INT32_MIN, _INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def concat(chunks: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The chunks' columns joined; ``_NARROWED`` columns int32 when all their values fit,
    else int64 (a chunk with an id past 32 bits widens the whole column: never wrapped)."""
    if not chunks:
        return {k: np.empty(0, dtype=d) for k, d in _DTYPES.items()}
    # Column by column, each column's chunks dropped once joined and their heap handed
    # back: the load's peak is the columns plus one column, not twice the columns (the
    # freed chunks stayed resident until the load's trim: +116 MiB at 3M events).
    out = {}
    for k in _DTYPES:
        parts = [c.pop(k) for c in chunks]
        if k in _NARROWED:
            # Per chunk, so that no whole int64 column is made only to be narrowed; numpy
            # joins int32 with int64 chunks as int64.
            parts = [narrowed(p) for p in parts]
        out[k] = np.concatenate(parts)
        del parts
        release_free_heap()
    return out


def narrowed(ids: np.ndarray) -> np.ndarray:
    """An int64 id column as int32 when every value fits, else unchanged."""
    if ids.size and (int(ids.min()) < _INT32_MIN or int(ids.max()) > _INT32_MAX):
        return ids
    return ids.astype(np.int32)


def int_column(values: list[Any]) -> np.ndarray:
    if set(map(type, values)) != {int}:
        values = [v if type(v) is int else as_int(v) for v in values]
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:  # an id beyond int64 is no id we can use
        return np.array([as_int(v) for v in values], dtype=np.int64)


_INT64 = range(-(2**63), 2**63)


def as_int(value: Any) -> int:
    if isinstance(value, bool):
        return -1
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    elif isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return -1
    return value if isinstance(value, int) and value in _INT64 else -1
