"""Convert a loaded chrome trace into the InferScope trace file (a plain dict).

Mapping: host ops, Python functions and CUDA API calls → ``cpu_call``; kernels, memsets and
device-to-device copies → ``gpu_kernel`` (metadata ``operation`` says which); HtoD / DtoH
copies → ``h2d_copy`` / ``d2h_copy``; Kineto ``[memory]`` instants → ``memory_event``;
everything else (instants, cuda_sync, GPU-side annotations) → ``instant``. User annotations
and ``ProfilerStep#N`` spans become scopes with parent/child links. Ids are ``e<N>`` for
events (position after sorting by start time) and ``s<N>`` for scopes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
import orjson

from kerneltracer.analysis.nesting import last_at_level, levels
from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.load.packed import PackedMapping
from kerneltracer.analysis.timeline.model.categories import (
    CPU_BUSY,
    kernel_type,
    memcpy_direction,
    memcpy_host_kind,
)
from kerneltracer.analysis.timeline.model.validate import EventColumns, LaneColumns, lane_of
from kerneltracer.analysis.timeline.render.cpu_calls import (
    CpuCallBuilder,
    exact,
    json_column,
    json_where,
)

# The InferScope file format written here (schema.py models it; kept out of that module so
# that converting does not import pydantic).
FORMAT_VERSION = "1.0"
# Kineto timestamps are µs since the epoch unless the trace gives a base time; anything
# smaller than this (year 2001) is taken as relative and gets no wall clock.
_EPOCH_US_FLOOR = 1e15
_NESTING_CHUNK = 65_536
# Threads with fewer host rows go through the loop, whose cost a row is lower than the
# whole-array path's dozen numpy calls for a few rows.
_VECTOR_ROWS = 512


@dataclass
class _Plan:
    events: np.ndarray  # rows that become events, sorted by start
    scopes: np.ndarray  # rows that become scopes, sorted by start
    # By row, as int32 arrays: a list (a pointer and often an int object a row) held
    # ~100 MiB at 3M events in the writer, on top of the trace's pages it shares.
    depth: np.ndarray  # call depth of host ops (0 elsewhere)
    parent_scope: np.ndarray  # the innermost enclosing scope row, -1 if none
    scope_parent: dict[int, int]  # scope row -> parent scope row


@dataclass
class _Lists:
    """Columns as Python lists: per-event code indexes them, and numpy scalars are slow."""

    ph: list[int]
    cat: list[int]
    name: list[int]
    ts: list[float]
    dur: list[float]
    pid: list[int]
    tid: list[int]
    stream: list[int]
    correlation: list[int]
    device: list[int]
    start_iso: list[str | None]
    end_iso: list[str | None]

    @classmethod
    def of(cls, t: ChromeTrace, rows: np.ndarray, wall: float | None) -> _Lists:
        ts = t.ts[rows]
        return cls(
            t.ph[rows].tolist(),
            t.cat[rows].tolist(),
            t.name[rows].tolist(),
            t.ts[rows].tolist(),
            t.dur[rows].tolist(),
            t.pid[rows].tolist(),
            t.tid[rows].tolist(),
            t.stream[rows].tolist(),
            t.correlation[rows].tolist(),
            t.device[rows].tolist(),
            _iso_column(wall, ts),
            _iso_column(wall, ts + t.dur[rows]),
        )


class InferScopeConverter:
    """Builds the document in parts, so that big traces can be written chunk by chunk."""

    def __init__(self, trace: ChromeTrace, created: datetime | None = None) -> None:
        self.trace = trace
        self.created = created
        self.is_cpu_call = (trace.ph == PH_COMPLETE) & trace.category_mask(CPU_BUSY)
        self.plan = _plan(trace, self.is_cpu_call)
        self.scope_ids = {int(r): f"s{i}" for i, r in enumerate(self.plan.scopes.tolist())}
        self.wall = _wall_clock_base(trace)
        self.cpu_calls = CpuCallBuilder(
            trace, self.plan.depth, self.plan.parent_scope, self.scope_ids
        )
        gpu_ops = {"kernel", "gpu_memset", "gpu_memcpy"}
        self.gpu_op_categories = [i for i, c in enumerate(trace.categories) if c in gpu_ops]
        self._kernel_types: dict[int, bytes] = {}  # name index -> its kernel_type field

    @property
    def event_count(self) -> int:
        return int(self.plan.events.size)

    def header(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "trace_metadata": _trace_metadata(self.trace, self.created),
            "system_info": _system_info(self.trace),
        }

    def event_chunks(self, size: int = 20_000) -> Iterator[list[dict[str, Any]]]:
        for start in range(0, self.event_count, size):
            rows = self.plan.events[start : start + size]
            cols = _Lists.of(self.trace, rows, self.wall)
            cpu = np.flatnonzero(self.is_cpu_call[rows])
            out: list[dict[str, Any]] = [{}] * rows.size
            built = self.cpu_calls.build(
                rows[cpu],
                cpu + start,
                [cols.start_iso[i] for i in cpu.tolist()],
                [cols.end_iso[i] for i in cpu.tolist()],
            )
            for i, event in zip(cpu.tolist(), built, strict=True):
                out[i] = event
            other = np.flatnonzero(~self.is_cpu_call[rows])
            found = _args_of(self.trace, rows[other])
            for i, r, args in zip(other.tolist(), rows[other].tolist(), found, strict=True):
                eid = f"e{start + i}"
                out[i] = _event(self.trace, cols, i, r, eid, self.plan, self.scope_ids, args)
            yield out

    def encoded_chunks(self, size: int = 20_000) -> Iterator[tuple[bytes, EventColumns]]:
        """``event_chunks`` as JSON text (the events comma-separated) with what the validator
        checks of them; host calls, most of a trace, are formatted without dicts."""
        for start in range(0, self.event_count, size):
            yield self._encode_chunk(start, self.plan.events[start : start + size])

    def _encode_chunk(self, start: int, rows: np.ndarray) -> tuple[bytes, EventColumns]:
        t = self.trace
        is_cpu = self.is_cpu_call[rows]
        cpu, other = np.flatnonzero(is_cpu), np.flatnonzero(~is_cpu)
        other_rows = rows[other]
        # GPU ops, nearly all of the rest, are formatted column-wise too; the other kinds
        # (and ops whose times JSON cannot hold) go through the generic per-event dicts.
        ts, end = t.ts[other_rows], t.ts[other_rows] + t.dur[other_rows]
        quick = (
            np.isin(t.cat[other_rows], self.gpu_op_categories)
            & np.isfinite(ts)
            & np.isfinite(end)
            & (t.name[other_rows] >= 0)
        )
        del ts, end
        # Each kind's texts are put in place by position, and the chunk is their join.
        texts = np.empty(rows.size, dtype=object)
        spans = is_cpu.copy()
        at, picked = other[quick], other_rows[quick]
        ops, lanes = self._encode_gpu_ops(picked, at + start, _args_of(t, picked))
        texts[at] = ops
        spans[at] = True
        del ops, picked
        slow = np.flatnonzero(~quick)
        if slow.size:
            slow_lanes = self._encode_slow(start, other[slow], other_rows[slow], texts, spans)
            lanes = LaneColumns.joined([lanes, slow_lanes])
        texts[cpu] = self._encode_cpu_calls(rows[cpu], cpu + start)
        ts = t.ts[rows]
        names = self.cpu_calls.names[t.name[rows]]
        columns = EventColumns(start, spans, ts, ts + t.dur[rows], names, lanes)
        return b",".join(texts.tolist()), columns

    def _encode_slow(
        self, start: int, at: np.ndarray, rows: np.ndarray, texts: np.ndarray, spans: np.ndarray
    ) -> LaneColumns:
        """Events ``rows`` (at chunk positions ``at``) through the generic per-event dicts:
        their texts and spans put in place, the lanes of those on a stream given."""
        t = self.trace
        cols = _Lists.of(t, rows, self.wall)
        found = _args_of(t, rows)
        lanes: list[tuple[int, int, float, float, int]] = []
        for k, (i, r) in enumerate(zip(at.tolist(), rows.tolist(), strict=True)):
            event = _event(t, cols, k, r, f"e{start + i}", self.plan, self.scope_ids, next(found))
            texts[i] = exact(orjson.dumps(event))  # held until the chunk is joined
            spans[i] = event["type"] != "instant"
            lane = lane_of(event)
            if lane is not None:
                (device, stream), (begin, end, _) = lane
                lanes.append((-1 if device is None else device, stream, begin, end, start + i))
        if not lanes:
            return LaneColumns.empty()
        fields = list(zip(*lanes, strict=True))
        ints, floats = np.int64, np.float64
        return LaneColumns(
            np.array(fields[0], dtype=ints),
            np.array(fields[1], dtype=ints),
            np.array(fields[2], dtype=floats),
            np.array(fields[3], dtype=floats),
            np.array(fields[4], dtype=ints),
        )

    def _encode_gpu_ops(
        self, rows: np.ndarray, positions: np.ndarray, found: Iterable[dict[str, Any]]
    ) -> tuple[list[bytes], LaneColumns]:
        """What ``_event`` gives of GPU op ``rows`` (kernels, memsets and copies with finite
        times and a name), as JSON text, with each one's lane; ``found``: their args. As
        for host calls, numbers are written a column at a time and names once per name;
        only each op's own metadata goes through orjson, as a small dict."""
        t = self.trace
        ts = t.ts[rows]
        end = ts + t.dur[rows]
        names = t.name[rows].tolist()
        devices, streams, correlation = t.device[rows], t.stream[rows], t.correlation[rows]
        on = streams >= 0
        lanes = LaneColumns(
            np.where(devices[on] >= 0, devices[on], -1).astype(np.int64),
            streams[on].astype(np.int64),
            ts[on],
            end[on],
            positions[on].astype(np.int64),
        )
        kinds: list[bytes] = []
        tails: list[bytes] = []
        ops = zip(t.cat[rows].tolist(), names, found, t.dur[rows].tolist(), strict=True)
        for cat, n, args, dur in ops:
            category = t.categories[cat]
            if category == "kernel":
                kinds.append(b'"gpu_kernel"')
                tails.append(b'"operation":"kernel",' + self._kernel_type_json(n) + _launch(args))
            elif category == "gpu_memset":
                kinds.append(b'"gpu_kernel"')
                memset = {"operation": "memset", "bytes": args.get("bytes")}
                tails.append(orjson.dumps(memset)[1:-1])
            else:
                kind, meta = _copy_fields(t.names[n], args, dur)
                kinds.append(b'"%s"' % kind.encode())
                tails.append(orjson.dumps(meta)[1:-1])
        fields: list[list[bytes]] = [
            json_column(positions),
            kinds,
            self.cpu_calls.names_json[t.name[rows]].tolist(),
            json_column(ts),
            json_column(end),
            json_column(end - ts),
            json_where(devices, devices >= 0, absent=b"null"),
            json_where(streams, streams >= 0, absent=b"null"),
            json_where(correlation, correlation >= 0, prefix=b',"correlation_id":'),
            tails,
        ]
        template = _GPU_OP_NO_WALL
        if self.wall is not None:
            template = _GPU_OP
            fields[5:5] = [*_iso_parts(self.wall, ts), *_iso_parts(self.wall, end)]
        return [template % f for f in zip(*fields, strict=True)], lanes

    def _kernel_type_json(self, name: int) -> bytes:
        """``"kernel_type":<its type>,`` of the kernel named by index ``name``."""
        text = self._kernel_types.get(name)
        if text is None:
            text = b'"kernel_type":%s,' % orjson.dumps(_kernel_type(self.trace.names[name]))
            self._kernel_types[name] = text
        return text

    def _encode_cpu_calls(self, rows: np.ndarray, positions: np.ndarray) -> list[bytes]:
        ts = self.trace.ts[rows]
        end = ts + self.trace.dur[rows]
        if not np.isfinite(end).all():  # repr would write inf; orjson writes null, as before
            starts, ends = _iso_column(self.wall, ts), _iso_column(self.wall, end)
            built = self.cpu_calls.build(rows, positions, starts, ends)
            # Each held until the chunk is joined: in a bytes object of its own size.
            return [exact(orjson.dumps(e)) for e in built]
        if self.wall is None:
            return self.cpu_calls.encode(rows, positions, None)
        wall = self.wall
        return self.cpu_calls.encode(
            rows, positions, (*_iso_parts(wall, ts), *_iso_parts(wall, end))
        )

    def relationships(self) -> dict[str, Any]:
        hosts, ops = _launches(self.trace, self.plan.events)
        return {
            "scopes": self.scopes(),
            "launches": [[f"e{h}", f"e{g}"] for h, g in zip(hosts, ops, strict=True)],
        }

    def scopes(self) -> list[dict[str, Any]]:
        return _scopes(self.trace, self.plan, self.scope_ids)

    def launch_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The launches as two arrays of event positions (host call, GPU op): made over
        whole-trace columns (~45 MiB of temporaries at 3M events), so best made before the
        events' chunks are under way."""
        return _launches(self.trace, self.plan.events)

    def encoded_launches(
        self, size: int = 20_000, made: tuple[np.ndarray, np.ndarray] | None = None
    ) -> Iterator[bytes]:
        """``relationships()["launches"]`` as JSON text, its pairs comma-separated, a run of
        pairs at a time: as a list of lists of id strings it held ~60 MiB at 3M events.
        ``made``: what ``launch_pairs`` gave, when already made."""
        hosts, ops = self.launch_pairs() if made is None else made
        for lo in range(0, hosts.size, size):
            pairs = zip(hosts[lo : lo + size].tolist(), ops[lo : lo + size].tolist(), strict=True)
            yield b",".join([b'["e%d","e%d"]' % pair for pair in pairs])


def to_inferscope(trace: ChromeTrace, created: datetime | None = None) -> dict[str, Any]:
    """The whole InferScope document in memory (see write_inferscope for big traces)."""
    conv = InferScopeConverter(trace, created)
    events = [e for chunk in conv.event_chunks() for e in chunk]
    return {**conv.header(), "events": events, "relationships": conv.relationships()}


def _plan(trace: ChromeTrace, is_cpu_call: np.ndarray) -> _Plan:
    """``is_cpu_call``: the rows that become host calls (a whole-trace mask, made once)."""
    is_scope = (trace.ph == PH_COMPLETE) & trace.category_mask({"user_annotation"})
    is_event = ~is_scope & ~trace.category_mask({"trace"})
    # Longer first on equal starts, so that parents precede their children.
    order = np.lexsort((-trace.dur, trace.ts))
    events = order[is_event[order]]
    scopes = order[is_scope[order]]
    host = order[(is_scope | is_cpu_call)[order]]
    del order  # a row index over the whole trace, not needed while the host rows nest
    depth, parent_scope, scope_parent = _nesting(trace, host, is_scope)
    return _Plan(events, scopes, depth, parent_scope, scope_parent)


def _nesting(
    trace: ChromeTrace, rows: np.ndarray, is_scope: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Call depth of host events and innermost enclosing scope (-1: none), per thread;
    ``rows``: the host events (calls and scopes) in start order, longer first."""
    depth = np.zeros(len(trace), dtype=np.int32)
    parent_scope = np.full(len(trace), -1, dtype=np.int32)
    scope_parent: dict[int, int] = {}
    # One thread after another (a stable sort keeps start order within each), so that the
    # stack is a local list instead of a per-row lookup of the thread's stack. In place and
    # one array at a time: these row-sized temporaries were the writer's peak at 3M events.
    thread = trace.pid[rows].astype(np.int64)
    thread <<= 32
    thread |= trace.tid[rows]
    by_thread = np.argsort(thread, kind="stable")
    rows = rows[by_thread]
    thread = thread[by_thread]
    del by_thread
    new_thread = np.ones(rows.size, dtype=bool)
    new_thread[1:] = thread[1:] != thread[:-1]
    del thread
    edges = [*np.flatnonzero(new_thread).tolist(), rows.size]
    looped = 0  # rows before it are done; those from it up to the thread at hand are not
    for lo, hi in pairwise(edges):
        nested = None
        if hi - lo >= _VECTOR_ROWS:
            nested = _nest_thread(trace, rows[lo:hi], is_scope, depth, parent_scope)
        if nested is None:
            continue
        _nest_loop(
            trace,
            rows[looped:lo],
            new_thread[looped:lo],
            is_scope,
            depth,
            parent_scope,
            scope_parent,
        )
        looped = hi
        for r, parent in zip(*nested, strict=True):
            if parent >= 0:
                scope_parent[r] = parent
    _nest_loop(
        trace, rows[looped:], new_thread[looped:], is_scope, depth, parent_scope, scope_parent
    )
    return depth, parent_scope, scope_parent


def _nest_loop(
    trace: ChromeTrace,
    rows: np.ndarray,
    new_thread: np.ndarray,
    is_scope: np.ndarray,
    depth: np.ndarray,
    parent_scope: np.ndarray,
    scope_parent: dict[int, int],
) -> None:
    """``_nesting`` of ``rows`` (whole threads, ``new_thread`` at each one's first row) with
    a stack, filling in ``depth``, ``parent_scope`` and ``scope_parent``."""
    # Stack entries: (end, host ops open up to and including it, innermost scope row); the
    # running counts make depth and enclosing scope O(1) instead of a stack walk.
    stack: list[tuple[float, int, int]] = []
    # A bounded run of rows at a time: the columns as Python lists cost ~100 bytes a row
    # (~230 MiB at 3M events, the writer's peak when made at once).
    for lo in range(0, rows.size, _NESTING_CHUNK):
        part = rows[lo : lo + _NESTING_CHUNK]
        scopes = is_scope[part]
        ts = trace.ts[part]
        depths: list[int] = []
        parents: list[int] = []
        columns = zip(
            part.tolist(),
            ts.tolist(),
            (ts + trace.dur[part]).tolist(),
            scopes.tolist(),
            new_thread[lo : lo + _NESTING_CHUNK].tolist(),
            strict=True,
        )
        for r, start, end, scope, new in columns:
            if new:
                stack = []
            while stack and stack[-1][0] <= start:
                stack.pop()
            ops, enclosing = (stack[-1][1], stack[-1][2]) if stack else (0, -1)
            if scope:
                if enclosing >= 0:
                    scope_parent[r] = enclosing
                stack.append((end, ops, r))
            else:
                depths.append(ops)
                parents.append(enclosing)
                stack.append((end, ops + 1, enclosing))
        ops_rows = part[~scopes]
        depth[ops_rows] = depths
        parent_scope[ops_rows] = parents


def _nest_thread(
    trace: ChromeTrace,
    rows: np.ndarray,
    is_scope: np.ndarray,
    depth: np.ndarray,
    parent_scope: np.ndarray,
) -> tuple[list[int], list[int]] | None:
    """What ``_nest_loop`` makes of one thread's ``rows`` (in start order), with whole-array
    operations: fills in ``depth`` and ``parent_scope`` of its host ops and gives its scope
    rows with their parent scope rows (-1: none); None, nothing filled in, where the rows
    do not nest (the loop's stack then keeps rows that have ended under one that has not,
    which counting cannot follow).

    Row j is on the loop's stack for the rows after it that start before j ends, up to
    the first that starts at or after its end (``until``), as long as rows nest: then the
    stack at row i is exactly the rows j < i with ``until[j] > i``, and its top (i's
    parent) is the last row before i at one level less. That each row ends no later than
    that parent is what nesting means here, and is checked: row by row, it is what keeps
    the stack's ends in order, so that the loop's pops match the counts (by induction).

    Whole-thread temporaries are a few int32 columns and one int64 one (a 3M-event trace
    has a thread of 1.6M host rows); the per-row lookups go a block at a time."""
    start = trace.ts[rows]
    end = start + trace.dur[rows]
    if not (np.isfinite(start).all() and np.isfinite(end).all()):
        return None
    n = rows.size
    until = np.empty(n, dtype=np.int32)
    for lo in range(0, n, _NESTING_CHUNK):
        hi = min(lo + _NESTING_CHUNK, n)
        first_after = np.searchsorted(start, end[lo:hi], side="left")
        until[lo:hi] = np.maximum(first_after, np.arange(lo + 1, hi + 1))
    level, keys = levels(until)
    for lo in range(0, n, _NESTING_CHUNK):
        inner = lo + np.flatnonzero(level[lo : lo + _NESTING_CHUNK] > 0)
        parent = last_at_level(keys, level[inner] - 1, inner, n)
        if parent is None or not (
            (end[inner] <= end[parent]).all() and (end[parent] > start[inner]).all()
        ):
            return None
    del keys, start, end
    # Scopes nest as all the rows do: the innermost open scope is the last scope before
    # the row one scope level down. Host ops open at a row: the rows open less the scopes.
    scope = is_scope[rows]
    scopes = np.flatnonzero(scope)
    scope_level = np.zeros(n + 1, dtype=np.int32)
    np.add.at(scope_level, scopes + 1, 1)
    np.add.at(scope_level, until[scopes], -1)
    np.cumsum(scope_level, out=scope_level)
    scope_level = scope_level[:n]
    del until
    scope_keys = scope_level[scopes].astype(np.int64) * n + scopes
    scope_keys.sort()
    scope_parents: list[int] = []
    for lo in range(0, n, _NESTING_CHUNK):
        part = slice(lo, lo + _NESTING_CHUNK)
        here = lo + np.flatnonzero(scope_level[part] > 0)
        innermost = last_at_level(scope_keys, scope_level[here] - 1, here, n)
        if innermost is None:
            return None  # cannot be, once the rows nest; the loop redoes every row if it were
        parent = np.full(min(n, lo + _NESTING_CHUNK) - lo, -1, dtype=np.int32)
        parent[here - lo] = rows[innermost]
        ops = ~scope[part]
        block = rows[part]
        depth[block[ops]] = (level[part] - scope_level[part])[ops]
        parent_scope[block[ops]] = parent[ops]
        scope_parents += parent[~ops].tolist()
    return rows[scope].tolist(), scope_parents


def _event(
    trace: ChromeTrace,
    c: _Lists,
    i: int,
    r: int,
    eid: str,
    plan: _Plan,
    scope_ids: dict[int, str],
    args: dict[str, Any],
) -> dict[str, Any]:
    """Row ``r`` (``i`` in ``c``) as an event; ``args``: its args, ``{}`` if none."""
    name = trace.names[c.name[i]]
    cat = trace.categories[c.cat[i]]
    ts = c.ts[i]
    kind, meta = _classify(trace, c, i, r, cat, name, args, plan, scope_ids)
    if kind == "instant":
        meta.setdefault("source_category", trace.raw_categories[c.cat[i]])
        if c.ph[i] == PH_COMPLETE:
            meta["duration_us"] = c.dur[i]
        return {
            "id": eid,
            "type": kind,
            "name": name,
            "timestamp_us": ts,
            "wall_clock": c.start_iso[i],
            "metadata": meta,
        }
    end = ts + c.dur[i]
    return {
        "id": eid,
        "type": kind,
        "name": name,
        "timestamp_start_us": ts,
        "timestamp_end_us": end,
        "wall_clock_start": c.start_iso[i],
        "wall_clock_end": c.end_iso[i],
        "duration_us": end - ts,
        "metadata": meta,
    }


def _args_of(trace: ChromeTrace, rows: np.ndarray) -> Iterator[dict[str, Any]]:
    """The args of each of ``rows`` in turn (``{}``: none), looked up together where they
    are packed."""
    if isinstance(trace.args, PackedMapping):
        return trace.args.get_many(rows, {})
    return (trace.args.get(r, {}) for r in rows.tolist())


def _classify(
    trace: ChromeTrace,
    c: _Lists,
    i: int,
    r: int,
    cat: str,
    name: str,
    args: dict[str, Any],
    plan: _Plan,
    scope_ids: dict[int, str],
) -> tuple[str, dict[str, Any]]:
    if cat in CPU_BUSY and c.ph[i] == PH_COMPLETE:
        return "cpu_call", _cpu_meta(trace, c, i, r, cat, plan, scope_ids)
    if cat == "kernel":
        return "gpu_kernel", _kernel_meta(c, i, name, args)
    if cat == "gpu_memset":
        meta = {**_stream_meta(c, i), "operation": "memset", "bytes": args.get("bytes")}
        return "gpu_kernel", meta
    if cat == "gpu_memcpy":
        return _copy(c, i, name, args)
    if cat == "cpu_instant_event" and name == "[memory]":
        return "memory_event", _memory_meta(args)
    return "instant", {"user_metadata": args} if args else {}


def _cpu_meta(
    trace: ChromeTrace, c: _Lists, i: int, r: int, cat: str, plan: _Plan, scope_ids: dict[int, str]
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "category": cat,
        "process_id": trace.thread_labels[c.pid[i]],
        "thread_id": trace.thread_labels[c.tid[i]],
        "call_depth": int(plan.depth[r]),
        "parent_scope": None,
        "parent_scope_id": None,
    }
    scope = int(plan.parent_scope[r])
    if scope >= 0:
        meta["parent_scope"] = trace.names[int(trace.name[scope])]
        meta["parent_scope_id"] = scope_ids[scope]
    if c.correlation[i] >= 0:
        meta["correlation_id"] = c.correlation[i]
    return meta


def _stream_meta(c: _Lists, r: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "device_id": c.device[r] if c.device[r] >= 0 else None,
        "stream_id": c.stream[r] if c.stream[r] >= 0 else None,
    }
    if c.correlation[r] >= 0:
        meta["correlation_id"] = c.correlation[r]
    return meta


def _launch_fields(args: dict[str, Any]) -> dict[str, Any]:
    """A kernel's launch fields, the last of its metadata (both the dicts and the
    column-wise text take them from here)."""
    occupancy = args.get("est. achieved occupancy %")
    return {
        "grid_dim": args.get("grid"),
        "block_dim": args.get("block"),
        "shared_memory_bytes": args.get("shared memory"),
        "registers_per_thread": args.get("registers per thread"),
        "blocks_per_sm": args.get("blocks per SM"),
        "warps_per_sm": args.get("warps per SM"),
        "occupancy": occupancy / 100.0 if isinstance(occupancy, int | float) else None,
    }


def _launch(args: dict[str, Any]) -> bytes:
    """:func:`_launch_fields` as JSON text, a dict's without its braces."""
    return orjson.dumps(_launch_fields(args))[1:-1]


# A GPU op's event: its metadata's own fields (after the stream's) are the last field.
_GPU_OP = (
    b'{"id":"e%s","type":%s,"name":%s,"timestamp_start_us":%s,"timestamp_end_us":%s,'
    b'"wall_clock_start":"%s%sZ","wall_clock_end":"%s%sZ","duration_us":%s,"metadata":{'
    b'"device_id":%s,"stream_id":%s%s,%s}}'
)
_GPU_OP_NO_WALL = _GPU_OP.replace(
    b'"wall_clock_start":"%s%sZ","wall_clock_end":"%s%sZ"',
    b'"wall_clock_start":null,"wall_clock_end":null',
)


def _kernel_meta(c: _Lists, r: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        **_stream_meta(c, r),
        "operation": "kernel",
        "kernel_type": _kernel_type(name),
        **_launch_fields(args),
    }


@lru_cache(maxsize=4096)
def _kernel_type(name: str) -> str:
    # Traces launch the same few hundred kernels thousands of times; names run to hundreds
    # of characters, which each of kernel_type's patterns scans.
    return kernel_type(name).value


def _copy(c: _Lists, r: int, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    kind, fields = _copy_fields(name, args, c.dur[r])
    return kind, {**_stream_meta(c, r), **fields}


def _copy_fields(name: str, args: dict[str, Any], dur: float) -> tuple[str, dict[str, Any]]:
    """A copy's event type and its metadata after the stream fields."""
    direction = memcpy_direction(name)
    size = args.get("bytes")
    bandwidth = args.get("memory bandwidth (GB/s)")
    if not isinstance(bandwidth, int | float):
        bandwidth = size / (dur * 1e3) if isinstance(size, int | float) and dur > 0 else None
    fields = {
        "bytes": size,
        "kind": memcpy_host_kind(name),
        "throughput_gbps": bandwidth,
        "direction": direction or None,
    }
    if direction == "HtoD":
        return "h2d_copy", fields
    if direction == "DtoH":
        return "d2h_copy", fields
    return "gpu_kernel", {**fields, "operation": f"memcpy_{direction.lower() or 'unknown'}"}


def _memory_meta(args: dict[str, Any]) -> dict[str, Any]:
    size = args.get("Bytes")
    size = size if isinstance(size, int | float) else 0
    return {
        "operation": "malloc" if size >= 0 else "free",
        "bytes": abs(size),
        "address": args.get("Addr"),
        "device_type": args.get("Device Type"),
        "device_id": args.get("Device Id"),
        "total_allocated_bytes": args.get("Total Allocated"),
        "total_reserved_bytes": args.get("Total Reserved"),
        "numa_node": None,
    }


def _scopes(trace: ChromeTrace, plan: _Plan, scope_ids: dict[int, str]) -> list[dict[str, Any]]:
    starts = trace.ts[plan.events]
    children: dict[int, list[str]] = defaultdict(list)
    for child, parent in plan.scope_parent.items():
        children[parent].append(scope_ids[child])
    out = []
    for r in plan.scopes.tolist():
        lo, hi = float(trace.ts[r]), float(trace.ts[r] + trace.dur[r])
        first = int(np.searchsorted(starts, lo, side="left"))
        last = int(np.searchsorted(starts, hi, side="left"))
        parent_row = plan.scope_parent.get(r)
        out.append(
            {
                "id": scope_ids[r],
                "name": trace.names[int(trace.name[r])],
                "parent_id": scope_ids[parent_row] if parent_row is not None else None,
                "child_ids": sorted(children.get(r, []), key=lambda s: int(s[1:])),
                "event_range": [first, last],
                "start_us": lo,
                "end_us": hi,
                "thread": trace.thread_labels[int(trace.tid[r])],
            }
        )
    return out


def _launches(trace: ChromeTrace, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[host call id, GPU op id] by correlation id, in GPU-row order, as the two event
    positions; where several host calls share a correlation id the last row wins."""
    # Event ids are positions; this maps a trace row to its position (-1: not an event).
    position = np.full(len(trace), -1, dtype=np.int64)
    position[events] = np.arange(events.size)
    rows = np.flatnonzero(position >= 0)
    has_corr = rows[trace.correlation[rows] >= 0]
    del rows
    gpu = has_corr[trace.category_mask({"kernel", "gpu_memcpy", "gpu_memset"})[has_corr]]
    api = has_corr[trace.category_mask({"cuda_runtime", "cuda_driver"})[has_corr]]
    backwards = api[::-1]  # np.unique keeps the first of equal keys: the last row
    keys, first = np.unique(trace.correlation[backwards], return_index=True)
    if not keys.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    wanted = trace.correlation[gpu]
    at = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
    found = keys[at] == wanted
    return position[backwards[first[at[found]]]], position[gpu[found]]


def _wall_clock_base(trace: ChromeTrace) -> float | None:
    """Offset (µs) that turns trace timestamps into epoch µs, or None if unknown."""
    base = trace.metadata.get("baseTimeNanoseconds")
    if isinstance(base, int | float):
        return base / 1000.0
    if len(trace) and float(np.min(trace.ts)) >= _EPOCH_US_FLOOR:
        return 0.0
    return None


def _iso_column(base: float | None, ts_us: np.ndarray) -> list[str | None]:
    """ISO-8601 UTC wall clocks (µs) of trace timestamps, vectorised: per-event datetime
    objects cost more than the rest of the conversion together."""
    if base is None:
        return [None] * ts_us.size
    return list(_iso(base, ts_us))


def _iso(base: float, ts_us: np.ndarray) -> list[str]:
    """``_iso_column`` with a known base."""
    if not ts_us.size:  # no digits: the split below would give one empty piece
        return []
    seconds, which, digits = _iso_split(base, ts_us)
    prefix = (seconds + ".")[which].tolist()
    return [p + d + "Z" for p, d in zip(prefix, digits.decode().split(",1"), strict=True)]


def _iso_parts(base: float, ts_us: np.ndarray) -> tuple[list[bytes], list[bytes]]:
    """The ISO wall clocks as UTF-8 without their ``Z``, in two parts: up to the second's
    ``.``, and the microsecond digits."""
    if not ts_us.size:
        return [], []
    seconds, which, digits = _iso_split(base, ts_us)
    prefix = np.array([s.encode() + b"." for s in seconds.tolist()], dtype=object)
    return prefix[which].tolist(), digits.split(b",1")


def _iso_split(base: float, ts_us: np.ndarray) -> tuple[np.ndarray, np.ndarray, bytes]:
    """(each distinct second's ISO text, which one each timestamp falls in, the digits of
    the microseconds). A trace spans a few seconds: each is formatted once, and the
    digits come from one orjson dump, zero-padded by adding 10**6 (split them on ``,1``)."""
    if not ts_us.size:
        return np.array([], dtype=object), np.zeros(0, dtype=np.int64), b""
    us = np.round(base + ts_us).astype(np.int64)
    sec, micro = np.divmod(us, 1_000_000)
    seconds, which = _distinct(sec)
    text = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s").astype(object)
    digits = orjson.dumps(micro + 1_000_000, option=orjson.OPT_SERIALIZE_NUMPY)
    return text, which, digits[2:-1]


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers; where they span a range
    shorter than they are many (a chunk's seconds), by marking it instead of sorting."""
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= values.size:
        return np.unique(values, return_inverse=True)
    offset = values - lo
    present = np.zeros(hi - lo + 1, dtype=bool)
    present[offset] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present) + lo, rank[offset]


def _trace_metadata(trace: ChromeTrace, created: datetime | None) -> dict[str, Any]:
    created = created or datetime.now(UTC)
    timed = (trace.ph == PH_COMPLETE) & ~trace.category_mask({"trace"})
    # Not trace.end: in the forked writer that would be a whole-trace column of its own.
    ts = trace.ts[timed]
    span = float((ts + trace.dur[timed]).max() - ts.min()) if timed.any() else 0.0
    props = trace.device_properties
    info = trace.metadata.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    cuda = trace.metadata.get("cuda_runtime_version") or trace.metadata.get("cuda_driver_version")
    return {
        "timestamp_created": created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "duration_ms": span / 1000.0,
        "cuda_version": str(cuda) if cuda is not None else None,
        "python_version": None,
        "torch_version": None,
        "gpu_model": props[0].get("name") if props else None,
        "hostname": trace.metadata.get("host_name")
        if isinstance(trace.metadata.get("host_name"), str)
        else None,
        "source_file": trace.path.name,
        "rank": trace.rank,
        "world_size": info.get("world_size") if isinstance(info.get("world_size"), int) else None,
        "schema_version": trace.metadata.get("schemaVersion"),
    }


def _system_info(trace: ChromeTrace) -> dict[str, Any]:
    return {
        "cpu_count": None,
        "cpu_model": None,
        "numa_nodes": None,
        "ram_gb": None,
        "gpu_count": len(trace.device_properties),
    }
