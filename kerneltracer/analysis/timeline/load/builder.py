"""Fold batches of trace events into numpy column chunks.

The fast path decodes a batch with msgspec into small structs that name only the fields
the analyses read; everything else in an event (notably the bulky ``args`` of host ops:
shapes, types, concrete inputs) is skipped by the decoder without building Python objects.
``args`` stays raw bytes and is decoded only as far as needed: three ids for every event,
whole for the rare GPU and instant events whose args become InferScope metadata. A batch
with unexpected types (a string timestamp, a numeric name) falls back to a plain orjson
decode and the same per-event rules.

Every event that is not used is counted, by kind, in one of two tallies: ``bad`` (the event
is malformed: a missing or non-numeric timestamp, a negative duration, an unknown phase…)
and ``skipped`` (a valid chrome-trace event the analyses do not use: flows, counters).
Only ``bad`` counts make ``--strict`` fail.

orjson and msgspec refuse ``NaN``, ``Infinity``, numbers beyond a double (``1e400``) and
integers beyond 64 bits, which Python's json (and so many trace writers) produce; a batch
that fails on one of those is decoded again by the standard library, so the event is counted
(``timestamp_not_finite``, ``duration_out_of_range``…) instead of the whole trace being
rejected.

Times are µs, and no clock gives one beyond ``MAX_TIME_US`` (2^53 µs, 285 years from its
epoch; past it a double cannot even hold a whole microsecond): an event that starts or ends
there (``ts: 1e300``, ``dur: 1e308``) is malformed (``timestamp_out_of_range``,
``duration_out_of_range``), not a span every figure of the report would be measured against.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import orjson

from kerneltracer.analysis.timeline.model.categories import (
    CUDA_API,
    GPU_ACTIVITY,
    normalize_category,
)

PH_COMPLETE = 0
PH_INSTANT = 1
MAX_TIME_US = float(2**53)
# Valid chrome-trace phases the analyses do not use (flows, counters, async, objects…).
_UNUSED_PHASES = frozenset("sftCbneNODPRVvc")
# pid / tid values that can label a thread (Kineto uses ints and strings).
_ID_TYPES = frozenset({int, str, float, bool, type(None)})
# Events whose args are kept whole (they become InferScope metadata); all are rare in traces.
_KEEP_ARGS = GPU_ACTIVITY | {"cpu_instant_event", "gpu_user_annotation", "cuda_sync", ""}
# Host ops whose shape and identity args op attribution reads (``Builder(op_args=True)``).
_OP_ARG_CATEGORIES = frozenset({"cpu_op"})
_KEEP_NONE, _KEEP_WHOLE, _KEEP_OP, _KEEP_LAUNCH = 0, 1, 2, 3
# Flow events that tie a launch on the host to its GPU activity (the correlation id).
FLOW_CATEGORIES = frozenset({"ac2g"})


class _Event(msgspec.Struct, gc=False):
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


class _LaunchArgs(msgspec.Struct, gc=False):
    kernel: Any = None  # the launched kernel's name (ROCm writes it on its launch calls)


class _Ids(msgspec.Struct, gc=False):
    stream: Any = -1
    correlation: Any = -1
    device: Any = -1


# A literal orjson refuses but the standard json reads: NaN, ±Infinity, 1e400, and an
# integer beyond 64 bits (20 digits or more).
_NON_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE][+]?[0-9]{3}|[0-9]{20}")

_BATCH = msgspec.json.Decoder(list[_Event])
_IDS = msgspec.json.Decoder(_Ids)
_IDS_LIST = msgspec.json.Decoder(list[_Ids])
_OP_ARGS = msgspec.json.Decoder(OpArgs)
_LAUNCH_ARGS = msgspec.json.Decoder(_LaunchArgs)


class Flows:
    """Flow events (``s`` start on the host, ``f`` finish on the GPU) of FLOW_CATEGORIES."""

    def __init__(self) -> None:
        self.id: list[Any] = []
        self.start: list[bool] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.ts: list[Any] = []


class Builder:
    """Accumulates column chunks, interned names/categories/threads and kept args."""

    def __init__(self, path: Path, *, op_args: bool = False) -> None:
        """``op_args``: also keep host ops' shape args (:class:`OpArgs`), ac2g flows and
        the kernel names runtime launch calls carry."""
        self.path = path
        self.op_args: dict[int, OpArgs] | None = {} if op_args else None
        self.launch_kernels: dict[int, str] = {}
        self.flows: Flows | None = Flows() if op_args else None
        self.chunks: list[dict[str, np.ndarray]] = []
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.threads: dict[Any, int] = {}
        self.keep_args: list[int] = []
        self.args: dict[int, dict[str, Any]] = {}
        self.process_names: dict[str, str] = {}
        self.thread_names: dict[tuple[str, str], str] = {}
        self.bad: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.rows = 0
        self.float_ts = False
        self.open_b: dict[tuple[str, str], list[dict[str, Any]]] = {}

    # -- entry points --------------------------------------------------------------------
    def add_json_array(self, data: bytes) -> bool:
        """Add the events of a JSON array; False (and nothing added) if it is not valid JSON."""
        try:
            events = _BATCH.decode(data)
        except msgspec.ValidationError:  # odd types, numbers out of range
            pass
        except msgspec.DecodeError:  # a cut inside an object, or a literal only json reads
            if _NON_FINITE.search(data) is None:
                return False
        else:
            self._add_structs(events)
            return True
        try:
            self.add_dicts(loads_lenient(data))
        except (ValueError, RecursionError):
            return False
        return True

    @property
    def events_seen(self) -> int:
        """Every event added so far, used or not (what the event limit bounds)."""
        return self.rows + sum(self.bad.values()) + sum(self.skipped.values())

    def add_dicts(self, events: list[Any]) -> None:
        cols = _Columns()
        for e in events:
            if type(e) is not dict:
                self._bad("not_an_object")
                continue
            self._add_dict(cols, e)
        self._flush(cols)

    # -- per event -----------------------------------------------------------------------
    def _add_structs(self, events: list[_Event]) -> None:
        rows: list[_Event] = []
        cols = _Columns()
        other: list[str] = []  # flows are a third of a Kineto trace: counted at once below
        for e in events:
            ph = e.ph
            if ph == "X" or ph == "i" or ph == "I":
                rows.append(e)
            elif ph == "M" or ph == "B" or ph == "E":
                self._add_dict(cols, _struct_to_dict(e))
            elif type(ph) is str:
                other.append(ph)
                if (ph == "s" or ph == "f") and self.flows is not None:
                    self._add_flow(e)
            else:
                self._other_phase(ph)
        for ph, n in Counter(other).items():
            self._other_phase(ph, n)
        if not self._add_rows_columnar(rows):
            for e in rows:
                complete = e.ph == "X"
                self._append(
                    cols,
                    PH_COMPLETE if complete else PH_INSTANT,
                    e.cat,
                    e.name,
                    e.pid,
                    e.tid,
                    e.ts,
                    e.dur if complete else 0,
                    e.args,
                    None,
                )
        self._flush(cols)

    def _add_rows_columnar(self, rows: list[_Event]) -> bool:
        """Columns for well-typed rows, one list comprehension per field; False if unusual."""
        if not rows:
            return True
        ts = [e.ts for e in rows]
        dur = [e.dur if e.ph == "X" else 0 for e in rows]
        cats = [e.cat for e in rows]
        names = [e.name for e in rows]
        if not (set(map(type, ts)) | set(map(type, dur))) <= {int, float}:
            return False
        if set(map(type, cats)) != {str} or set(map(type, names)) != {str}:
            return False
        if min(dur) < 0:  # the per-event path counts them
            return False
        try:
            ts_col = np.array(ts, dtype=np.float64)
            dur_col = np.array(dur, dtype=np.float64)
        except OverflowError:  # an integer beyond a double
            return False
        # NaN fails both comparisons and ±inf the bound: the per-event path counts them.
        if not (np.abs(ts_col).max() <= MAX_TIME_US and (ts_col + dur_col).max() <= MAX_TIME_US):
            return False
        pids = [e.pid for e in rows]
        tids = [e.tid for e in rows]
        try:
            ids = _IDS_LIST.decode(b"[" + b",".join([e.args or b"{}" for e in rows]) + b"]")
        except (msgspec.ValidationError, TypeError):
            return False
        for c in set(cats) - self.cats.keys():
            self.cats[c] = len(self.cats)
            self.keep_args.append(self._keep(c))
        for n in set(names) - self.names.keys():
            self.names[n] = len(self.names)
        try:
            for t in (set(pids) | set(tids)) - self.threads.keys():
                self.threads[t] = len(self.threads)
        except TypeError:  # an unhashable pid/tid
            return False
        cat_ids = [self.cats[c] for c in cats]
        base = self.rows
        for i, c in enumerate(cat_ids):
            keep = self.keep_args[c]
            if keep and rows[i].args:
                if keep == _KEEP_OP:
                    self._keep_op_args(base + i, rows[i].args)
                    continue
                if keep == _KEEP_LAUNCH:
                    self._keep_launch(base + i, rows[i].args)
                    continue
                args = msgspec.json.decode(rows[i].args)
                if type(args) is dict and args:
                    self.args[base + i] = args
        self.float_ts = self.float_ts or float in set(map(type, ts))
        self.chunks.append(
            {
                "ph": np.array(
                    [PH_COMPLETE if e.ph == "X" else PH_INSTANT for e in rows], dtype=np.uint8
                ),
                "cat": np.array(cat_ids, dtype=np.int32),
                "name": np.array([self.names[n] for n in names], dtype=np.int32),
                "ts": ts_col,
                "dur": dur_col,
                "pid": np.array([self.threads[p] for p in pids], dtype=np.int32),
                "tid": np.array([self.threads[t] for t in tids], dtype=np.int32),
                "stream": _int_column([x.stream for x in ids]),
                "corr": _int_column([x.correlation for x in ids]),
                "device": _int_column([x.device for x in ids]),
            }
        )
        self.rows += len(rows)
        return True

    def _add_dict(self, cols: _Columns, e: dict[str, Any]) -> None:
        ph = e.get("ph")
        if ph == "X" or ph == "i" or ph == "I":
            complete = ph == "X"
            args = e.get("args")
            self._append(
                cols,
                PH_COMPLETE if complete else PH_INSTANT,
                e.get("cat"),
                e.get("name"),
                e.get("pid"),
                e.get("tid"),
                e.get("ts"),
                e.get("dur") if complete else 0,
                None,
                args if type(args) is dict else {},
            )
        elif ph == "M":
            self._meta(e)
        elif ph == "B":
            self.open_b.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append(e)
        elif ph == "E":
            self._end_b(cols, e)
        else:
            self._other_phase(ph)
            if (ph == "s" or ph == "f") and self.flows is not None:
                f = _Event(ph=ph, cat=e.get("cat"), pid=e.get("pid"), tid=e.get("tid"))
                f.ts, f.id = e.get("ts"), e.get("id")
                self._add_flow(f)

    def _append(
        self,
        cols: _Columns,
        ph: int,
        raw_cat: Any,
        name: Any,
        pid: Any,
        tid: Any,
        ts: Any,
        dur: Any,
        raw_args: msgspec.Raw | None,
        args: dict[str, Any] | None,
    ) -> None:
        # The hot loop of the loader: exact type checks and plain dict lookups on purpose.
        t = type(ts)
        if t is float:
            if not math.isfinite(ts):
                self._bad("timestamp_not_finite")
                return
            self.float_ts = True
        elif t is not int:
            self._bad("missing_timestamp" if ts is None else "timestamp_not_a_number")
            return
        if not -MAX_TIME_US <= ts <= MAX_TIME_US:
            self._bad("timestamp_out_of_range")
            return
        t = type(dur)
        if t is not int and t is not float:
            self._bad("missing_duration" if dur is None else "duration_not_a_number")
            return
        if dur < 0:
            self._bad("negative_duration")
            return
        if t is float and not math.isfinite(dur):
            self._bad("duration_not_finite")
            return
        if ts + dur > MAX_TIME_US:
            self._bad("duration_out_of_range")
            return
        if type(name) is not str:
            if type(name) is not int and type(name) is not float:  # numbers read as labels
                self._bad("missing_name" if name is None else "name_not_a_string")
                return
            name = str(name)
        if type(pid) not in _ID_TYPES or type(tid) not in _ID_TYPES:
            self._bad("thread_id_not_a_scalar")
            return
        if type(raw_cat) is not str:
            raw_cat = ""
        cat_id = self.cats.get(raw_cat)
        if cat_id is None:
            cat_id = self.cats[raw_cat] = len(self.cats)
            self.keep_args.append(self._keep(raw_cat))
        name_id = self.names.get(name)
        if name_id is None:
            name_id = self.names[name] = len(self.names)
        keep = self.keep_args[cat_id]
        if keep == _KEEP_OP:
            if raw_args is not None and raw_args:
                self._keep_op_args(self.rows, raw_args)
            elif args:
                self._keep_op_args(self.rows, msgspec.json.encode(args))
            keep = _KEEP_NONE
        elif keep == _KEEP_LAUNCH:
            if raw_args is not None and raw_args:
                self._keep_launch(self.rows, raw_args)
            elif args and type(args.get("kernel")) is str:
                self.launch_kernels[self.rows] = args["kernel"]
            keep = _KEEP_NONE
        if raw_args is not None and raw_args:
            if keep:
                args = msgspec.json.decode(raw_args)
                if type(args) is not dict:
                    args = {}
            else:
                try:
                    ids = _IDS.decode(raw_args)
                    stream, corr, device = ids.stream, ids.correlation, ids.device
                except msgspec.ValidationError:  # args that are not an object
                    args = {}
        if args is not None:
            stream, corr, device = (
                args.get("stream", -1),
                args.get("correlation", -1),
                args.get("device", -1),
            )
        elif not raw_args:
            stream = corr = device = -1
        cols.ph.append(ph)
        cols.cat.append(cat_id)
        cols.name.append(name_id)
        cols.ts.append(ts)
        cols.dur.append(dur)
        cols.pid.append(self._thread(pid))
        cols.tid.append(self._thread(tid))
        cols.stream.append(stream if type(stream) is int else _as_int(stream))
        cols.corr.append(corr if type(corr) is int else _as_int(corr))
        cols.device.append(device if type(device) is int else _as_int(device))
        if keep and args:
            self.args[self.rows] = args
        self.rows += 1

    def _keep(self, raw_cat: str) -> int:
        cat = normalize_category(raw_cat)
        if cat in _KEEP_ARGS:
            return _KEEP_WHOLE
        if self.op_args is None:
            return _KEEP_NONE
        if cat in _OP_ARG_CATEGORIES:
            return _KEEP_OP
        return _KEEP_LAUNCH if cat in CUDA_API else _KEEP_NONE

    def _keep_launch(self, row: int, raw: bytes | msgspec.Raw) -> None:
        # Most launch calls (all of CUDA's) carry no kernel name: skip them undecoded.
        if b'"kernel"' not in bytes(raw):
            return
        with contextlib.suppress(msgspec.ValidationError):
            name = _LAUNCH_ARGS.decode(raw).kernel
            if type(name) is str:
                self.launch_kernels[row] = name

    def _keep_op_args(self, row: int, raw: bytes) -> None:
        if self.op_args is None:  # only called for _KEEP_OP categories
            return
        # args that are not an object, or of odd types, are left out
        with contextlib.suppress(msgspec.ValidationError):
            self.op_args[row] = _OP_ARGS.decode(raw)

    def _add_flow(self, e: _Event) -> None:
        if self.flows is None:
            return
        if type(e.cat) is not str or e.cat not in FLOW_CATEGORIES:
            return
        if type(e.ts) not in (int, float) or type(e.pid) not in _ID_TYPES:
            return
        if not -MAX_TIME_US <= e.ts <= MAX_TIME_US:  # NaN too: no flow ends there
            return
        if type(e.tid) not in _ID_TYPES:
            return
        f = self.flows
        f.id.append(e.id)
        f.start.append(e.ph == "s")
        f.pid.append(self._thread(e.pid))
        f.tid.append(self._thread(e.tid))
        f.ts.append(e.ts)

    def _thread(self, key: Any) -> int:
        idx = self.threads.get(key)
        if idx is None:
            idx = self.threads[key] = len(self.threads)
        return idx

    def _meta(self, e: dict[str, Any]) -> None:
        args = e.get("args")
        label = args.get("name") if isinstance(args, dict) else None
        if not isinstance(label, str):
            return
        if e.get("name") == "process_name":
            self.process_names[str(e.get("pid"))] = label
        elif e.get("name") == "thread_name":
            self.thread_names[(str(e.get("pid")), str(e.get("tid")))] = label

    def _end_b(self, cols: _Columns, e: dict[str, Any]) -> None:
        stack = self.open_b.get((str(e.get("pid")), str(e.get("tid"))))
        if not stack:
            self._bad("unmatched_end")
            return
        begin = stack.pop()
        ts, end = begin.get("ts"), e.get("ts")
        if not (isinstance(ts, int | float) and isinstance(end, int | float)) or (
            isinstance(ts, bool) or isinstance(end, bool)
        ):
            self._bad("timestamp_not_a_number")
        else:
            args = begin.get("args")
            self._append(
                cols,
                PH_COMPLETE,
                begin.get("cat"),
                begin.get("name"),
                begin.get("pid"),
                begin.get("tid"),
                ts,
                end - ts,
                None,
                args if type(args) is dict else {},
            )

    def _bad(self, kind: str, n: int = 1) -> None:
        self.bad[kind] = self.bad.get(kind, 0) + n

    def _other_phase(self, ph: Any, n: int = 1) -> None:
        if type(ph) is str and ph in _UNUSED_PHASES:
            key = f"phase_{ph}"
            self.skipped[key] = self.skipped.get(key, 0) + n
        else:
            self._bad("missing_phase" if ph is None else "unknown_phase", n)

    def _flush(self, cols: _Columns) -> None:
        if cols.ts:
            self.chunks.append(cols.arrays())

    def finish(self) -> dict[str, Any]:
        """The ChromeTrace fields (all but path and metadata)."""
        dangling = sum(len(s) for s in self.open_b.values())
        if dangling:
            self.bad["unmatched_begin"] = dangling
        raw_cats = list(self.cats)
        cols = _concat(self.chunks)
        return {
            "names": list(self.names),
            "categories": [normalize_category(c) for c in raw_cats],
            "raw_categories": raw_cats,
            "ph": cols["ph"],
            "cat": cols["cat"],
            "name": cols["name"],
            "ts": cols["ts"],
            "dur": cols["dur"],
            "pid": cols["pid"],
            "tid": cols["tid"],
            "stream": cols["stream"],
            "correlation": cols["corr"],
            "device": cols["device"],
            "args": self.args,
            "thread_labels": [str(t) for t in self.threads],
            "process_names": self.process_names,
            "thread_names": self.thread_names,
            "float_timestamps": self.float_ts,
            "op_args": self.op_args or {},
            "launch_kernels": self.launch_kernels,
            "flows": _flow_columns(self.flows),
            "bad_events": self.bad,
            "skipped_events": self.skipped,
        }


def _flow_columns(flows: Flows | None) -> dict[str, np.ndarray] | None:
    """Flow columns (``id`` as int64, -1 when not an integer), or None when not collected."""
    if flows is None:
        return None
    return {
        "id": _int_column(flows.id),
        "start": np.array(flows.start, dtype=bool),
        "pid": np.array(flows.pid, dtype=np.int32),
        "tid": np.array(flows.tid, dtype=np.int32),
        "ts": np.array(flows.ts, dtype=np.float64),
    }


def loads_lenient(data: bytes) -> Any:
    """orjson, or the standard json where the text has a literal only that one reads."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if _NON_FINITE.search(data) is None:
            raise
    return json.loads(data)


def _struct_to_dict(e: _Event) -> dict[str, Any]:
    out = {k: getattr(e, k) for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur")}
    if e.args:
        out["args"] = msgspec.json.decode(e.args)
    return {k: v for k, v in out.items() if v is not None}


class _Columns:
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
            out[k] = _int_column(getattr(self, k))
        return out


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


def _concat(chunks: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not chunks:
        return {k: np.empty(0, dtype=d) for k, d in _DTYPES.items()}
    return {k: np.concatenate([c[k] for c in chunks]) for k in _DTYPES}


def _int_column(values: list[Any]) -> np.ndarray:
    if set(map(type, values)) != {int}:
        values = [v if type(v) is int else _as_int(v) for v in values]
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:  # an id beyond int64 is no id we can use
        return np.array([_as_int(v) for v in values], dtype=np.int64)


_INT64 = range(-(2**63), 2**63)


def _as_int(value: Any) -> int:
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
