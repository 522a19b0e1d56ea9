"""Op → kernel attribution: which host op launched each GPU kernel, memcpy and memset.

Each GPU event is tied to the runtime call that launched it, trying in turn:

1. ``correlation``: the runtime / driver call with the GPU event's correlation id. When
   several launch calls carry that id (merged or rewritten traces, a wrapped counter), the
   id does not say which: ``repeated_correlation`` links by time instead — the id's GPU
   events, in start order, to its launch calls in launch order when there are as many and
   none would start before its launch, else each to the last of them that started before
   it. Those events are counted (:meth:`Attribution.repeated_correlation`) and the summary
   says how much GPU time was linked so;
2. ``flow``: the ac2g flow that ends where the GPU event starts (same GPU thread and
   timestamp), back to the runtime call enclosing the flow's start on its host thread;
3. ``external_id``: no launch call in the trace, but a host op with the GPU event's
   ``External id`` (Kineto writes the launching op's id on both).

The launch call's op is the innermost host op (``cpu_op``) enclosing it on its thread (time
nesting). From the op: its recorded input shapes and dtypes, its ``nn.Module`` path (the
``Module Hierarchy`` arg, else the enclosing ``nn.Module:`` Python events), its innermost
Python frame, and the ``ProfilerStep#N`` whose span holds the launch.

Kernels replayed by a CUDA graph launch (``cudaGraphLaunch``) were launched by no op at
replay time: they stay unattributed (``graph_replay``) unless a capture trace attributes
them (:mod:`.cuda_graphs`). Every GPU event ends with exactly one status, so per-op totals
plus the unattributed buckets add up to the trace's GPU time, each event counted once.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from kerneltracer.analysis.nesting import Nesting, thread_keys
from kerneltracer.analysis.timeline.load.loader import (
    PH_COMPLETE,
    ChromeTrace,
    release_free_heap,
)
from kerneltracer.analysis.timeline.model.arrays import isin_sorted, sorted_unique
from kerneltracer.analysis.timeline.model.categories import CUDA_API, GPU_ACTIVITY
from kerneltracer.core.heap import release_after

METHODS = ("correlation", "flow", "external_id", "graph_capture", "repeated_correlation")
CORRELATION, FLOW, EXTERNAL_ID, GRAPH_CAPTURE, REPEATED_CORRELATION = range(5)
# Why a GPU event has no op (index into STATUSES; ATTRIBUTED = it has one).
STATUSES = ("attributed", "graph_replay", "no_launch", "outside_ops")
ATTRIBUTED, GRAPH_REPLAY, NO_LAUNCH, OUTSIDE_OPS = range(4)
STATUS_TEXT = {
    "graph_replay": "inside CUDA graph replays without capture data",
    "no_launch": "launch not in the trace (before it started, or not recorded)",
    "outside_ops": "launched outside any profiled op",
}
_GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch")
_MODULE_PREFIX = "nn.Module: "
_STEP = re.compile(r"ProfilerStep#(\d+)")
_BATCH = 4096  # op instances made at a time (their decoded args live together)
# Instance batches between trims of the heap on a big trace (``release_after``): at 3M
# events each phase's short-lived arrays and decoded args landed in pages an earlier trim
# had handed back, and stayed resident once freed (+20-30 MiB a phase).
_TRIM_EVERY = 8


@dataclass(slots=True)  # made on demand from OpInstances' columns, a few at a time
class OpInstance:
    """One call of a host op, as attribution reports it (``dims``, ``types`` and
    ``concrete`` are shared between the instances that recorded equal ones: read only)."""

    name: str
    dims: Any = None  # Input Dims as recorded (None: not recorded)
    types: Any = None  # Input type as recorded
    concrete: Any = None  # Concrete Inputs as recorded
    module: str = ""  # module path, "" when none was recorded
    frame: str = ""  # innermost Python frame, "" when stacks were not recorded
    parent: int = -1  # the enclosing op's instance, -1 at the top
    step: int = -1  # ProfilerStep number, -1 outside steps
    kind: str = "op"  # "annotation": a user annotation around a launch outside any op


@dataclass
class OpInstances:
    """The op instances as columns, instance ``i`` at position ``i`` of each (one object
    per instance, 280k on a 3M-event trace, held ~50 MiB more than these lists of shared
    values and two int64 arrays). ``instances[i]`` is an :class:`OpInstance` made on
    demand: a copy, changing it changes nothing here."""

    name: list[str] = field(default_factory=list)
    dims: list[Any] = field(default_factory=list)
    types: list[Any] = field(default_factory=list)
    concrete: list[Any] = field(default_factory=list)
    module: list[str] = field(default_factory=list)
    frame: list[str] = field(default_factory=list)
    parent: array[int] = field(default_factory=lambda: array("q"))
    step: array[int] = field(default_factory=lambda: array("q"))
    kind: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.name)

    def __getitem__(self, i: int) -> OpInstance:
        return OpInstance(
            name=self.name[i],
            dims=self.dims[i],
            types=self.types[i],
            concrete=self.concrete[i],
            module=self.module[i],
            frame=self.frame[i],
            parent=self.parent[i],
            step=self.step[i],
            kind=self.kind[i],
        )

    def __iter__(self) -> Iterator[OpInstance]:
        return (self[i] for i in range(len(self)))

    def grow(self, n: int) -> None:
        """Room for ``n`` more instances, their values set in place after: grown a batch
        at a time, the nine columns' reallocations left ~70 MiB of heap holes at 3M
        events."""
        for column in (self.name, self.module, self.frame, self.kind):
            column.extend(repeat("", n))
        for values in (self.dims, self.types, self.concrete):
            values.extend(repeat(None, n))
        for ints in (self.parent, self.step):
            ints.frombytes(bytes(8 * n))

    def append(self, inst: OpInstance) -> None:
        self.name.append(inst.name)
        self.dims.append(inst.dims)
        self.types.append(inst.types)
        self.concrete.append(inst.concrete)
        self.module.append(inst.module)
        self.frame.append(inst.frame)
        self.parent.append(inst.parent)
        self.step.append(inst.step)
        self.kind.append(inst.kind)


@dataclass
class Attribution:
    """Per GPU event (parallel arrays, ``rows`` index the trace) and the op instances."""

    trace: ChromeTrace
    rows: np.ndarray
    launch: np.ndarray  # trace row of the launching runtime call, -1 when not found
    op: np.ndarray  # index into ``instances``, -1 when unattributed
    method: np.ndarray  # index into METHODS, -1 when no launch / op was found
    status: np.ndarray  # index into STATUSES
    graph_launch: np.ndarray  # trace row of the graph launch that replayed it, -1 if none
    step: np.ndarray  # ProfilerStep number, -1 when outside every step
    # True where the GPU event's correlation id is carried by several launch calls
    repeated: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    instances: OpInstances = field(default_factory=OpInstances)
    host_ops: int = 0  # host op (cpu_op) events in the trace: 0 in a GPU-only trace
    make_instance: Callable[[int], int] | None = field(default=None, repr=False)

    def instance_of(self, row: int) -> int:
        """The op instance of a host op row (made now if no GPU event needed it yet)."""
        if self.make_instance is None:
            raise ValueError("this attribution cannot make op instances")
        return self.make_instance(row)

    @property
    def dur(self) -> np.ndarray:
        return self.trace.dur[self.rows]

    @property
    def total_us(self) -> float:
        return float(self.dur.sum())

    @property
    def attributed_us(self) -> float:
        return float(self.dur[self.status == ATTRIBUTED].sum())

    @property
    def attributed_share(self) -> float | None:
        """Fraction of GPU time attributed to ops; None without GPU events."""
        total = self.total_us
        return self.attributed_us / total if total > 0 else None

    def repeated_correlation(self) -> dict[str, Any]:
        """GPU events whose correlation id several launch calls carry: how many, their GPU
        time and how many such ids (linked by time, or not at all)."""
        rep = self.repeated if self.repeated.size else np.zeros(self.rows.size, dtype=bool)
        ids = sorted_unique(self.trace.correlation[self.rows[rep]])
        return {
            "gpu_events": int(rep.sum()),
            "gpu_time_us": round(float(self.dur[rep].sum()), 3),
            "ids": int(ids.size),
        }

    def linked_by_time(self) -> tuple[int, float]:
        """(GPU events, GPU µs) attributed through a repeated correlation id."""
        sel = (self.method == REPEATED_CORRELATION) & (self.status == ATTRIBUTED)
        return int(sel.sum()), float(self.dur[sel].sum())

    def unattributed_us(self) -> dict[str, float]:
        return {
            STATUSES[s]: float(self.dur[self.status == s].sum())
            for s in range(1, len(STATUSES))
            if (self.status == s).any()
        }

    def queue_delay(self) -> np.ndarray:
        """Per GPU event, start minus its launch call's end, clipped at 0 (HTA's launch
        delay); NaN without a launch call."""
        out = np.full(self.rows.size, np.nan)
        has = self.launch >= 0
        t = self.trace
        out[has] = np.maximum(t.ts[self.rows[has]] - t.end[self.launch[has]], 0.0)
        return out

    def launch_overhead(self) -> np.ndarray:
        """Per GPU event, its launch call's CPU duration; NaN without a launch call."""
        out = np.full(self.rows.size, np.nan)
        has = self.launch >= 0
        out[has] = self.trace.dur[self.launch[has]]
        return out


def attribute(trace: ChromeTrace, *, more_instances: bool = True) -> Attribution:
    """Attribute every GPU event of ``trace`` (loaded with ``op_args=True`` for shapes,
    module paths and flows; without, ops are found by correlation and nesting only).

    ``more_instances``: whether :meth:`Attribution.instance_of` can make instances of ops
    no GPU event needed (what a capture trace's join asks for); it keeps the op nesting
    and a row index alive with the attribution, ~80 MiB at 3M events."""
    complete = trace.ph == PH_COMPLETE
    rows = np.flatnonzero(complete & trace.category_mask(GPU_ACTIVITY) & (trace.stream >= 0))
    thread = thread_keys(trace.pid, trace.tid)
    links = _Links.unlinked(trace, rows)
    launch, method = links.launch, links.method
    runtime = np.flatnonzero(complete & trace.category_mask(CUDA_API))
    repeated = _by_correlation(links, runtime)
    if trace.flow_launch is not None:
        _by_settled_flow(links, *trace.flow_launch)
    else:
        _by_flow(links, runtime, thread)
    # Each whole-trace temporary is dropped once used: the instances, made last, are the
    # peak of a run at 3M events, and what is still alive then adds to it.
    del runtime
    op_rows = np.flatnonzero(complete & trace.category_mask({"cpu_op"}))
    ops = Nesting(op_rows, trace.ts, trace.end, thread)
    op_row = np.full(rows.size, -1, dtype=np.int64)
    has = launch >= 0
    lrows = launch[has]
    op_row[has] = ops.innermost(thread[lrows], trace.ts[lrows], trace.end[lrows])
    _by_external_id(links, op_rows, op_row)
    host_ops = int(op_rows.size)
    del op_rows, has
    graph_launch = _graph_launches(trace, launch)
    status = np.full(rows.size, ATTRIBUTED, dtype=np.int8)
    status[op_row < 0] = OUTSIDE_OPS
    status[(launch < 0) & (op_row < 0)] = NO_LAUNCH
    status[graph_launch >= 0] = GRAPH_REPLAY
    op_row[graph_launch >= 0] = -1  # the op around a graph launch did not launch its kernels
    # A launch outside every op (a fused optimizer calling the runtime itself) is still
    # shown under the user annotation around it, but not counted as attributed to an op.
    outside = np.flatnonzero(status == OUTSIDE_OPS)
    if outside.size:
        notes = _annotations(trace, thread)
        lrows = launch[outside]
        op_row[outside] = notes.innermost(thread[lrows], trace.ts[lrows], trace.end[lrows])
        del notes
    steps = StepSpans(trace)
    when = np.where(launch >= 0, trace.ts[np.maximum(launch, 0)], trace.ts[rows])
    # The links' lookups are freed by now but glibc keeps their pages (~70 MiB at 3M
    # events): handed back before the instances, the last and largest allocation here.
    release_free_heap()
    instances = _Instances(trace, ops, thread, steps)
    del thread, lrows  # not needed while the instances are made, the run's peak at 3M events
    op = instances.of_rows(op_row)
    return Attribution(
        trace=trace,
        rows=rows,
        launch=launch,
        op=op,
        method=method,
        status=status,
        graph_launch=graph_launch,
        step=steps.at(when),
        repeated=repeated,
        instances=instances.items,
        host_ops=host_ops,
        make_instance=instances.of if more_instances else None,
    )


def settle_flows(trace: ChromeTrace) -> None:
    """Replace ``trace.flows`` by what :func:`attribute` reads of them (``flow_launch``):
    the GPU events that only their flow links to a launch call, and those calls.

    The flows are five columns over every flow event (27 MiB at 3M events) and only
    attribution reads them, last of the analyses: settled as soon as the trace is loaded,
    they are not carried through the InferScope writer and the other analyses, whose peaks
    they raised. The links are those :func:`attribute` makes itself, correlation first."""
    if trace.flows is None:
        return
    complete = trace.ph == PH_COMPLETE
    rows = np.flatnonzero(complete & trace.category_mask(GPU_ACTIVITY) & (trace.stream >= 0))
    links = _Links.unlinked(trace, rows)
    runtime = np.flatnonzero(complete & trace.category_mask(CUDA_API))
    _by_correlation(links, runtime)
    _by_flow(links, runtime, thread_keys(trace.pid, trace.tid))
    by_flow = links.method == FLOW
    trace.flow_launch = (rows[by_flow], links.launch[by_flow])
    trace.flows = None


def _by_settled_flow(links: _Links, flow_rows: np.ndarray, calls: np.ndarray) -> None:
    """:func:`_by_flow`, from the links :func:`settle_flows` kept (``flow_rows`` sorted)."""
    todo = np.flatnonzero(links.launch < 0)
    if not todo.size or not flow_rows.size:
        return
    at = np.minimum(np.searchsorted(flow_rows, links.rows[todo]), flow_rows.size - 1)
    hit = flow_rows[at] == links.rows[todo]
    links.link(todo[hit], calls[at[hit]], FLOW)


def _annotations(trace: ChromeTrace, thread: np.ndarray) -> Nesting:
    step_names = [i for i, n in enumerate(trace.names) if _STEP.match(n)]
    rows = np.flatnonzero(
        (trace.ph == PH_COMPLETE)
        & trace.category_mask({"user_annotation"})
        & ~trace.name_mask(step_names)
    )
    return Nesting(rows, trace.ts, trace.end, thread)


@dataclass(frozen=True)
class _Links:
    """The GPU events being attributed (``rows`` of ``trace``) and what each passes found so
    far: the row of the call that launched it (-1: none yet) and by which method."""

    trace: ChromeTrace
    rows: np.ndarray
    launch: np.ndarray
    method: np.ndarray

    @classmethod
    def unlinked(cls, trace: ChromeTrace, rows: np.ndarray) -> _Links:
        return cls(
            trace, rows, np.full(rows.size, -1, dtype=np.int64), np.full(rows.size, -1, np.int8)
        )

    def link(self, events: np.ndarray, calls: np.ndarray, how: int) -> None:
        """The GPU events ``events`` (a mask of, or positions in, ``rows``) were launched by
        ``calls``."""
        self.launch[events] = calls
        self.method[events] = how


def _by_correlation(links: _Links, runtime: np.ndarray) -> np.ndarray:
    """Link by correlation id; returns the mask of GPU events whose id is repeated (carried
    by several launch calls), which are linked by time instead."""
    trace, rows = links.trace, links.rows
    repeated = np.zeros(rows.size, dtype=bool)
    rt = runtime[trace.correlation[runtime] >= 0]
    if not rt.size or not rows.size:
        return repeated
    order = np.argsort(trace.correlation[rt], kind="stable")
    calls = rt[order]
    keys = trace.correlation[calls]
    corr = trace.correlation[rows]
    first = np.searchsorted(keys, corr, side="left")
    count = np.searchsorted(keys, corr, side="right") - first
    hit = (count == 1) & (corr >= 0)
    links.link(hit, calls[first[hit]], CORRELATION)
    repeated = (count > 1) & (corr >= 0)
    if repeated.any():
        _by_launch_order(links, calls, first, count, repeated)
    return repeated


def _by_launch_order(
    links: _Links, calls: np.ndarray, first: np.ndarray, count: np.ndarray, repeated: np.ndarray
) -> None:
    """GPU events of a repeated correlation id, linked to that id's launch calls by time
    (see the module docstring): a kernel never starts before the call that launched it."""
    trace, rows = links.trace, links.rows
    todo = np.flatnonzero(repeated)
    todo = todo[np.lexsort((trace.ts[rows[todo]], trace.correlation[rows[todo]]))]
    ids = trace.correlation[rows[todo]]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    for group in np.split(todo, starts[1:]):
        q0 = int(group[0])
        cands = calls[first[q0] : first[q0] + count[q0]]
        cands = cands[np.argsort(trace.ts[cands], kind="stable")]
        gpu_ts, call_ts = trace.ts[rows[group]], trace.ts[cands]
        if group.size == cands.size and bool((gpu_ts >= call_ts).all()):
            picked = cands
        else:
            before = np.searchsorted(call_ts, gpu_ts, side="right") - 1
            picked = np.where(before >= 0, cands[np.maximum(before, 0)], -1)
        ok = picked >= 0
        links.link(group[ok], picked[ok], REPEATED_CORRELATION)


def _by_flow(links: _Links, runtime: np.ndarray, thread: np.ndarray) -> None:
    trace, rows = links.trace, links.rows
    flows = trace.flows
    todo = np.flatnonzero(links.launch < 0)
    if flows is None or not todo.size or not flows["id"].size:
        return
    start, fid, fts = flows["start"], flows["id"], flows["ts"]
    q_rows = rows[todo]
    q_thread, q_ts = thread[q_rows].tolist(), trace.ts[q_rows].tolist()
    # The lookups are built only from the flows an unlinked GPU event can meet: an end at
    # one of their start times, a start with one of the ids those ends give. Built over
    # every flow they held ~240 MiB at 3M events (op attribution's peak), where
    # correlation ids had already linked all or most GPU events.
    e_idx = np.flatnonzero(~start)
    # np.isin sorted both sides' concatenation with an int64 order (+55 MiB at 3M events,
    # settle_flows' peak); the distinct query times alone are a small sorted table.
    e_idx = e_idx[isin_sorted(fts[e_idx], sorted_unique(trace.ts[q_rows]))]
    e_thread = thread_keys(flows["pid"][e_idx], flows["tid"][e_idx])
    ends = dict(
        zip(
            zip(e_thread.tolist(), fts[e_idx].tolist(), strict=True),
            fid[e_idx].tolist(),
            strict=True,
        )
    )
    flow_ids = [ends.get(key) for key in zip(q_thread, q_ts, strict=True)]
    needed = np.array([i for i in flow_ids if i is not None], dtype=fid.dtype)
    s_idx = np.flatnonzero(start)
    s_idx = s_idx[isin_sorted(fid[s_idx], sorted_unique(needed))]
    # A flow id that starts twice does not say which start a GPU event's flow came from.
    ids, times = np.unique(fid[s_idx], return_counts=True)
    once = set(ids[times == 1].tolist())
    s_thread = thread_keys(flows["pid"][s_idx], flows["tid"][s_idx])
    begins = {
        i: (k, t)
        for k, t, i in zip(
            s_thread.tolist(),
            fts[s_idx].tolist(),
            fid[s_idx].tolist(),
            strict=True,
        )
        if i in once
    }
    found: list[tuple[int, int, float]] = []
    for q, flow_id in zip(todo.tolist(), flow_ids, strict=True):
        begin = begins.get(flow_id) if flow_id is not None else None
        if begin is not None:
            found.append((q, *begin))
    if not found:
        return
    gpu_pos = np.array([f[0] for f in found], dtype=np.int64)
    host = np.array([f[1] for f in found], dtype=np.int64)
    at = np.array([f[2] for f in found], dtype=np.float64)
    calls = Nesting(runtime, trace.ts, trace.end, thread).innermost(host, at, at)
    ok = calls >= 0
    links.link(gpu_pos[ok], calls[ok], FLOW)


_NO_ROWS = np.empty(0, dtype=np.int64)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _by_external_id(links: _Links, op_rows: np.ndarray, op_row: np.ndarray) -> None:
    """GPU events still unlinked, charged straight to the op carrying their External id (the
    launch call stays unknown)."""
    trace = links.trace
    todo = np.flatnonzero(links.launch < 0)
    if not todo.size or not trace.op_args:
        return
    # The asking GPU events' positions and their ids, the ids as the sorted lookups below
    # take them.
    asked, asked_ids = array("q"), array("q")
    for q in todo.tolist():
        ext = trace.args.get(int(links.rows[q]), {}).get("External id")
        if type(ext) is int and _INT64_MIN <= ext <= _INT64_MAX:  # no op's id is outside
            asked.append(q)
            asked_ids.append(ext)
    release_after(len(trace))  # the looked-up args, decoded and freed
    if not asked:
        return
    wanted_ids = np.frombuffer(asked_ids, dtype=np.int64)
    # Only the batches of ops that can carry a queried id are decoded (their shapes skipped).
    id_rows, ids = trace.op_args.external_id_rows(set(sorted_unique(wanted_ids).tolist()))
    # Searched from the side of the (few) rows with a wanted id, op_rows being sorted: from
    # every op's side, op-sized positions and masks were ~30 MiB of temporaries at 3M.
    is_op = isin_sorted(id_rows, op_rows)
    rows, exts = id_rows[is_op], ids[is_op]
    # Only the ops with an id some GPU event asks for: a dict over every op's id was
    # ~100 MiB at 3M events, for the few GPU events that correlation and flows left.
    # isin_sorted, not np.isin: its np.unique imports numpy.ma on first use (~7 ms a run).
    wanted = isin_sorted(exts, sorted_unique(wanted_ids))
    by_id: dict[int, int] = {}
    for r, ext in zip(rows[wanted].tolist(), exts[wanted].tolist(), strict=True):
        by_id.setdefault(ext, r)  # the first (outermost) op with the id
    for q, ext in zip(asked, asked_ids, strict=True):
        r = by_id.get(ext)
        if r is not None:
            op_row[q] = r
            links.method[q] = EXTERNAL_ID


def _graph_launches(trace: ChromeTrace, launch: np.ndarray) -> np.ndarray:
    out = np.full(launch.size, -1, dtype=np.int64)
    graph_names = [i for i, n in enumerate(trace.names) if _GRAPH_LAUNCH.match(n)]
    if not graph_names:
        return out
    has = launch >= 0
    is_graph = np.zeros(launch.size, dtype=bool)
    is_graph[has] = trace.name_mask(graph_names, launch[has])
    out[is_graph] = launch[is_graph]
    return out


class StepSpans:
    """``ProfilerStep#N`` spans: the step a host timestamp falls in."""

    def __init__(self, trace: ChromeTrace) -> None:
        ids = {i: int(m.group(1)) for i, n in enumerate(trace.names) if (m := _STEP.match(n))}
        rows = (
            np.flatnonzero(trace.name_mask(ids) & (trace.ph == PH_COMPLETE))
            if ids
            else np.empty(0, dtype=np.int64)
        )
        order = np.argsort(trace.ts[rows], kind="stable")
        rows = rows[order]
        self.ts = trace.ts[rows]
        self.end = trace.end[rows]
        self.number = np.array([ids[int(n)] for n in trace.name[rows]], dtype=np.int64)

    def at(self, ts: np.ndarray) -> np.ndarray:
        out = np.full(ts.size, -1, dtype=np.int64)
        if not self.ts.size:
            return out
        pos = np.searchsorted(self.ts, ts, side="right") - 1
        ok = (pos >= 0) & (ts <= self.end[np.maximum(pos, 0)])
        out[ok] = self.number[pos[ok]]
        return out


class _Instances:
    """Op instances made on demand from host op rows, with their enclosing ops."""

    def __init__(
        self, trace: ChromeTrace, ops: Nesting, thread: np.ndarray, steps: StepSpans
    ) -> None:
        # The thread keys are not kept: one int64 a trace row (23 MiB at 3M events) for as
        # long as ``make_instance`` lives, where the ops' keys are made from their own rows.
        self.trace, self.ops, self.steps = trace, ops, steps
        self.items = OpInstances()
        # Row -> its instance (-1: none yet), over every row: as a dict of the rows made it
        # held ~80 MiB at 3M events (an entry and two int objects a row) for as long as the
        # attribution lives (``make_instance`` keeps it).
        self.index = np.full(len(trace), -1, dtype=np.int32)
        complete = trace.ph == PH_COMPLETE
        py = np.flatnonzero(complete & trace.category_mask({"python_function"}))
        self.python = Nesting(py, trace.ts, trace.end, thread) if py.size else None
        self._forward: dict[int, int] | None = None  # sequence number -> first op row

    def of(self, row: int) -> int:
        """The instance of host op ``row``, made (with its enclosing ops) on first need."""
        found: int = self.index.item(row)
        if found >= 0:
            return found
        made: int = self.of_rows(np.array([row], dtype=np.int64)).item(0)
        return made

    def of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The instances of host op ``rows`` (-1 stays -1), made with their enclosing ops
        as :meth:`of` row by row would make them: for each row in turn, its ops not made
        yet, outermost first (the numbering the op table and the capture join rely on).

        The order is walked in Python, the instances' columns (names, parents, steps,
        args, Python context) taken for all of them at once: made one at a time, numpy
        scalars and a lookup per column were most of attribution's time."""
        index = self.index
        wanted = rows[rows >= 0]
        if wanted.size:
            order = self._new_rows(wanted)
            release_after(len(self.trace))
            self._make(order)
        out = np.full(rows.size, -1, dtype=np.int64)
        out[rows >= 0] = index[wanted]
        return out

    def _new_rows(self, wanted: np.ndarray) -> np.ndarray:
        """The rows to make for ``wanted`` (host op rows), in the order to make them."""
        index, ops = self.index, self.ops
        first_rows, first_at = np.unique(wanted, return_index=True)
        fresh = index[first_rows] < 0
        seq = first_rows[fresh][np.argsort(first_at[fresh], kind="stable")]
        is_op = np.isin(self.trace.cat[seq], self._op_cats())
        pos = np.full(seq.size, -1, dtype=np.int64)
        pos[is_op] = ops.positions(seq[is_op])
        # Flat arrays, not dicts of rows: a dict and a set over the 280k instances of a
        # 3M-event trace held ~55 MiB at attribution's peak.
        parent_pos, op_rows = ops.parent_pos, ops.rows
        taken = np.zeros(len(ops), dtype=bool)  # per op (nesting position): ordered here
        # One array a batch, joined at the end: one array grown row by row was moved by
        # realloc into fresh heap pages again and again (+30 MiB resident at 3M events for
        # its final 2 MiB).
        parts: list[array[int]] = []
        # Iterative, outermost first: a trace nesting ops thousands deep must not meet
        # Python's recursion limit. A batch of rows as Python ints at a time.
        for at in range(0, seq.size, _BATCH):
            part = slice(at, at + _BATCH)
            order = array("q")
            parts.append(order)
            for row, p in zip(seq[part].tolist(), pos[part].tolist(), strict=True):
                if p < 0:  # an annotation: no enclosing op
                    order.append(row)
                    continue
                if taken.item(p):  # made as an op enclosing an earlier row
                    continue
                taken[p] = True
                chain = [row]
                up = parent_pos.item(p)
                while up >= 0 and not taken.item(up):
                    parent_row = op_rows.item(up)
                    if index.item(parent_row) >= 0:
                        break
                    taken[up] = True
                    chain.append(parent_row)
                    up = parent_pos.item(up)
                chain.reverse()
                order.extend(chain)
        return np.concatenate([np.frombuffer(p, dtype=np.int64) for p in parts if p] or [_NO_ROWS])

    def _op_cats(self) -> np.ndarray:
        return np.array(
            [i for i, c in enumerate(self.trace.categories) if c == "cpu_op"], dtype=np.int32
        )

    def _make(self, rows: np.ndarray) -> None:
        """Instances for ``rows``, enclosing ops before the ops inside them."""
        start = len(self.items)
        self.index[rows] = np.arange(start, start + rows.size, dtype=np.int32)
        self.items.grow(rows.size)
        # A batch at a time: every row's decoded args at once were ~100 MiB at 3M events.
        for n, at in enumerate(range(0, rows.size, _BATCH), 1):
            self._make_batch(rows[at : at + _BATCH], start + at)
            if n % _TRIM_EVERY == 0:
                release_after(len(self.trace))

    def _make_batch(self, rows: np.ndarray, first: int) -> None:
        """Instances ``first`` on (their room made) for ``rows``."""
        t, items = self.trace, self.items
        end = first + rows.size
        is_op = np.isin(t.cat[rows], self._op_cats())
        parent_rows = np.full(rows.size, -1, dtype=np.int64)
        parent_rows[is_op] = self.ops.parents(rows[is_op])
        parents = np.where(parent_rows >= 0, self.index[np.maximum(parent_rows, 0)], -1)
        args = list(t.op_args.get_many(rows))
        names = t.names
        items.name[first:end] = [names[n] for n in t.name[rows].tolist()]
        items.dims[first:end] = [a.input_dims if a is not None else None for a in args]
        items.types[first:end] = [a.input_types if a is not None else None for a in args]
        items.concrete[first:end] = [a.concrete_inputs if a is not None else None for a in args]
        items.parent[first:end] = array("q", parents.astype(np.int64).tobytes())
        items.step[first:end] = array("q", self.steps.at(t.ts[rows]).tobytes())
        items.kind[first:end] = ["op" if op else "annotation" for op in is_op.tolist()]
        # Equal paths as one string: each op's Module Hierarchy is decoded as its own.
        shared: dict[str, str] = {}
        contexts = self._python_contexts(rows)
        for i, (row, op, parent, a, (module, frame)) in enumerate(
            zip(rows.tolist(), is_op.tolist(), parents.tolist(), args, contexts, strict=True),
            first,
        ):
            if a is not None and isinstance(a.module_hierarchy, str) and a.module_hierarchy:
                module = shared.setdefault(a.module_hierarchy, a.module_hierarchy)
            if not module and op and self.python is not None:
                # its parent's module is in the column already: parents come first
                module = self._backward_module(row, parent)
            items.module[i] = module
            items.frame[i] = frame

    def _backward_module(self, row: int, parent: int) -> str:
        """An autograd op's module: that of the forward op with its sequence number (the
        backward thread runs outside every module), marked ``(backward)``."""
        if parent >= 0:  # the enclosing op already looked (and its children share it)
            return self.items.module[parent]
        a = self.trace.op_args.get(row)
        seq = a.sequence_number if a is not None else None
        if type(seq) is not int:
            return ""
        forward = self.forward_rows().get(seq, row)
        if forward == row:
            return ""
        module = self._python_context(forward)[0]
        return f"{module} (backward)" if module else ""

    def forward_rows(self) -> dict[int, int]:
        """Sequence number -> the first op row carrying it (the forward op)."""
        if self._forward is None:
            t = self.trace
            first: dict[int, int] = {}
            _, _, rows, seqs = t.op_args.int_ids()
            order = np.argsort(t.ts[rows], kind="stable")
            for row, seq in zip(rows[order].tolist(), seqs[order].tolist(), strict=True):
                if seq >= 0:
                    first.setdefault(seq, row)
            self._forward = first
        return self._forward

    def _python_context(self, row: int) -> tuple[str, str]:
        """(module path, innermost frame) from the Python events enclosing the op."""
        return self._python_contexts(np.array([row], dtype=np.int64))[0]

    def _python_contexts(self, rows: np.ndarray) -> list[tuple[str, str]]:
        """:meth:`_python_context` of each of ``rows``, the enclosing events found at once
        (ops under the same innermost Python event share its answer)."""
        if self.python is None:
            return [("", "")] * rows.size
        t = self.trace
        thread = thread_keys(t.pid[rows], t.tid[rows])
        inner = self.python.innermost(thread, t.ts[rows], t.end[rows])
        found: dict[int, tuple[str, str]] = {-1: ("", "")}
        out = []
        for r in inner.tolist():
            got = found.get(r)
            if got is None:
                chain = [r, *self.python.ancestors(r)]
                names = [t.names[int(t.name[c])] for c in chain]
                modules = [n[len(_MODULE_PREFIX) :] for n in names if n.startswith(_MODULE_PREFIX)]
                frame = next((n for n in names if not n.startswith(_MODULE_PREFIX)), "")
                got = found[r] = (".".join(reversed(modules)), frame)
            out.append(got)
        return out
