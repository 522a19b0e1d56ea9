"""What the loader decodes from a chrome trace's JSON: msgspec structs naming only the fields
the analyses read (everything else is skipped by the decoder without building Python
objects), their decoders, and the lenient fallback for literals only Python's json reads.

orjson and msgspec refuse ``NaN``, ``Infinity``, numbers beyond a double (``1e400``) and
integers beyond 64 bits, which Python's json (and so many trace writers) produce; text that
fails on one of those is decoded again by the standard library (:func:`loads_lenient`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import numpy as np
import orjson

from kerneltracer.analysis.timeline.load.packed import PackedMapping


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: msgspec.Raw = msgspec.Raw()


class OpArgs(
    msgspec.Struct,
    gc=False,
    rename={
        "input_dims": "Input Dims",
        "input_types": "Input type",
        "concrete_inputs": "Concrete Inputs",
        "external_id": "External id",
        "module_hierarchy": "Module Hierarchy",
        "call_stack": "Call stack",
        "sequence_number": "Sequence number",
    },
):
    """The args of a host op that attribution reads; the rest is skipped undecoded."""

    input_dims: Any = None
    input_types: Any = None
    concrete_inputs: Any = None
    external_id: Any = None
    module_hierarchy: Any = None
    call_stack: Any = None
    sequence_number: Any = None


class _OpArgsText(
    msgspec.Struct,
    gc=False,
    rename={
        "input_dims": "Input Dims",
        "input_types": "Input type",
        "concrete_inputs": "Concrete Inputs",
        "external_id": "External id",
        "module_hierarchy": "Module Hierarchy",
        "call_stack": "Call stack",
        "sequence_number": "Sequence number",
    },
):
    """:class:`OpArgs` with the three bulky fields left as their JSON text."""

    input_dims: msgspec.Raw = msgspec.Raw()
    input_types: msgspec.Raw = msgspec.Raw()
    concrete_inputs: msgspec.Raw = msgspec.Raw()
    external_id: Any = None
    module_hierarchy: Any = None
    call_stack: Any = None
    sequence_number: Any = None


class OpIds(
    msgspec.Struct,
    gc=False,
    rename={"external_id": "External id", "sequence_number": "Sequence number"},
):
    """The two ids of a host op's args that are read for every op, not only those that
    launched GPU work (the rest of the args skipped undecoded)."""

    external_id: Any = None
    sequence_number: Any = None


class OpArgsStore(PackedMapping[OpArgs]):
    """Host ops' args by row, kept as their packed JSON text and decoded when looked up.

    Decoding every op's shapes, types and call stack into Python lists took most of the
    loader's time after the parse itself, yet attribution reads them only for the ops that
    launched GPU work and the ops around those. Only args that are JSON objects are kept.
    """

    # Distinct shape / type / input texts decoded once: a model repeats its layers, so a
    # few thousand texts stand for hundreds of thousands of ops (decoded separately, the
    # lists of a 3M-event trace's attributed ops held 130 MiB). Bounded: past it, decoded
    # each time.
    _SHARED_MAX = 1 << 16

    def __init__(self) -> None:
        super().__init__(self._decode_shared)
        self._shared: dict[bytes, Any] = {}
        self._ids: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def _decode_shared(self, text: bytes) -> OpArgs:
        raw = OP_ARGS_TEXT.decode(text)
        return OpArgs(
            input_dims=self._shared_value(raw.input_dims),
            input_types=self._shared_value(raw.input_types),
            concrete_inputs=self._shared_value(raw.concrete_inputs),
            external_id=raw.external_id,
            module_hierarchy=raw.module_hierarchy,
            call_stack=raw.call_stack,
            sequence_number=raw.sequence_number,
        )

    def _shared_value(self, raw: msgspec.Raw) -> Any:
        if not raw:
            return None
        key = bytes(raw)
        value = self._shared.get(key, _UNSEEN)
        if value is _UNSEEN:
            value = msgspec.json.decode(key)
            if len(self._shared) < self._SHARED_MAX:
                self._shared[key] = value
        return value

    def add(self, rows: list[int], texts: list[bytes]) -> None:
        kept = [(r, t) for r, t in zip(rows, texts, strict=True) if t[:1] == b"{"]
        self.texts.add([r for r, _ in kept], [t for _, t in kept])
        self._ids = None

    def add_joined(self, rows: np.ndarray, blob: bytes, ends: np.ndarray) -> None:
        """:meth:`add` of texts given joined (``PackedTexts.add_joined``), all objects."""
        self.texts.add_joined(rows, blob, ends)
        self._ids = None

    def int_ids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, External ids) and (rows, Sequence numbers) of the ops where that id is an
        integer, rows in increasing order; the shapes skipped, computed once.

        Decoded one packed batch at a time: all of a 3M-event trace's million ops as
        texts, structs and (row, id) tuples at once peaked at over 300 MiB."""
        if self._ids is None:
            parts: list[tuple[np.ndarray, ...]] = []
            for rows, text in self.texts.json_arrays():
                decoded = OP_IDS_LIST.decode(text)
                ext = [(r, d.external_id) for r, d in zip(rows.tolist(), decoded, strict=True)]
                seq = [(r, d.sequence_number) for r, d in zip(rows.tolist(), decoded, strict=True)]
                parts.append((*_int_pairs(ext), *_int_pairs(seq)))
            self._ids = _sorted_pairs(parts)
        return self._ids

    def external_id_rows(self, wanted: set[int]) -> tuple[np.ndarray, np.ndarray]:
        """(rows, External ids) of the ops whose External id is an integer in ``wanted``,
        rows in increasing order.

        Only the batches whose text can hold one of those ids are decoded: a GPU event
        left unlinked by correlation ids and flows asks for its id, and decoding every
        op's ids for the few such events (none of which found an op at 218k events) was
        ~1 s of op attribution at 3M. A batch is skipped only when no ``"External id":``
        in its text is followed by a wanted integer's digits and it has no ``\\u``
        escape (a key could be spelt with one); anything else is decoded as before."""
        if self._ids is not None:
            rows, ids = self._ids[0], self._ids[1]
            keep = np.isin(ids, np.fromiter(wanted, dtype=np.int64, count=len(wanted)))
            return rows[keep], ids[keep]
        digits = {str(v).encode() for v in wanted}
        if 0 in wanted:
            digits.add(b"-0")  # JSON's -0 decodes as the integer 0

        def may_hold(blob: bytes) -> bool:
            return b"\\u" in blob or not digits.isdisjoint(_EXTERNAL_ID.findall(blob))

        parts: list[tuple[np.ndarray, ...]] = []
        for rows, text in self.texts.json_arrays(only=may_hold):
            decoded = OP_IDS_LIST.decode(text)
            ext = [
                (r, d.external_id)
                for r, d in zip(rows.tolist(), decoded, strict=True)
                if type(d.external_id) is int and d.external_id in wanted
            ]
            parts.append(_int_pairs(ext))
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.copy()
        rows = np.concatenate([p[0] for p in parts])
        ids = np.concatenate([p[1] for p in parts])
        order = np.argsort(rows, kind="stable")
        return rows[order], ids[order]


# Every integer an ``"External id"`` key can decode to, as its digits (a float's leading
# digits too: a superset, the batch then decoded). JSON's whitespace is within ``\s``.
_EXTERNAL_ID = re.compile(rb'"External id"\s*:\s*(-?[0-9]+)')


def _sorted_pairs(
    parts: list[tuple[np.ndarray, ...]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The batches' (rows, values) pairs joined, each pair ordered by row."""
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, empty

    def joined(k: int) -> tuple[np.ndarray, np.ndarray]:
        rows = np.concatenate([p[k] for p in parts])
        values = np.concatenate([p[k + 1] for p in parts])
        # Batches come in row order: already sorted, and then left as they are (a stable
        # sort's order and two copies of the ids were ~45 MiB of peak at 3M events).
        if rows.size < 2 or bool((rows[1:] >= rows[:-1]).all()):
            return rows, values
        order = np.argsort(rows, kind="stable")
        return rows[order], values[order]

    return (*joined(0), *joined(2))


def _int_pairs(pairs: list[tuple[int, Any]]) -> tuple[np.ndarray, np.ndarray]:
    ok = [(r, v) for r, v in pairs if type(v) is int and -(2**63) <= v < 2**63]
    rows = np.array([r for r, _ in ok], dtype=np.int64)
    return rows, np.array([v for _, v in ok], dtype=np.int64)


class LaunchArgs(msgspec.Struct, gc=False):
    kernel: Any = None  # the launched kernel's name (ROCm writes it on its launch calls)


class Ids(msgspec.Struct, gc=False):
    stream: Any = -1
    correlation: Any = -1
    device: Any = -1


class IntIds(msgspec.Struct, gc=False):
    """:class:`Ids` as nearly every trace writes them: integers (or absent), checked by the
    decoder; a batch with any other value is decoded again as :class:`Ids`."""

    stream: int = -1
    correlation: int = -1
    device: int = -1


# A literal orjson refuses but the standard json reads: NaN, ±Infinity, 1e400, and an
# integer beyond 64 bits (20 digits or more).
NON_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE][+]?[0-9]{3}|[0-9]{20}")

BATCH = msgspec.json.Decoder(list[Event])
IDS = msgspec.json.Decoder(Ids)
IDS_LIST = msgspec.json.Decoder(list[Ids])
INT_IDS_LIST = msgspec.json.Decoder(list[IntIds])
OP_ARGS_TEXT = msgspec.json.Decoder(_OpArgsText)
_UNSEEN = object()
OP_IDS_LIST = msgspec.json.Decoder(list[OpIds])
LAUNCH_ARGS = msgspec.json.Decoder(LaunchArgs)


def json_list(items: list[Any]) -> bytes:
    """JSON texts (bytes or msgspec.Raw) joined into one JSON array's text."""
    return b"[" + b",".join(items) + b"]"


def loads_lenient(data: bytes) -> Any:
    """orjson, or the standard json where the text has a literal only that one reads."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if NON_FINITE.search(data) is None:
            raise
    return json.loads(data)


def struct_to_dict(e: Event) -> dict[str, Any]:
    out = {k: getattr(e, k) for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur")}
    if e.args:
        out["args"] = msgspec.json.decode(e.args)
    return {k: v for k, v in out.items() if v is not None}
