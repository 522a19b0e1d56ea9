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
OP_ARGS_LIST = msgspec.json.Decoder(list[OpArgs])
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
