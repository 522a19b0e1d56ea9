"""Kernels replayed by CUDA graph launches, attributed from a capture-time trace.

At replay time a ``cudaGraphLaunch`` starts every kernel of the graph and no op runs, so
the replay trace alone cannot say which op each kernel belongs to (attribution marks them
``graph_replay``). The ops are in a trace of the capture, or of an eager run of the same
code, joined to each replay here, in one of two ways:

- **by kernel name**: the capture trace ran its kernels (an eager warm-up profiled, or a
  capture whose kernels executed): its attributed kernels, in launch order, are searched
  for the replay's kernel names in GPU start order; the first window with the same names
  gives each replayed kernel its op;
- **by launch order**: a trace of the capture itself has launch calls but no kernels (a
  captured launch executes nothing). Each capture region (``cudaStreamBeginCapture`` to
  ``cudaStreamEndCapture`` on a thread) whose number of launches equals the replay's
  number of kernels gives them their ops in order. Regions are used in order, each replay
  taking the first region of its size; with several graphs of the same size this is a
  guess, and :class:`GraphJoin` says how many replays were joined this way.

A replay neither finds stays ``graph_replay``: reported as such, never hidden.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kerneltracer.analysis.timeline.attribution import (
    ATTRIBUTED,
    GRAPH_CAPTURE,
    GRAPH_REPLAY,
    Attribution,
    OpInstance,
)
from kerneltracer.analysis.timeline.categories import CUDA_API
from kerneltracer.analysis.timeline.loader import PH_COMPLETE
from kerneltracer.analysis.timeline.nesting import Nesting, thread_keys

LAUNCH_CALLS = re.compile(
    r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|"
    r"cudaMemcpyAsync|cudaMemsetAsync|hipLaunchKernel|hipExtModuleLaunchKernel|"
    r"hipModuleLaunchKernel|hipMemcpyAsync|hipMemsetAsync)"
)
_BEGIN = re.compile(r"^(cuda|hip)StreamBeginCapture")
_END = re.compile(r"^(cuda|hip)StreamEndCapture")


@dataclass
class GraphJoin:
    replays: int = 0  # graph launches with GPU events in the replay trace
    by_name: int = 0  # replays joined by kernel names
    by_order: int = 0  # replays joined by launch order (capture regions of equal size)
    unmatched: int = 0
    kernels: int = 0  # GPU events attributed through the capture
    notes: list[str] = field(default_factory=list)


@dataclass
class _Slots:
    """A capture trace's launches in order: their op instance and, when known, kernel."""

    op: list[int]
    kernel: list[str | None]


def join_capture(replay: Attribution, capture: Attribution) -> GraphJoin:
    """Attribute ``replay``'s graph-replayed GPU events from ``capture`` (in place)."""
    join = GraphJoin()
    named = _named_slots(capture)
    regions = _capture_regions(capture)
    used_regions: set[int] = set()
    t = replay.trace
    for _launch, group in _replays(replay):
        join.replays += 1
        names = [t.names[int(t.name[replay.rows[q]])] for q in group]
        ops = _match_names(named, names)
        if ops is not None:
            join.by_name += 1
        else:
            ops = _match_count(regions, len(names), used_regions)
            if ops is None:
                join.unmatched += 1
                continue
            join.by_order += 1
        _assign(replay, capture, group, ops)
        join.kernels += len(group)
    if join.by_order and len({len(r.op) for r in regions}) < len(regions):
        join.notes.append(
            "several capture regions have the same number of launches: replays joined by "
            "launch order took them in order"
        )
    return join


def _replays(a: Attribution) -> list[tuple[int, list[int]]]:
    """(graph launch row, GPU event positions in GPU start order) per replay."""
    q = np.flatnonzero(a.status == GRAPH_REPLAY)
    ts = a.trace.ts[a.rows[q]]
    q = q[np.lexsort((ts, a.graph_launch[q]))]
    out: list[tuple[int, list[int]]] = []
    for pos in q.tolist():
        g = int(a.graph_launch[pos])
        if out and out[-1][0] == g:
            out[-1][1].append(pos)
        else:
            out.append((g, [pos]))
    return out


def _named_slots(a: Attribution) -> _Slots:
    q = np.flatnonzero((a.status == ATTRIBUTED) & (a.launch >= 0))
    t = a.trace
    q = q[np.lexsort((t.ts[a.rows[q]], t.ts[a.launch[q]]))]
    return _Slots(op=a.op[q].tolist(), kernel=[t.names[int(t.name[a.rows[p]])] for p in q.tolist()])


def _match_names(slots: _Slots, names: list[str]) -> list[int] | None:
    n = len(names)
    for start in (i for i, k in enumerate(slots.kernel) if k == names[0]):
        if slots.kernel[start : start + n] == names:
            return slots.op[start : start + n]
    return None


def _capture_regions(a: Attribution) -> list[_Slots]:
    """Launch calls between stream capture begin and end, per region, with their ops."""
    t = a.trace
    complete = t.ph == PH_COMPLETE
    api = np.flatnonzero(complete & t.category_mask(CUDA_API))
    names = [t.names[int(t.name[r])] for r in api.tolist()]
    begins = [r for r, n in zip(api.tolist(), names, strict=True) if _BEGIN.match(n)]
    ends = [r for r, n in zip(api.tolist(), names, strict=True) if _END.match(n)]
    launches = np.array(
        [r for r, n in zip(api.tolist(), names, strict=True) if LAUNCH_CALLS.match(n)],
        dtype=np.int64,
    )
    if not begins or not launches.size:
        return []
    thread = thread_keys(t.pid, t.tid)
    ops = Nesting(np.flatnonzero(complete & t.category_mask({"cpu_op"})), t.ts, t.end, thread)
    regions = []
    for b in sorted(begins, key=lambda r: float(t.ts[r])):
        e = next((r for r in ends if thread[r] == thread[b] and t.ts[r] >= t.end[b]), None)
        stop = float(t.ts[e]) if e is not None else np.inf
        sel = launches[
            (thread[launches] == thread[b]) & (t.ts[launches] >= t.end[b]) & (t.ts[launches] < stop)
        ]
        sel = sel[np.argsort(t.ts[sel], kind="stable")]
        op_rows = ops.innermost(thread[sel], t.ts[sel], t.end[sel])
        slots = [a.instance_of(int(r)) if r >= 0 else -1 for r in op_rows.tolist()]
        regions.append(_Slots(op=slots, kernel=[None] * sel.size))
    return regions


def _match_count(regions: list[_Slots], n: int, used: set[int]) -> list[int] | None:
    fits = [i for i, r in enumerate(regions) if len(r.op) == n]
    if not fits:
        return None
    free = [i for i in fits if i not in used]
    pick = free[0] if free else fits[0]  # a graph replayed again: its region again
    used.add(pick)
    return regions[pick].op


def _assign(replay: Attribution, capture: Attribution, group: list[int], ops: list[int]) -> None:
    copies: dict[int, int] = {}
    step = int(replay.step[group[0]])
    for q, op in zip(group, ops, strict=True):
        if op < 0:
            continue
        replay.op[q] = _copy(replay, capture.instances, op, copies, step)
        replay.status[q] = ATTRIBUTED
        replay.method[q] = GRAPH_CAPTURE


def _copy(
    replay: Attribution, source: list[OpInstance], i: int, copies: dict[int, int], step: int
) -> int:
    """A copy of capture instance ``i`` (and its enclosing ops, outermost first, without
    recursion) for one replay: each replay is one more call of the captured ops."""
    chain = [i]
    while source[chain[-1]].parent >= 0 and chain[-1] not in copies:
        chain.append(source[chain[-1]].parent)
    for j in reversed(chain):
        if j in copies:
            continue
        inst = source[j]
        replay.instances.append(
            OpInstance(
                name=inst.name,
                dims=inst.dims,
                types=inst.types,
                concrete=inst.concrete,
                module=inst.module,
                frame=inst.frame,
                parent=copies[inst.parent] if inst.parent >= 0 else -1,
                step=step,  # the replay's step, not the capture's
                kind=inst.kind,
            )
        )
        copies[j] = len(replay.instances) - 1
    return copies[i]
