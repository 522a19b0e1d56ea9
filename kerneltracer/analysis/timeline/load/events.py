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
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec
import orjson


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


class OpIds(
    msgspec.Struct,
    gc=False,
    rename={"external_id": "External id", "sequence_number": "Sequence number"},
):
    """The two ids of a host op's args that are read for every op, not only those that
    launched GPU work (the rest of the args skipped undecoded)."""

    external_id: Any = None
    sequence_number: Any = None


class OpArgsStore(Mapping[int, OpArgs]):
    """Host ops' args by row, kept as their JSON text and decoded on first access.

    Decoding every op's shapes, types and call stack into Python lists took most of the
    loader's time after the parse itself, yet attribution reads them only for the ops that
    launched GPU work and the ops around those; the text is also smaller than the lists.
    Only args that are JSON objects are added, so every key decodes.
    """

    def __init__(self) -> None:
        self._raw: dict[int, bytes] = {}
        self._decoded: dict[int, OpArgs] = {}
        self._ids: dict[int, OpIds] | None = None

    def add(self, row: int, raw: bytes) -> None:
        """``raw``: the args' JSON text; anything but an object is left out (as before)."""
        if raw[:1] == b"{":
            self._raw[row] = raw
            self._ids = None

    def __getitem__(self, row: int) -> OpArgs:
        found = self._decoded.get(row)
        if found is None:
            found = self._decoded[row] = OP_ARGS.decode(self._raw[row])
        return found

    def __contains__(self, row: object) -> bool:
        return row in self._raw

    def __iter__(self) -> Iterator[int]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def ids(self) -> dict[int, OpIds]:
        """Every op's External id and Sequence number, decoded in one call on first need."""
        if self._ids is None:
            rows = list(self._raw)
            decoded = OP_IDS_LIST.decode(json_list([self._raw[r] for r in rows]))
            self._ids = dict(zip(rows, decoded, strict=True))
        return self._ids


class LaunchArgs(msgspec.Struct, gc=False):
    kernel: Any = None  # the launched kernel's name (ROCm writes it on its launch calls)


class Ids(msgspec.Struct, gc=False):
    stream: Any = -1
    correlation: Any = -1
    device: Any = -1


# A literal orjson refuses but the standard json reads: NaN, ±Infinity, 1e400, and an
# integer beyond 64 bits (20 digits or more).
NON_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE][+]?[0-9]{3}|[0-9]{20}")

BATCH = msgspec.json.Decoder(list[Event])
IDS = msgspec.json.Decoder(Ids)
IDS_LIST = msgspec.json.Decoder(list[Ids])
OP_ARGS = msgspec.json.Decoder(OpArgs)
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
