"""Bottleneck analysis on interval unions.

InferScope's prototype summed event durations per category, so nested CPU ops, concurrent
streams and overlapping copies were counted several times and the "breakdown" could add
up to far more than 100%. Here every instant of the trace window is given to exactly one
category, by priority (GPU compute first, then communication, copies, host API time, host
work; what is left is idle), so the breakdown sums to the window length. The summary's
per-category totals are unions as well: overlap is counted once.
"""

from __future__ import annotations

import numpy as np

from kerneltracer.analysis.timeline.analyses.category_rows import CategoryRows, categorize
from kerneltracer.analysis.timeline.analyses.suggestions import suggest
from kerneltracer.analysis.timeline.load.loader import PH_COMPLETE, ChromeTrace
from kerneltracer.analysis.timeline.model.arrays import unique_codes
from kerneltracer.analysis.timeline.model.intervals import (
    clip,
    exclusive_sweep,
    merge,
    merged_union_length,
)
from kerneltracer.analysis.timeline.model.results import (
    Bottleneck,
    BottleneckResult,
    BreakdownEntry,
    StepResult,
    Summary,
)
from kerneltracer.core.heap import release_after

# Exclusive categories in priority order; "idle" is what none of them covers.
CATEGORIES = (
    "gpu_compute",
    "gpu_communication",
    "h2d_copy",
    "d2h_copy",
    "gpu_memory_other",
    "cpu_sync",
    "cpu_runtime",
    "cpu_compute",
)
_IDLE = "idle"
# Below these a verdict has too little behind it: its confidence is scaled down linearly.
_MIN_EVENTS = 20
_MIN_SPAN_US = 1000.0


def _analyze_window(
    trace: ChromeTrace, cats: CategoryRows, lo: float, hi: float, *, suggestions: bool = True
) -> BottleneckResult:
    # Each category's spans merged once, then shared by the sweep and the unions: a union
    # of merged unions is the same union, and the raw spans of every category at once (two
    # floats an event, concatenated again per union) made the analyses' peak at 3M events.
    covered = {}
    for c in CATEGORIES:
        covered[c] = _covered(trace, cats.rows[c], lo, hi)
        release_after(cats.rows[c].size)  # its clipped and sorted copies
    durations = exclusive_sweep([covered[c] for c in CATEGORIES], lo, hi)
    rows = sum(r.size for r in cats.rows.values())
    release_after(rows)
    breakdown = _breakdown(trace, cats, durations, lo, hi)
    release_after(rows)
    summary = _summary(trace, cats, covered, breakdown, lo, hi)
    bottleneck = classify(breakdown, summary)
    return BottleneckResult(
        window_start_us=lo,
        window_end_us=hi,
        summary=summary,
        timeline_breakdown=breakdown,
        bottleneck=bottleneck,
        suggestions=suggest(trace, cats, breakdown, summary, bottleneck) if suggestions else [],
    )


def _covered(
    trace: ChromeTrace, rows: np.ndarray, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray]:
    """What ``rows`` cover of ``[lo, hi)``: their spans clipped to it and merged."""
    return merge(*clip(trace.ts[rows], trace.end[rows], lo, hi))


def analyze_trace(trace: ChromeTrace, cats: CategoryRows | None = None) -> BottleneckResult:
    cats = cats or categorize(trace)
    return _analyze_window(trace, cats, *cats.window)


def analyze_steps(trace: ChromeTrace, cats: CategoryRows) -> list[StepResult]:
    """One result per ``ProfilerStep#N`` (its host-side span; GPU work clipped to it)."""
    step_ids = [i for i, n in enumerate(trace.names) if n.startswith("ProfilerStep")]
    rows = np.flatnonzero(
        (trace.ph == PH_COMPLETE)
        & trace.category_mask({"user_annotation", "cpu_op"})
        & trace.name_mask(step_ids)
    )
    out = []
    windows = _WindowIndex(trace, cats)
    for r in rows[np.argsort(trace.ts[rows], kind="stable")].tolist():
        lo, hi = float(trace.ts[r]), float(trace.ts[r] + trace.dur[r])
        # A step's result has no suggestions (they are the whole trace's), so none computed.
        res = _analyze_window(trace, windows.around(lo, hi), lo, hi, suggestions=False)
        out.append(
            StepResult(
                step=trace.names[int(trace.name[r])],
                start_us=lo,
                duration_us=hi - lo,
                timeline_breakdown=res.timeline_breakdown,
                bottleneck=res.bottleneck,
            )
        )
    return out


class _WindowIndex:
    """Each category's rows that may overlap a window, found without a pass over them all.

    Every step's window used to mask every row of its categories: steps x rows, quadratic in
    a trace that grows by steps (6.7 s of a 3M-event trace's 140 steps). Sorted by start,
    the rows that can overlap ``[lo, hi)`` lie between the first whose running maximum end
    passes ``lo`` and the last that starts before ``hi``; that slice, back in row order, is
    a superset of the overlapping rows, and every figure of a window clips its rows to the
    window first, so the results are those of all the rows.
    """

    def __init__(self, trace: ChromeTrace, cats: CategoryRows) -> None:
        self._cats = cats
        self._index: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        end = trace.end
        for c, rows in cats.rows.items():
            order = np.argsort(trace.ts[rows], kind="stable")
            by_start = rows[order]
            self._index[c] = (by_start, trace.ts[by_start], np.maximum.accumulate(end[by_start]))

    def around(self, lo: float, hi: float) -> CategoryRows:
        rows = {}
        for c, (by_start, starts, reach) in self._index.items():
            first = int(np.searchsorted(reach, lo, side="right"))
            last = int(np.searchsorted(starts, hi, side="left"))
            rows[c] = np.sort(by_start[first:last]) if first < last else by_start[:0]
        return CategoryRows(rows, self._cats.window, self._cats.has_gpu)


def _breakdown(
    trace: ChromeTrace, cats: CategoryRows, durations: list[float], lo: float, hi: float
) -> list[BreakdownEntry]:
    total = hi - lo
    out = []
    for cat, dur in zip((*CATEGORIES, _IDLE), durations, strict=True):
        pct = round(100.0 * dur / total, 2) if total > 0 else 0.0
        examples = _examples(trace, cats.rows.get(cat), lo, hi)
        out.append(BreakdownEntry(category=cat, duration_us=dur, percentage=pct, examples=examples))
    return out


def _examples(trace: ChromeTrace, rows: np.ndarray | None, lo: float, hi: float) -> list[str]:
    """The three names with the most (clipped) time in a category."""
    if rows is None or rows.size == 0:
        return []
    s, e = clip(trace.ts[rows], trace.end[rows], lo, hi)
    if s.size == 0:
        return []
    keep = (trace.end[rows] > lo) & (trace.ts[rows] < hi)
    uniq, inv = unique_codes(trace.name[rows][keep])
    per_name = np.bincount(inv, weights=e - s)
    top = np.argsort(-per_name, kind="stable")[:3]
    return [trace.names[int(uniq[i])] for i in top.tolist()]


def _summary(
    trace: ChromeTrace,
    cats: CategoryRows,
    covered: dict[str, tuple[np.ndarray, np.ndarray]],
    breakdown: list[BreakdownEntry],
    lo: float,
    hi: float,
) -> Summary:
    def union(*names: str) -> float:
        return merged_union_length([covered[n] for n in names])

    gpu_all = union("gpu_compute", "gpu_communication", "h2d_copy", "d2h_copy", "gpu_memory_other")
    counts = {c: int(np.count_nonzero(_in_window(trace, cats.rows[c], lo, hi))) for c in CATEGORIES}
    return Summary(
        end_to_end_latency_us=hi - lo,
        total_cpu_time_us=union("cpu_sync", "cpu_runtime", "cpu_compute"),
        total_gpu_time_us=union("gpu_compute", "gpu_communication"),
        total_h2d_us=union("h2d_copy"),
        total_d2h_us=union("d2h_copy"),
        total_idle_us=breakdown[-1].duration_us,
        gpu_idle_us=(hi - lo - gpu_all) if cats.has_gpu else None,
        framework_overhead_us=union("cpu_runtime"),
        has_gpu=cats.has_gpu,
        event_count=sum(counts.values()),
        kernel_count=counts["gpu_compute"] + counts["gpu_communication"],
        h2d_count=counts["h2d_copy"],
        d2h_count=counts["d2h_copy"],
    )


def _in_window(trace: ChromeTrace, rows: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (trace.end[rows] > lo) & (trace.ts[rows] < hi)


def classify(breakdown: list[BreakdownEntry], summary: Summary) -> Bottleneck:
    """Bottleneck type from the exclusive shares; confidence grows with the winning margin
    and is scaled down when the window holds few events or little traced time."""
    verdict = _classify(breakdown, summary)
    earned = min(1.0, summary.event_count / _MIN_EVENTS) * min(
        1.0, summary.end_to_end_latency_us / _MIN_SPAN_US
    )
    if earned < 1.0:
        verdict.confidence = round(verdict.confidence * earned, 2)
        verdict.evidence.append(
            f"Only {summary.event_count} timed event(s) over "
            f"{summary.end_to_end_latency_us / 1000:.3f} ms: too little to be sure "
            f"(confidence needs ≥ {_MIN_EVENTS} events and ≥ {_MIN_SPAN_US / 1000:g} ms)"
        )
    return verdict


def _classify(breakdown: list[BreakdownEntry], summary: Summary) -> Bottleneck:
    share = {b.category: b.percentage / 100.0 for b in breakdown}
    gpu = share["gpu_compute"] + share["gpu_communication"]
    mem = share["h2d_copy"] + share["d2h_copy"] + share["gpu_memory_other"]
    host = share["cpu_sync"] + share["cpu_runtime"] + share["cpu_compute"]
    idle = share[_IDLE]
    evidence = _evidence(share, summary, gpu, mem, host)
    if not summary.has_gpu:
        # Nothing but the host can be the bottleneck; the open question is which host time.
        cause = "cpu_compute" if share["cpu_compute"] >= share["cpu_runtime"] else "cpu_runtime"
        if idle > host:
            cause = _IDLE  # gaps between ops: Python / framework overhead outside any op
        return Bottleneck(type="cpu_bound", primary_cause=cause, confidence=0.95, evidence=evidence)
    # A GPU that waits is waiting for the host: idle time counts against the host side.
    scores = {"gpu_bound": gpu, "memory_bound": mem, "cpu_bound": host + idle}
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    (top, top_v), (_, second_v) = ranked[0], ranked[1]
    margin = top_v - second_v
    kind = top if margin >= 0.1 else "balanced"
    confidence = min(0.99, 0.5 + margin) if kind != "balanced" else max(0.5, 1.0 - 5 * margin)
    non_idle = [b for b in breakdown if b.category != _IDLE]
    primary = max(non_idle, key=lambda b: b.duration_us).category if non_idle else _IDLE
    if kind == "cpu_bound" and idle > host:
        primary = _IDLE
    return Bottleneck(
        type=kind, primary_cause=primary, confidence=round(confidence, 2), evidence=evidence
    )


def _evidence(
    share: dict[str, float], summary: Summary, gpu: float, mem: float, host: float
) -> list[str]:
    lines = []
    if summary.has_gpu and summary.gpu_idle_us is not None and summary.end_to_end_latency_us > 0:
        idle_pct = 100.0 * summary.gpu_idle_us / summary.end_to_end_latency_us
        lines.append(f"GPU idle for {idle_pct:.1f}% of the timeline")
        lines.append(
            f"GPU kernels busy {100 * gpu:.1f}% (compute {100 * share['gpu_compute']:.1f}%, "
            f"communication {100 * share['gpu_communication']:.1f}%)"
        )
        lines.append(
            f"Copies/memsets alone {100 * mem:.1f}% (H2D {100 * share['h2d_copy']:.1f}%, "
            f"D2H {100 * share['d2h_copy']:.1f}%)"
        )
    else:
        lines.append("No GPU activity in the trace (CPU-only run)")
    lines.append(
        f"Host-only time {100 * host:.1f}% (CUDA launch/API {100 * share['cpu_runtime']:.1f}%, "
        f"synchronize {100 * share['cpu_sync']:.1f}%, host ops {100 * share['cpu_compute']:.1f}%)"
    )
    if summary.has_gpu:
        lines.append(f"Nothing running {100 * share[_IDLE]:.1f}% of the timeline")
    else:
        lines.append(
            f"Gaps between host ops (Python/framework overhead) {100 * share[_IDLE]:.1f}% "
            "of the timeline"
        )
    return lines
