"""HTA's core numbers, computed independently: temporal and kernel breakdowns per rank.

Definitions (HolisticTraceAnalysis 0.5.0, unchanged in traceinsight 0.6.1, so the numbers
can be compared):

* GPU work = kernel, memcpy, memset and cuda_sync events on a stream (sync waits occupy
  the stream and count as non-compute). Timestamps of traces written with fractional (ns)
  resolution are rounded inwards (start up, end down) for the unions: an interval becomes
  the whole microseconds inside it. An event that holds none (0.5 µs inside one µs, the
  memsets of an H100 trace) is empty there; HTA makes it a −1 µs interval, which its sums
  add and its unions subtract (issue 38: a memset total of −18 µs, non-compute −0.03%).
* Per-kernel statistics (count, sum, mean, min, max, std) are the events' own durations,
  not their rounded intervals.
* With two or more ``ProfilerStep#N`` annotations, the last step is excluded: only GPU work
  whose correlation id belongs to a host event that started before the last step counts.
* kernel time (HTA's name; "GPU span" on our pages) = last GPU end - first GPU start;
  busy = union of all GPU work; idle = span - busy; compute = union of COMPUTATION
  kernels; non-compute = busy - compute (compute is within busy: never negative).
* Kernel-type time is computed on interval unions per type; overlapping types are reported
  as ``A overlapping B`` segments, so the rows add up to the union of all GPU work.

Intended differences: HTA treats any event with an integer ``stream`` arg as GPU work,
including a host ``cpu_op`` that happens to carry one (the Triton launcher in
``triton_example``); we only count GPU activity categories. HTA joins GPU events to host
events on the correlation id and duplicates a kernel once per matching host row; we count
every kernel once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.model.arrays import isin_sorted, sorted_unique, unique_codes
from kerneltracer.analysis.timeline.model.categories import GPU_ACTIVITY, KernelType, kernel_type
from kerneltracer.analysis.timeline.model.intervals import merge, union_length

_HOST_SYNC_NAMES = frozenset({"Event Sync", "Context Sync"})
_TYPE_ORDER = (KernelType.COMPUTATION, KernelType.COMMUNICATION, KernelType.MEMORY)
_ALL_TYPES = (*_TYPE_ORDER, KernelType.OTHER)
_CODE = {kt: i for i, kt in enumerate(_ALL_TYPES)}
_WORK_CATEGORIES = GPU_ACTIVITY | {"cuda_sync"}


@dataclass
class GpuWork:
    """The GPU events one rank's breakdowns are computed on (already filtered and rounded)."""

    ts: np.ndarray  # rounded inwards on ns traces (see the module docstring)
    end: np.ndarray
    dur: np.ndarray  # the events' own durations
    name: np.ndarray  # indices into the trace's names
    ktype: np.ndarray  # int8 codes, index into _ALL_TYPES
    device: np.ndarray
    last_step_excluded: bool
    rounded: bool = False  # ns timestamps rounded to whole µs

    def subset(self, mask: np.ndarray) -> GpuWork:
        return GpuWork(
            self.ts[mask],
            self.end[mask],
            self.dur[mask],
            self.name[mask],
            self.ktype[mask],
            self.device[mask],
            self.last_step_excluded,
            self.rounded,
        )


@dataclass
class TemporalBreakdown:
    idle_us: float
    compute_us: float
    non_compute_us: float
    kernel_time_us: float  # the GPU span: first GPU start to last GPU end
    idle_pct: float
    compute_pct: float
    non_compute_pct: float
    busy_us: float = 0.0  # union of all GPU work: compute + non-compute
    last_step_excluded: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class KernelStat:
    name: str
    kernel_type: str
    count: int
    sum_us: float
    mean_us: float
    max_us: float
    min_us: float
    std_us: float
    pct_of_type: float


@dataclass
class KernelBreakdown:
    by_type: list[dict[str, Any]]  # {"kernel_type", "sum_us", "percentage"}
    top_kernels: dict[str, list[KernelStat]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "by_type": self.by_type,
            "top_kernels": {k: [asdict(s) for s in v] for k, v in self.top_kernels.items()},
        }


def select_gpu_work(trace: ChromeTrace, include_last_step: bool = False) -> GpuWork:
    is_complete = trace.ph == PH_COMPLETE
    ts, end = _rounded(trace)
    work = is_complete & trace.category_mask(_WORK_CATEGORIES) & (trace.stream >= 0)
    keep = _launched_in_steps(trace, is_complete, ts, end, include_last_step)
    if keep is not None:
        work &= keep
    idx = np.flatnonzero(work)
    uniq, inv = unique_codes(trace.name[idx])
    codes = np.array([_CODE[kernel_type(trace.names[n])] for n in uniq.tolist()], dtype=np.int8)
    ktype = codes[inv] if idx.size else np.empty(0, dtype=np.int8)
    excluded = keep is not None and not include_last_step
    return GpuWork(
        ts[idx],
        end[idx],
        trace.dur[idx],
        trace.name[idx],
        ktype,
        trace.device[idx],
        excluded,
        trace.float_timestamps,
    )


def launched_before_last_step(trace: ChromeTrace) -> np.ndarray | None:
    """Mask of rows HTA keeps (launched before the last ProfilerStep); None: all of them."""
    ts, end = _rounded(trace)
    mask: np.ndarray | None = _launched_in_steps(trace, trace.ph == PH_COMPLETE, ts, end, False)
    return mask


def _rounded(trace: ChromeTrace) -> tuple[np.ndarray, np.ndarray]:
    end = trace.ts + trace.dur
    if not trace.float_timestamps:
        return trace.ts, end
    # ns-resolution traces: HTA rounds inwards so that back-to-back kernels do not overlap.
    # The whole µs inside an event that holds none are none: empty, not a negative interval.
    start = np.ceil(trace.ts)
    return start, np.maximum(np.floor(end), start)


def _launched_in_steps(
    trace: ChromeTrace, is_complete: np.ndarray, ts: np.ndarray, end: np.ndarray, last: bool
) -> Any:
    """Mask of GPU rows launched before the last ProfilerStep starts (``last``: ends).

    None when the trace has fewer than two ProfilerSteps (then nothing is filtered).
    """
    base = is_complete & ~trace.category_mask({"trace", "python_function"})
    step_ids = [i for i, n in enumerate(trace.names) if "ProfilerStep" in n]
    steps_in_base = trace.name_mask(step_ids) & base
    if unique_codes(trace.name[steps_in_base])[0].size < 2:
        return None
    sync_ids = [i for i, n in enumerate(trace.names) if n in _HOST_SYNC_NAMES]
    gpu_like = ((trace.stream >= 0) & (trace.correlation >= 0)) | trace.name_mask(sync_ids)
    host = base & ~gpu_like
    steps = host & steps_in_base
    in_window = ts <= end[steps].max() if last else ts < ts[steps].max()
    launched = sorted_unique(trace.correlation[host & in_window])
    return isin_sorted(trace.correlation, launched)


def temporal_breakdown(work: GpuWork) -> TemporalBreakdown | None:
    """None when the rank ran no GPU work (HTA raises on such traces)."""
    if work.ts.size == 0:
        return None
    ms, me = merge(work.ts, work.end)
    kernel_time = float(me[-1] - ms[0])
    busy = float(np.sum(me - ms))
    idle = kernel_time - busy
    comp = work.ktype == _CODE[KernelType.COMPUTATION]
    compute = union_length(work.ts[comp], work.end[comp])
    non_compute = busy - compute

    def pct(x: float) -> float:
        return round(100.0 * x / kernel_time, 2) if kernel_time > 0 else 0.0

    return TemporalBreakdown(
        idle_us=idle,
        compute_us=compute,
        non_compute_us=non_compute,
        kernel_time_us=kernel_time,
        idle_pct=pct(idle),
        compute_pct=pct(compute),
        non_compute_pct=pct(non_compute),
        busy_us=busy,
        last_step_excluded=work.last_step_excluded,
    )


def per_device_temporal(work: GpuWork) -> list[dict[str, Any]]:
    """Temporal breakdown of each GPU, when a rank's trace holds more than one."""
    devices = sorted_unique(work.device).tolist()
    if len(devices) < 2:
        return []
    out = []
    for d in devices:
        tb = temporal_breakdown(work.subset(work.device == d))
        if tb is not None:
            out.append({"device": int(d), **tb.to_dict()})
    return out


def kernel_breakdown(work: GpuWork, names: list[str], top_n: int = 10) -> KernelBreakdown:
    by_type = _type_overlap_times(work)
    total = sum(row["sum_us"] for row in by_type)
    for row in by_type:
        row["percentage"] = round(100.0 * row["sum_us"] / total, 2) if total > 0 else 0.0
    top = {kt.value: _top_kernels(work, kt, names, top_n) for kt in _ALL_TYPES}
    return KernelBreakdown(by_type=by_type, top_kernels={k: v for k, v in top.items() if v})


def _type_overlap_times(work: GpuWork) -> list[dict[str, Any]]:
    """Time per kernel type on the union of each type; overlaps get their own label."""
    times: list[np.ndarray] = []
    deltas: list[np.ndarray] = []
    for bit, kt in enumerate(_TYPE_ORDER):
        sel = work.ktype == _CODE[kt]
        ms, me = merge(work.ts[sel], work.end[sel])
        times += [ms, me]
        deltas += [np.full(ms.size, 1 << bit), np.full(me.size, -(1 << bit))]
    t = np.concatenate(times)
    if t.size == 0:
        return []
    d = np.concatenate(deltas)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    running = np.cumsum(d)
    seg = np.diff(t)
    masks = running[:-1]
    out: list[dict[str, Any]] = []
    for mask in sorted_unique(masks[masks > 0]).tolist():
        label = " overlapping ".join(
            kt.value for b, kt in enumerate(_TYPE_ORDER) if mask & (1 << b)
        )
        out.append({"kernel_type": label, "sum_us": float(seg[masks == mask].sum())})
    out.sort(key=lambda r: -r["sum_us"])
    return out


def _top_kernels(work: GpuWork, kt: KernelType, names: list[str], top_n: int) -> list[KernelStat]:
    sel = work.ktype == _CODE[kt]
    if not sel.any():
        return []
    dur = work.dur[sel]
    uniq, inv = unique_codes(work.name[sel])
    count = np.bincount(inv)
    total = np.bincount(inv, weights=dur)
    sq = np.bincount(inv, weights=dur * dur)
    mx = np.full(uniq.size, -np.inf)
    mn = np.full(uniq.size, np.inf)
    np.maximum.at(mx, inv, dur)
    np.minimum.at(mn, inv, dur)
    grand = float(total.sum())
    order = np.argsort(-total, kind="stable")
    stats = []
    for rank, i in enumerate(order.tolist()):
        if rank >= top_n:
            break
        stats.append(_stat(names[int(uniq[i])], kt, count[i], total[i], sq[i], mx[i], mn[i], grand))
    rest = order[top_n:]
    if rest.size:
        stats.append(
            _stat(
                "others",
                kt,
                count[rest].sum(),
                total[rest].sum(),
                sq[rest].sum(),
                mx[rest].max(),
                mn[rest].min(),
                grand,
            )
        )
    return stats


def _stat(
    name: str, kt: KernelType, n: Any, s: Any, sq: Any, mx: Any, mn: Any, grand: float
) -> KernelStat:
    n, s, sq = int(n), float(s), float(sq)
    mean = s / n
    var = (sq - n * mean * mean) / (n - 1) if n > 1 else 0.0
    return KernelStat(
        name=name,
        kernel_type=kt.value,
        count=n,
        sum_us=s,
        mean_us=mean,
        max_us=float(mx),
        min_us=float(mn),
        std_us=math.sqrt(max(var, 0.0)),
        pct_of_type=round(100.0 * s / grand, 2) if grand > 0 else 0.0,
    )


@dataclass
class CommCompOverlap:
    """HTA's ``get_comm_comp_overlap`` for one rank: the share of communication-kernel time
    (union over streams) during which a computation kernel also runs."""

    communication_us: float
    overlap_us: float
    overlap_pct: float | None  # None: no communication kernel

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def comm_comp_overlap(work: GpuWork) -> CommCompOverlap | None:
    """None when the rank ran no GPU work.

    On the same GPU work as the temporal breakdown (HTA filters its trace once, so the last
    ProfilerStep is excluded here too); communication and computation kernels are each
    merged over all streams first, so a collective that two compute streams overlap counts
    once.
    """
    if work.ts.size == 0:
        return None
    comm = work.ktype == _CODE[KernelType.COMMUNICATION]
    comp = work.ktype == _CODE[KernelType.COMPUTATION]
    cs, ce = merge(work.ts[comm], work.end[comm])
    ps, pe = merge(work.ts[comp], work.end[comp])
    comm_us = float(np.sum(ce - cs)) if cs.size else 0.0
    overlap = _intersection_length(cs, ce, ps, pe)
    pct = round(100.0 * overlap / comm_us, 2) if comm_us > 0 else None
    return CommCompOverlap(communication_us=comm_us, overlap_us=overlap, overlap_pct=pct)


def _intersection_length(
    a_s: np.ndarray, a_e: np.ndarray, b_s: np.ndarray, b_e: np.ndarray
) -> float:
    """Length of the intersection of two sets of disjoint, sorted intervals."""
    if a_s.size == 0 or b_s.size == 0:
        return 0.0
    # For each interval of a, the intervals of b that can overlap it are a contiguous run.
    lo = np.searchsorted(b_e, a_s, side="right")
    hi = np.searchsorted(b_s, a_e, side="left")
    total = 0.0
    for i in np.flatnonzero(hi > lo).tolist():
        s = np.maximum(b_s[lo[i] : hi[i]], a_s[i])
        e = np.minimum(b_e[lo[i] : hi[i]], a_e[i])
        total += float(np.sum(np.maximum(e - s, 0.0)))
    return total
