"""Kernels replayed by CUDA graph launches, attributed from a capture-time trace.

At replay time a ``cudaGraphLaunch`` starts every kernel of the graph and no op runs, so
the replay trace alone cannot say which op each kernel belongs to (attribution marks them
``graph_replay``). The ops are in a trace of the capture, or of an eager run of the same
code, joined to each replay here, in one of two ways:

- **by kernel name**: the capture trace ran its kernels (an eager warm-up profiled, or a
  capture whose kernels executed): its attributed kernels, in launch order, are searched
  for the replay's kernel names in GPU start order; the first window with the same names
  gives each replayed kernel its op;
- **by kernel-name alignment**: a trace of the capture itself has launch calls but no
  kernels (a captured launch executes nothing). Its capture regions are the launches
  between ``cudaStreamBeginCapture`` and ``cudaStreamEndCapture`` on a thread, or, where
  no such pair is recorded (torch.compile's cudagraph trees on ROCm), inside a
  ``CUDAGraphNode.record`` annotation. Where the launch calls name their kernel (ROCm's
  do; else the kernel the launch ran, when the capture executed), each replay is aligned
  to the region whose kernel names match best, as a diff does (a longest common
  subsequence), so a launch the graph did not keep, or a kernel the capture trace missed,
  costs that one kernel, not the replay. A region is taken when at most one kernel in ten
  differs; replayed kernels the alignment leaves unpaired stay ``graph_replay``;
- **by launch order**: regions whose launches carry no kernel name: a region whose number
  of launches equals the replay's number of kernels gives them their ops in order. Regions
  are used in order, each replay taking the first region of its size; with several graphs
  of the same size this is a guess, and :class:`GraphJoin` says how many replays were
  joined this way.

A replay none finds stays ``graph_replay``: reported as such, never hidden, and
:attr:`GraphJoin.unmatched_why` says why, per replay.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from kerneltracer.analysis.nesting import Nesting, thread_keys
from kerneltracer.analysis.timeline.analyses.attribution import (
    ATTRIBUTED,
    GRAPH_CAPTURE,
    GRAPH_REPLAY,
    Attribution,
    OpInstances,
)
from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.model.categories import CUDA_API

_LAUNCH_CALLS = re.compile(
    r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|"
    r"cudaMemcpyAsync|cudaMemsetAsync|hipLaunchKernel|hipExtModuleLaunchKernel|"
    r"hipModuleLaunchKernel|hipMemcpyAsync|hipMemsetAsync)"
)
_BEGIN = re.compile(r"^(cuda|hip)StreamBeginCapture")
_END = re.compile(r"^(cuda|hip)StreamEndCapture")
# cudagraph trees (torch.compile mode="reduce-overhead") capture inside this annotation
# (``CUDAGraphNode.record (dynamo_timed)``).
_RECORD = re.compile(r"^CUDAGraphNode\.record\b")
# Copies and fills are named by their call, not by a kernel: one key each for the join.
_COPY_CALL = re.compile("memcpy", re.IGNORECASE)
_FILL_CALL = re.compile("memset", re.IGNORECASE)
# At most one replayed kernel in ten may differ from its region (inserted or missing).
_MAX_EDITS = 0.1
# Why a replay found no capture (keys of GraphJoin.unmatched_why) and what that means.
_WHY_TEXT = {
    "no_capture_region": (
        "the capture trace has no capture region (no cudaStreamBeginCapture .. "
        "EndCapture, no CUDAGraphNode.record annotation with launches) and its executed "
        "kernels never run the replay's kernels in that order"
    ),
    "names_differ": (
        "no capture region's launched kernels align with the replay's kernel names "
        "(more than one in ten differ)"
    ),
    "count_differs": (
        "the capture regions name no kernels and none has as many launches as the "
        "replay has kernels"
    ),
}


@dataclass
class GraphJoin:
    replays: int = 0  # graph launches with GPU events in the replay trace
    by_name: int = 0  # replays joined by kernel names
    by_order: int = 0  # replays joined by launch order (capture regions of equal size)
    by_alignment: int = 0  # replays joined by kernel-name alignment to a capture region
    unmatched: int = 0
    kernels: int = 0  # GPU events attributed through the capture
    unpaired_kernels: int = 0  # kernels of joined replays the alignment left without a launch
    unmatched_why: dict[str, int] = field(default_factory=dict)  # replays, by _WHY_TEXT key
    notes: list[str] = field(default_factory=list)

    def why_text(self) -> str:
        """Why replayed kernels stayed unattributed, most replays first ("" if none did)."""
        parts = [
            f"{n} replay{'s' if n != 1 else ''}: {_WHY_TEXT[k]}"
            for k, n in sorted(self.unmatched_why.items(), key=lambda kv: -kv[1])
        ]
        if self.unpaired_kernels:
            parts.append(
                f"{self.unpaired_kernels} kernel{'s' if self.unpaired_kernels != 1 else ''} "
                "of joined replays had no launch in their capture region"
            )
        return "; ".join(parts)


@dataclass
class _Slots:
    """A capture trace's launches in order: their op instance and, when known, kernel."""

    op: list[int]
    kernel: list[str | None]
    named: bool = False  # some launch names its kernel (copies and fills do not count)


def join_capture(replay: Attribution, capture: Attribution) -> GraphJoin:
    """Attribute ``replay``'s graph-replayed GPU events from ``capture`` (in place)."""
    join = GraphJoin()
    named = _named_slots(capture)
    regions = _capture_regions(capture)
    used_regions: set[int] = set()
    aligned: dict[tuple[str, ...], tuple[list[int], int] | str] = {}  # a graph replays alike
    t = replay.trace
    for _launch, group in _replays(replay):
        join.replays += 1
        names = [_key(t.names[int(t.name[replay.rows[q]])]) for q in group]
        ops = _match_names(named, names)
        if ops is not None:
            join.by_name += 1
        else:
            key = tuple(names)
            if key not in aligned:
                aligned[key] = _align_regions(regions, names, used_regions)
            found = aligned[key]
            if isinstance(found, tuple):
                pick = found[1]
                used_regions.add(pick)
                ops = [regions[pick].op[i] if i >= 0 else -1 for i in found[0]]
                join.by_alignment += 1
                join.unpaired_kernels += sum(1 for i in found[0] if i < 0)
            else:
                ops = _match_count(regions, len(names), used_regions)
                if ops is None:
                    join.unmatched += 1
                    why = "count_differs" if found == "unnamed" else found
                    join.unmatched_why[why] = join.unmatched_why.get(why, 0) + 1
                    continue
                join.by_order += 1
        _assign(replay, capture, group, ops)
        join.kernels += sum(1 for o in ops if o >= 0)
    if join.by_order and len({len(r.op) for r in regions}) < len(regions):
        join.notes.append(
            "several capture regions have the same number of launches: replays joined by "
            "launch order took them in order"
        )
    return join


def _key(name: str) -> str:
    """A GPU event's name as the join compares it: copies and fills by their kind."""
    if name.startswith("Memcpy"):
        return "Memcpy"
    return "Memset" if name.startswith("Memset") else name


def _align_regions(
    regions: list[_Slots], names: list[str], used: set[int]
) -> tuple[list[int], int] | str:
    """(per replayed kernel, its launch's index in the region or -1; the region), or why
    none fits: ``no_capture_region``, ``names_differ`` or ``unnamed`` (no region names its
    kernels: launch order decides)."""
    named = [i for i, r in enumerate(regions) if r.named]
    if not regions:
        return "no_capture_region"
    if not named:
        return "unnamed"
    best: tuple[int, int, list[int]] | None = None  # (paired, region, pairs)
    limit = max(1, int(_MAX_EDITS * len(names)))
    wanted = Counter(names)
    for i in named:
        region = regions[i].kernel
        pairs = _region_pairs(region, names, wanted, limit)
        if pairs is None:
            continue
        paired = sum(1 for p in pairs if p >= 0)
        # more kernels paired wins; at a tie, a region no replay took yet
        if best is None or paired > best[0] or (paired == best[0] and best[1] in used):
            best = (paired, i, pairs)
        if paired == len(names) == len(region) and i not in used:
            break  # a region the replay matches exactly, not taken yet: none does better
    return "names_differ" if best is None else (best[2], best[1])


def _region_pairs(
    region: list[str | None], names: list[str], wanted: Counter[str], limit: int
) -> list[int] | None:
    """``align`` of a region's kernels with a replay's names; None if it cannot fit."""
    # no order pairs more than the names both have: skip a region that cannot fit
    # before the diff (vLLM captures dozens of graphs of alike lengths)
    common = sum((Counter(k for k in region if k is not None) & wanted).values())
    if len(region) + len(names) - 2 * common > limit:
        return None
    # a launch without a known kernel name pairs with nothing
    keys: list[object] = [k if k is not None else object() for k in region]
    return align(keys, names, limit)


def align(a: list[object], b: list[str], max_edits: int) -> list[int] | None:
    """Per item of ``b``, the index of the item of ``a`` it pairs with in a longest common
    subsequence (-1: unpaired), or None when more than ``max_edits`` items of either must
    be inserted or deleted (Myers' O((N+M)·D) difference algorithm)."""
    n, m = len(a), len(b)
    if abs(n - m) > max_edits:
        return None
    v = {1: 0}
    history: list[dict[int, int]] = []
    for d in range(max_edits + 1):
        history.append(dict(v))
        for k in range(-d, d + 1, 2):
            down = k == -d or (k != d and v[k - 1] < v[k + 1])  # from the diagonal above
            x = v[k + 1] if down else v[k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                return _backtrack(history, d, n, m)
    return None


def _backtrack(history: list[dict[int, int]], depth: int, n: int, m: int) -> list[int]:
    out = [-1] * m
    x, y = n, m
    for d in range(depth, -1, -1):
        v = history[d]
        k = x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x, y = x - 1, y - 1
            out[y] = x
        x, y = prev_x, prev_y
    return out


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
    """Launch calls per capture region (see the module docstring), in time order, with
    their ops and, where known, the kernel each launched."""
    t = a.trace
    complete = t.ph == PH_COMPLETE
    api = np.flatnonzero(complete & t.category_mask(CUDA_API))
    names = [t.names[int(t.name[r])] for r in api.tolist()]
    launches = np.array(
        [r for r, n in zip(api.tolist(), names, strict=True) if _LAUNCH_CALLS.match(n)],
        dtype=np.int64,
    )
    if not launches.size:
        return []
    thread = thread_keys(t.pid, t.tid)
    spans = _capture_spans(t, api.tolist(), names, thread)
    ran = {int(a.launch[q]): t.names[int(t.name[a.rows[q]])] for q in np.flatnonzero(a.launch >= 0)}
    ops = Nesting(np.flatnonzero(complete & t.category_mask({"cpu_op"})), t.ts, t.end, thread)
    regions = []
    for key, start, stop in sorted(spans, key=lambda s: s[1]):
        sel = launches[
            (thread[launches] == key) & (t.ts[launches] >= start) & (t.ts[launches] < stop)
        ]
        if not sel.size:
            continue
        sel = sel[np.argsort(t.ts[sel], kind="stable")]
        op_rows = ops.innermost(thread[sel], t.ts[sel], t.end[sel])
        slots = [a.instance_of(int(r)) if r >= 0 else -1 for r in op_rows.tolist()]
        named = [t.launch_kernels.get(r) or ran.get(r) for r in sel.tolist()]
        kernels = [_launched(t, int(r), k) for r, k in zip(sel.tolist(), named, strict=True)]
        regions.append(_Slots(op=slots, kernel=kernels, named=any(named)))
    return regions


def _capture_spans(
    t: ChromeTrace, api: list[int], names: list[str], thread: np.ndarray
) -> list[tuple[int, float, float]]:
    """(thread, from, to) of each capture region: stream-capture begin/end pairs, and
    CUDAGraphNode.record annotations with no stream capture recorded inside."""
    begins = [r for r, n in zip(api, names, strict=True) if _BEGIN.match(n)]
    ends = [r for r, n in zip(api, names, strict=True) if _END.match(n)]
    spans: list[tuple[int, float, float]] = []
    for b in sorted(begins, key=lambda r: float(t.ts[r])):
        e = next((r for r in ends if thread[r] == thread[b] and t.ts[r] >= t.end[b]), None)
        spans.append((int(thread[b]), float(t.end[b]), float(t.ts[e]) if e is not None else np.inf))
    record_names = [i for i, n in enumerate(t.names) if _RECORD.match(n)]
    complete = t.ph == PH_COMPLETE
    for r in np.flatnonzero(complete & t.name_mask(record_names)).tolist():
        inside = [s for s in spans if s[0] == thread[r] and t.ts[r] <= s[1] <= t.end[r]]
        if not inside:  # a stream capture recorded inside is the more precise region
            spans.append((int(thread[r]), float(t.ts[r]), float(t.end[r])))
    return spans


def _launched(t: ChromeTrace, row: int, name: str | None) -> str | None:
    """The kernel a launch call launched: ``name`` (on the call, as ROCm writes it, or of
    the GPU event it ran), else the kind of a copy or fill call; None when unknown."""
    if name:
        return _key(name)
    call = t.names[int(t.name[row])]
    if _COPY_CALL.search(call):
        return "Memcpy"
    return "Memset" if _FILL_CALL.search(call) else None


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
    replay: Attribution, source: OpInstances, i: int, copies: dict[int, int], step: int
) -> int:
    """A copy of capture instance ``i`` (and its enclosing ops, outermost first, without
    recursion) for one replay: each replay is one more call of the captured ops."""
    chain = [i]
    while source.parent[chain[-1]] >= 0 and chain[-1] not in copies:
        chain.append(source.parent[chain[-1]])
    for j in reversed(chain):
        if j in copies:
            continue
        inst = source[j]
        parent = copies[inst.parent] if inst.parent >= 0 else -1
        # The replay's step, not the capture's.
        replay.instances.append(replace(inst, parent=parent, step=step))
        copies[j] = len(replay.instances) - 1
    return copies[i]
