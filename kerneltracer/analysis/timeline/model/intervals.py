"""Interval arithmetic on numpy arrays: unions (overlap counted once) and exclusive sweeps."""

from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of ``[start, end)`` intervals as sorted, disjoint intervals.

    Touching intervals stay separate (as in HTA): they add nothing to the covered length.
    """
    if starts.size == 0:
        return starts.astype(np.float64), ends.astype(np.float64)
    order = np.argsort(starts, kind="stable")
    spans = [starts[order], ends[order]]
    del order
    return _merge_sorted(spans)


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    ms, me = merge(starts, ends)
    return float(np.sum(me - ms)) if ms.size else 0.0


def merged_union_length(parts: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """``union_length`` of the concatenation of ``parts``, each already merged: folded
    two at a time with ``_union``, whose result is ``merge``'s (a union's merged spans do
    not depend on the order of its intervals). The concatenation's sort and gathered
    copies were ~45 MiB at 3M events, where a million host ops' spans are unioned."""
    s, e = np.empty(0), np.empty(0)
    for ps, pe in parts:
        s, e = _union(s, e, ps, pe)
    return _length(s, e)


def clip(
    starts: np.ndarray, ends: np.ndarray, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals cut to the window ``[lo, hi)``; those outside it are dropped.

    Intervals already inside the window come back as they are, not copied: the whole
    trace's window holds every interval, and two copies of a million host ops' spans were
    a good part of the analyses' peak at 3M events."""
    keep = (ends > lo) & (starts < hi)
    inside = (
        starts.dtype == ends.dtype == np.float64
        and bool(keep.all())
        and (not starts.size or (float(starts.min()) >= lo and float(ends.max()) <= hi))
    )
    if inside:
        return starts, ends
    return np.maximum(starts[keep], lo), np.minimum(ends[keep], hi)


def exclusive_sweep(
    layers: list[tuple[np.ndarray, np.ndarray]], lo: float, hi: float
) -> list[float]:
    """Time of ``[lo, hi)`` attributed to each layer by priority, plus the uncovered rest.

    At every instant the first layer (in list order) that is active gets the time, so the
    returned durations are disjoint and sum exactly to ``hi - lo``; the last entry is the
    time no layer covers.
    """
    total = max(hi - lo, 0.0)
    out: list[float] = []
    taken_s = np.empty(0)
    taken_e = np.empty(0)
    for starts, ends in layers:
        ls, le = clip(starts, ends, lo, hi)
        if not _is_merged(ls, le):
            ls, le = merge(ls, le)
        covered_before = _length(taken_s, taken_e)
        taken_s, taken_e = _union(taken_s, taken_e, ls, le)
        del ls, le
        out.append(_length(taken_s, taken_e) - covered_before)
    out.append(total - _length(taken_s, taken_e))
    return out


def _is_merged(s: np.ndarray, e: np.ndarray) -> bool:
    """Whether ``merge`` would give these intervals back as they are: none ends before it
    starts, each starts after the one before ended (so all are in start order)."""
    return bool(np.all(e >= s)) and bool(np.all(s[1:] > e[:-1]))


def _union(
    a_s: np.ndarray, a_e: np.ndarray, b_s: np.ndarray, b_e: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``merge`` of two merged lists, ``a`` first on equal starts as the stable sort of
    their concatenation has it, without that sort: placed by ``searchsorted``, the sort's
    order and its gathered copies (the bottleneck analysis' peak at 3M events) are not
    made."""
    if not b_s.size:
        return a_s, a_e
    at_b = np.searchsorted(a_s, b_s, side="right")
    at_b += np.arange(b_s.size)
    from_a = np.ones(a_s.size + b_s.size, dtype=bool)
    from_a[at_b] = False
    spans = [np.empty(from_a.size), np.empty(from_a.size)]
    spans[0][at_b], spans[1][at_b] = b_s, b_e
    spans[0][from_a], spans[1][from_a] = a_s, a_e
    del at_b, from_a
    return _merge_sorted(spans)


def _merge_sorted(spans: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``merge``'s grouping of intervals in start order, ``spans`` = [starts, ends], taken
    (emptied) so that each temporary is freed once used: the whole trace's host ops (a
    million spans at 3M events) are merged at once, and the temporaries, not the result,
    made the analyses' peak. The running end is made in place of the ends."""
    s, e = spans
    spans.clear()
    running_end = np.maximum.accumulate(e, out=e)
    new_group = np.empty(s.size, dtype=bool)
    new_group[0] = True
    np.greater(s[1:], running_end[:-1], out=new_group[1:])
    group_starts = np.flatnonzero(new_group)
    del new_group
    merged_starts = s[group_starts]
    del s
    group_ends = group_starts  # each group ends where the next starts, less one
    group_ends[:-1] = group_starts[1:] - 1
    group_ends[-1] = running_end.size - 1
    return merged_starts, running_end[group_ends]


def _length(s: np.ndarray, e: np.ndarray) -> float:
    return float(np.sum(e - s)) if s.size else 0.0
