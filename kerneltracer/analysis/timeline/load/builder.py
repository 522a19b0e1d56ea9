"""Fold batches of trace events into numpy column chunks.

The fast path decodes a batch with msgspec into small structs that name only the fields
the analyses read (events.py); everything else in an event (notably the bulky ``args`` of
host ops: shapes, types, concrete inputs) is skipped by the decoder without building Python
objects. ``args`` stays raw bytes and is decoded only as far as needed: three ids for every
event, whole for the rare GPU and instant events whose args become InferScope metadata, and
each kind decoded for a whole batch at once. A batch with unexpected types (a string
timestamp, a numeric name) falls back to a plain orjson decode and the same per-event rules.

Every event that is not used is counted, by kind, in one of two tallies: ``bad`` (the event
is malformed: a missing or non-numeric timestamp, a negative duration, an unknown phase…)
and ``skipped`` (a valid chrome-trace event the analyses do not use: flows, counters).
Only ``bad`` counts make ``--strict`` fail. Text with a literal only Python's json reads
(``NaN``, ``1e400``…) is decoded by it, so the event is counted (``timestamp_not_finite``,
``duration_out_of_range``…) instead of the whole trace being rejected.

Times are µs, and no clock gives one beyond ``_MAX_TIME_US`` (2^53 µs, 285 years from its
epoch; past it a double cannot even hold a whole microsecond): an event that starts or ends
there (``ts: 1e300``, ``dur: 1e308``) is malformed (``timestamp_out_of_range``,
``duration_out_of_range``), not a span every figure of the report would be measured against.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from kerneltracer.analysis.timeline.load import events as ev
from kerneltracer.analysis.timeline.load.columns import Columns, Flows, as_int, concat, int_column
from kerneltracer.analysis.timeline.load.packed import (
    PackedMapping,
    decode_object,
    is_object_text,
    joined_ranges,
)
from kerneltracer.analysis.timeline.model.categories import (
    CUDA_API,
    GPU_ACTIVITY,
    normalize_category,
)

PH_COMPLETE = 0
PH_INSTANT = 1
_MAX_TIME_US = float(2**53)
# Valid chrome-trace phases the analyses do not use (flows, counters, async, objects…).
_UNUSED_PHASES = frozenset("sftCbneNODPRVvc")
# pid / tid values that can label a thread (Kineto uses ints and strings).
_ID_TYPES = frozenset({int, str, float, bool, type(None)})
_TIME_TYPES = frozenset({int, float})
# Events whose args are kept whole (they become InferScope metadata); all are rare in traces.
_KEEP_ARGS = GPU_ACTIVITY | {"cpu_instant_event", "gpu_user_annotation", "cuda_sync", ""}
# Host ops whose shape and identity args op attribution reads (``Builder(op_args=True)``).
_OP_ARG_CATEGORIES = frozenset({"cpu_op"})
_KEEP_NONE, _KEEP_WHOLE, _KEEP_OP, _KEEP_LAUNCH = 0, 1, 2, 3
# Flow events that tie a launch on the host to its GPU activity (the correlation id).
_FLOW_CATEGORIES = frozenset({"ac2g"})


class Builder:
    """Accumulates column chunks, interned names/categories/threads and kept args."""

    def __init__(self, path: Path, *, op_args: bool = False) -> None:
        """``op_args``: also keep host ops' shape args (:class:`OpArgs`), ac2g flows and
        the kernel names runtime launch calls carry."""
        self.path = path
        self.op_args: ev.OpArgsStore | None = ev.OpArgsStore() if op_args else None
        self.launch_kernels: dict[int, str] = {}
        self.flows: Flows | None = Flows() if op_args else None
        self.chunks: list[dict[str, np.ndarray]] = []
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.threads: dict[Any, int] = {}
        self.keep_args: list[int] = []
        self.args: PackedMapping[dict[str, Any]] = PackedMapping(decode_object)
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
            events = ev.BATCH.decode(data)
        except msgspec.ValidationError:  # odd types, numbers out of range
            pass
        except msgspec.DecodeError:  # a cut inside an object, or a literal only json reads
            if ev.NON_FINITE.search(data) is None:
                return False
        else:
            self.add_structs(events)
            return True
        try:
            self.add_dicts(ev.loads_lenient(data))
        except (ValueError, RecursionError):
            return False
        return True

    @property
    def events_seen(self) -> int:
        """Every event added so far, used or not (what the event limit bounds)."""
        return self.rows + sum(self.bad.values()) + sum(self.skipped.values())

    def add_dicts(self, events: list[Any]) -> None:
        cols = Columns()
        for e in events:
            if type(e) is not dict:
                self._bad("not_an_object")
                continue
            self._add_dict(cols, e)
        self._flush(cols)
        if self.flows is not None:
            self.flows.pack()

    def add_structs(self, events: list[ev.Event]) -> None:
        rows: list[ev.Event] = []
        flows: list[ev.Event] = []
        cols = Columns()
        other: list[str] = []  # flows are a third of a Kineto trace: counted at once below
        for e in events:
            ph = e.ph
            if ph == "X" or ph == "i" or ph == "I":
                rows.append(e)
            elif ph == "M" or ph == "B" or ph == "E":
                if flows:  # threads are interned in event order: the flows before it first
                    self._add_flows(flows)
                    flows = []
                self._add_dict(cols, ev.struct_to_dict(e))
            elif type(ph) is str:
                other.append(ph)
                if (ph == "s" or ph == "f") and self.flows is not None:
                    flows.append(e)
            else:
                self._other_phase(ph)
        if flows:
            self._add_flows(flows)
        for ph, n in Counter(other).items():
            self._other_phase(ph, n)
        if not self._add_rows_columnar(rows):
            for e in rows:
                complete = e.ph == "X"
                self._append(
                    cols,
                    PH_COMPLETE if complete else PH_INSTANT,
                    (e.cat, e.name, e.pid, e.tid, e.ts, e.dur if complete else 0),
                    e.args,
                    None,
                )
        self._flush(cols)

    # -- whole batches -------------------------------------------------------------------
    def _add_rows_columnar(self, rows: list[ev.Event]) -> bool:
        """Columns for well-typed rows, one list comprehension per field; False if unusual."""
        if not rows:
            return True
        times = _time_columns(rows)
        cats = _categories(rows)
        names = [e.name for e in rows]
        if times is None or set(map(type, names)) != {str}:
            return False
        ts_col, dur_col, floats = times
        pids = [e.pid for e in rows]
        tids = [e.tid for e in rows]
        args = _BatchArgs.of(rows)
        ids: list[ev.IntIds] | list[ev.Ids]
        try:
            ids = ev.INT_IDS_LIST.decode(args.blob)
        except msgspec.ValidationError:  # an id that is no integer, or args no object
            try:
                ids = ev.IDS_LIST.decode(args.blob)
            except (msgspec.ValidationError, TypeError):
                return False
        if not self._intern_batch(cats, names, pids, tids):
            return False
        cat_ids = np.array([self.cats[c] for c in cats], dtype=np.int32)
        self._keep_batch_args(rows, cat_ids, args)
        self.float_ts = self.float_ts or floats
        self.chunks.append(
            {
                "ph": np.array(
                    [PH_COMPLETE if e.ph == "X" else PH_INSTANT for e in rows], dtype=np.uint8
                ),
                "cat": cat_ids,
                "name": np.array([self.names[n] for n in names], dtype=np.int32),
                "ts": ts_col,
                "dur": dur_col,
                "pid": np.array([self.threads[p] for p in pids], dtype=np.int32),
                "tid": np.array([self.threads[t] for t in tids], dtype=np.int32),
                **_id_columns(ids),
            }
        )
        self.rows += len(rows)
        return True

    def _intern_batch(
        self, cats: list[str], names: list[str], pids: list[Any], tids: list[Any]
    ) -> bool:
        """Ids for a batch's new categories, names and threads; False for an unhashable
        pid/tid (the per-event path counts it)."""
        for c in set(cats) - self.cats.keys():
            self.cats[c] = len(self.cats)
            self.keep_args.append(self._keep(c))
        for n in set(names) - self.names.keys():
            self.names[n] = len(self.names)
        try:
            for t in (set(pids) | set(tids)) - self.threads.keys():
                self.threads[t] = len(self.threads)
        except TypeError:
            return False
        return True

    def _keep_batch_args(
        self, rows: list[ev.Event], cat_ids: np.ndarray, args: _BatchArgs
    ) -> None:
        """The args kept for a batch's rows, each kind decoded in one call."""
        keep = np.asarray(self.keep_args, dtype=np.int8)[cat_ids]
        base = self.rows
        # The texts are cut from the batch's array of args in runs, without a bytes object
        # a row; args that are not an object (nor, kept whole, an object with a key) are
        # left out.
        whole = np.flatnonzero((keep == _KEEP_WHOLE) & args.keyed)
        self.args.texts.add_joined(base + whole, *args.joined(whole))
        if self.op_args is None:
            return
        ops = np.flatnonzero((keep == _KEEP_OP) & args.objects)
        self.op_args.add_joined(base + ops, *args.joined(ops))
        # Most launch calls (all of CUDA's) carry no kernel name: none looked at then.
        if b'"kernel"' in args.blob:
            for i in _with_args(rows, keep == _KEEP_LAUNCH):
                self._keep_launch(base + i, rows[i].args)

    def _add_flows(self, flows: list[ev.Event]) -> None:
        """Flow events of _FLOW_CATEGORIES with usable times and thread ids, in order."""
        f = self.flows
        if f is None:
            return
        kept = flows if _all_flow_categories(flows) else _flow_categories(flows)
        if not kept:
            return
        ts = [e.ts for e in kept]
        pids = [e.pid for e in kept]
        tids = [e.tid for e in kept]
        ids = _distinct(pids, tids)
        if ids is None or not (set(map(type, ids)) <= _ID_TYPES and _times_in_range(ts)):
            for e in kept:  # the per-event rules leave the unusable ones out
                self._add_flow(e)
            return
        threads = self.threads
        if not ids <= threads.keys():  # new threads are numbered in the order they come
            for key in dict.fromkeys(chain.from_iterable(zip(pids, tids, strict=True))):
                if key not in threads:
                    threads[key] = len(threads)
        f.id.extend([e.id for e in kept])
        f.start.extend([e.ph == "s" for e in kept])
        f.pid.extend([threads[p] for p in pids])
        f.tid.extend([threads[t] for t in tids])
        f.ts.extend(ts)
        f.pack()

    # -- per event -----------------------------------------------------------------------
    def _add_dict(self, cols: Columns, e: dict[str, Any]) -> None:
        ph = e.get("ph")
        if ph == "X" or ph == "i" or ph == "I":
            complete = ph == "X"
            args = e.get("args")
            fields = (
                e.get("cat"),
                e.get("name"),
                e.get("pid"),
                e.get("tid"),
                e.get("ts"),
                e.get("dur") if complete else 0,
            )
            kept = args if type(args) is dict else {}
            self._append(cols, PH_COMPLETE if complete else PH_INSTANT, fields, None, kept)
        elif ph == "M":
            self._meta(e)
        elif ph == "B":
            self.open_b.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append(e)
        elif ph == "E":
            self._end_b(cols, e)
        else:
            self._other_phase(ph)
            if (ph == "s" or ph == "f") and self.flows is not None:
                f = ev.Event(ph=ph, cat=e.get("cat"), pid=e.get("pid"), tid=e.get("tid"))
                f.ts, f.id = e.get("ts"), e.get("id")
                self._add_flow(f)

    def _append(
        self,
        cols: Columns,
        ph: int,
        fields: tuple[Any, Any, Any, Any, Any, Any],
        raw_args: msgspec.Raw | None,
        args: dict[str, Any] | None,
    ) -> None:
        """One event (``fields``: category, name, pid, tid, ts, dur) with its args raw or
        decoded; a malformed one is counted instead."""
        raw_cat, name, pid, tid, ts, dur = fields
        name = self._checked_name(ts, dur, name, pid, tid)
        if name is None:
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
        stream, corr, device, kept = self._event_args(self.keep_args[cat_id], raw_args, args)
        cols.ph.append(ph)
        cols.cat.append(cat_id)
        cols.name.append(name_id)
        cols.ts.append(ts)
        cols.dur.append(dur)
        cols.pid.append(self._thread(pid))
        cols.tid.append(self._thread(tid))
        cols.stream.append(_as_id(stream))
        cols.corr.append(_as_id(corr))
        cols.device.append(_as_id(device))
        if kept:
            self.args.direct[self.rows] = kept
        self.rows += 1

    def _checked_name(self, ts: Any, dur: Any, name: Any, pid: Any, tid: Any) -> str | None:
        """The event's name as a label, or None (counted as bad) if any field is unusable."""
        if type(ts) is float and math.isfinite(ts):
            self.float_ts = True
        problem = _time_problem(ts) or _duration_problem(ts, dur)
        if not problem and type(name) is not str:
            if type(name) is int or type(name) is float:  # numbers read as labels
                name = str(name)
            else:
                problem = "missing_name" if name is None else "name_not_a_string"
        if not problem and (type(pid) not in _ID_TYPES or type(tid) not in _ID_TYPES):
            problem = "thread_id_not_a_scalar"
        if problem:
            self._bad(problem)
            return None
        return str(name)

    def _event_args(
        self, keep: int, raw_args: msgspec.Raw | None, args: dict[str, Any] | None
    ) -> tuple[Any, Any, Any, dict[str, Any] | None]:
        """(stream, correlation, device, args to keep) from an event's raw or decoded args;
        op and launch args are stored on the side."""
        raw = raw_args if raw_args is not None and raw_args else None
        if keep == _KEEP_OP:
            if raw is not None:
                self._keep_op_args(self.rows, raw)
            elif args:
                self._keep_op_args(self.rows, msgspec.json.encode(args))
            keep = _KEEP_NONE
        elif keep == _KEEP_LAUNCH:
            if raw is not None:
                self._keep_launch(self.rows, raw)
            elif args and type(args.get("kernel")) is str:
                self.launch_kernels[self.rows] = args["kernel"]
            keep = _KEEP_NONE
        if raw is not None:
            if keep:
                decoded = msgspec.json.decode(raw)
                args = decoded if type(decoded) is dict else {}
            else:
                try:
                    ids = ev.IDS.decode(raw)
                except msgspec.ValidationError:  # args that are not an object
                    args = {}
                else:
                    return ids.stream, ids.correlation, ids.device, None
        if args is None:
            return -1, -1, -1, None
        ids_of = (args.get("stream", -1), args.get("correlation", -1), args.get("device", -1))
        return (*ids_of, args if keep else None)

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
            name = ev.LAUNCH_ARGS.decode(raw).kernel
            if type(name) is str:
                self.launch_kernels[row] = name

    def _keep_op_args(self, row: int, raw: bytes | msgspec.Raw) -> None:
        if self.op_args is not None:  # only called for _KEEP_OP categories
            self.op_args.add([row], [bytes(raw)])  # args that are not an object are left out

    def _add_flow(self, e: ev.Event) -> None:
        if self.flows is None:
            return
        if type(e.cat) is not str or e.cat not in _FLOW_CATEGORIES:
            return
        if type(e.ts) not in (int, float) or type(e.pid) not in _ID_TYPES:
            return
        if not -_MAX_TIME_US <= e.ts <= _MAX_TIME_US:  # NaN too: no flow ends there
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

    def _end_b(self, cols: Columns, e: dict[str, Any]) -> None:
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
            fields = (begin.get("cat"), begin.get("name"), begin.get("pid"), begin.get("tid"))
            kept = args if type(args) is dict else {}
            self._append(cols, PH_COMPLETE, (*fields, ts, end - ts), None, kept)

    def _bad(self, kind: str, n: int = 1) -> None:
        self.bad[kind] = self.bad.get(kind, 0) + n

    def _other_phase(self, ph: Any, n: int = 1) -> None:
        if type(ph) is str and ph in _UNUSED_PHASES:
            key = f"phase_{ph}"
            self.skipped[key] = self.skipped.get(key, 0) + n
        else:
            self._bad("missing_phase" if ph is None else "unknown_phase", n)

    def _flush(self, cols: Columns) -> None:
        if cols.ts:
            self.chunks.append(cols.arrays())

    def finish(self) -> dict[str, Any]:
        """The ChromeTrace fields (all but path and metadata)."""
        dangling = sum(len(s) for s in self.open_b.values())
        if dangling:
            self.bad["unmatched_begin"] = dangling
        raw_cats = list(self.cats)
        cols = concat(self.chunks)
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
            "op_args": ev.OpArgsStore() if self.op_args is None else self.op_args,
            "launch_kernels": self.launch_kernels,
            "flows": None if self.flows is None else self.flows.arrays(),
            "bad_events": self.bad,
            "skipped_events": self.skipped,
        }


def _categories(rows: list[ev.Event]) -> list[str]:
    """Raw categories, "" for one that is not a string (as on the per-event path): Kineto
    writes its instant markers without one, and one such event must not slow its batch."""
    return [c if type(c) is str else "" for c in [e.cat for e in rows]]


def _time_columns(rows: list[ev.Event]) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(ts, dur, any float ts) of well-typed rows in range; None for the per-event path."""
    ts = [e.ts for e in rows]
    dur = [e.dur if e.ph == "X" else 0 for e in rows]
    ts_types = set(map(type, ts))
    if not (ts_types | set(map(type, dur))) <= _TIME_TYPES:
        return None
    if min(dur) < 0:  # the per-event path counts them
        return None
    try:
        ts_col = np.array(ts, dtype=np.float64)
        dur_col = np.array(dur, dtype=np.float64)
    except OverflowError:  # an integer beyond a double
        return None
    # NaN fails both comparisons and ±inf the bound: the per-event path counts them.
    if not (np.abs(ts_col).max() <= _MAX_TIME_US and (ts_col + dur_col).max() <= _MAX_TIME_US):
        return None
    return ts_col, dur_col, float in ts_types


def _all_flow_categories(flows: list[ev.Event]) -> bool:
    """Whether every flow is of one of _FLOW_CATEGORIES (a set of the few distinct
    categories, cheaper than a filtered copy of them all)."""
    try:
        return {e.cat for e in flows} <= _FLOW_CATEGORIES
    except TypeError:  # an unhashable category
        return False


def _flow_categories(flows: list[ev.Event]) -> list[ev.Event]:
    return [e for e in flows if type(e.cat) is str and e.cat in _FLOW_CATEGORIES]


def _distinct(pids: list[Any], tids: list[Any]) -> set[Any] | None:
    """The distinct pid and tid values (few); None if one cannot be a key."""
    try:
        return set(pids) | set(tids)
    except TypeError:
        return None


def _times_in_range(ts: list[Any]) -> bool:
    """Every value an int or float (not a bool) within ±_MAX_TIME_US (NaN is not)."""
    if not set(map(type, ts)) <= _TIME_TYPES:
        return False
    try:
        return bool(np.all(np.abs(np.array(ts, dtype=np.float64)) <= _MAX_TIME_US))
    except OverflowError:  # an integer beyond a double
        return False


def _time_problem(ts: Any) -> str:
    """Why ``ts`` is no timestamp (a bad-event kind), or ""."""
    t = type(ts)
    if t is not int and t is not float:
        return "missing_timestamp" if ts is None else "timestamp_not_a_number"
    if t is float and not math.isfinite(ts):
        return "timestamp_not_finite"
    if not -_MAX_TIME_US <= ts <= _MAX_TIME_US:
        return "timestamp_out_of_range"
    return ""


def _duration_problem(ts: float, dur: Any) -> str:
    """Why ``dur`` is no duration for an event at ``ts`` (a bad-event kind), or ""."""
    t = type(dur)
    if t is not int and t is not float:
        return "missing_duration" if dur is None else "duration_not_a_number"
    if dur < 0:
        return "negative_duration"
    if t is float and not math.isfinite(dur):
        return "duration_not_finite"
    if ts + dur > _MAX_TIME_US:
        return "duration_out_of_range"
    return ""


def _id_columns(ids: list[ev.IntIds] | list[ev.Ids]) -> dict[str, np.ndarray]:
    column = _int_ids_column if ids and type(ids[0]) is ev.IntIds else int_column
    return {
        "stream": column([x.stream for x in ids]),
        "corr": column([x.correlation for x in ids]),
        "device": column([x.device for x in ids]),
    }


def _int_ids_column(values: list[int]) -> np.ndarray:
    """:func:`int_column` of values the decoder checked are integers (no type pass)."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:  # up to 2**64 - 1 decodes as an integer
        return int_column(values)


@dataclass(frozen=True)
class _BatchArgs:
    """A batch's args as one JSON array's text (``{}`` for a row without), where each row's
    text starts and ends in it, and which rows have args that are an object."""

    blob: bytes
    starts: np.ndarray
    ends: np.ndarray
    objects: np.ndarray
    keyed: np.ndarray  # objects with at least one key (is_object_text)

    @classmethod
    def of(cls, rows: list[ev.Event]) -> _BatchArgs:
        raw: list[bytes | msgspec.Raw] = [e.args for e in rows]
        lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
        missing = np.flatnonzero(lengths == 0)
        for i in missing.tolist():
            raw[i] = b"{}"
        lengths[missing] = 2
        blob = ev.json_list(raw)
        ends = np.cumsum(lengths)
        ends += np.arange(1, lengths.size + 1)  # the "[" and the commas before each
        starts = ends - lengths
        text = np.frombuffer(blob, dtype=np.uint8)
        objects = text[starts] == ord("{")
        objects[missing] = False
        # Valid JSON (the batch decoded): after "{", '"' opens a key and "}" ends an empty
        # object; only whitespace there needs a look at the text.
        after = text[np.minimum(starts + 1, text.size - 1)]
        keyed = objects & (after == ord('"'))
        for i in np.flatnonzero(objects & (after != ord('"')) & (after != ord("}"))).tolist():
            keyed[i] = is_object_text(blob[starts[i] : ends[i]])
        return cls(blob, starts, ends, objects, keyed)

    def joined(self, rows: np.ndarray) -> tuple[bytes, np.ndarray]:
        """The texts of ``rows`` (positions in the batch) comma-separated, and their ends."""
        return joined_ranges(self.blob, self.starts[rows], self.ends[rows])


def _with_args(rows: list[ev.Event], mask: np.ndarray) -> list[int]:
    """Positions in ``mask`` whose row has args."""
    return [i for i in np.flatnonzero(mask).tolist() if rows[i].args]


def _as_id(value: Any) -> int:
    return value if type(value) is int else as_int(value)
