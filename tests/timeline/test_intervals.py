"""Interval unions and the exclusive sweep against a brute-force unit-grid count."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.timeline.model.intervals import (
    exclusive_sweep,
    merge,
    merged_union_length,
    union_length,
)

_spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)), max_size=25)


def _arrays(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    s = np.array([a for a, _ in spans], dtype=float)
    return s, s + np.array([d for _, d in spans], dtype=float)


def _cells(spans: list[tuple[int, int]]) -> set[int]:
    return {t for a, d in spans for t in range(a, a + d)}


@settings(max_examples=200, deadline=None)
@given(_spans)
def test_union_counts_overlap_once(spans: list[tuple[int, int]]) -> None:
    s, e = _arrays(spans)
    assert union_length(s, e) == len(_cells(spans))
    s_in, e_in = s.copy(), e.copy()
    ms, me = merge(s, e)
    assert np.all(ms[1:] > me[:-1])  # disjoint and sorted
    # Merged in place of its own copies: the caller's arrays are left as they were.
    assert np.array_equal(s, s_in) and np.array_equal(e, e_in)
    # Each merged interval is one of the input starts and the furthest end of its group.
    assert set(ms.tolist()) <= set(s.tolist()) and set(me.tolist()) <= set(e.tolist())
    assert sum(me - ms) == len(_cells(spans))


@settings(max_examples=200, deadline=None)
@given(st.lists(_spans, min_size=1, max_size=4), st.integers(0, 30), st.integers(0, 50))
def test_exclusive_sweep_assigns_every_instant_once_by_priority(
    layers: list[list[tuple[int, int]]], lo: int, width: int
) -> None:
    hi = lo + width
    got = exclusive_sweep([_arrays(layer) for layer in layers], lo, hi)
    window = set(range(lo, hi))
    taken: set[int] = set()
    expected = []
    for layer in layers:
        mine = (_cells(layer) & window) - taken
        expected.append(len(mine))
        taken |= mine
    expected.append(len(window - taken))
    assert got == expected
    assert sum(got) == width


def _sweep_by_concatenation(
    layers: list[tuple[np.ndarray, np.ndarray]], lo: float, hi: float
) -> list[float]:
    """The sweep as it was: each layer merged, then merged again with the time taken so
    far by sorting their concatenation (float sums must agree to the last bit)."""
    out: list[float] = []
    taken_s, taken_e = np.empty(0), np.empty(0)

    def length(s: np.ndarray, e: np.ndarray) -> float:
        return float(np.sum(e - s)) if s.size else 0.0

    for starts, ends in layers:
        keep = (ends > lo) & (starts < hi)
        ls, le = merge(np.maximum(starts[keep], lo), np.minimum(ends[keep], hi))
        before = length(taken_s, taken_e)
        taken_s, taken_e = merge(np.concatenate([taken_s, ls]), np.concatenate([taken_e, le]))
        out.append(length(taken_s, taken_e) - before)
    out.append(max(hi - lo, 0.0) - length(taken_s, taken_e))
    return out


_float_spans = st.lists(
    st.tuples(st.floats(0, 100, allow_subnormal=False), st.floats(0, 9, allow_subnormal=False)),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_float_spans, st.booleans()), min_size=1, max_size=5),
    st.floats(-5, 50),
    st.floats(0, 120),
)
def test_exclusive_sweep_equals_the_sort_of_concatenations_bit_for_bit(
    layers: list[tuple[list[tuple[float, float]], bool]], lo: float, width: float
) -> None:
    """Layers already merged (as the bottleneck analysis gives them) or not, fractional
    times: the sweep that places each layer by searchsorted gives the very same floats."""
    arrays = []
    for spans, merged in layers:
        s = np.array([a for a, _ in spans], dtype=float)
        e = s + np.array([d for _, d in spans], dtype=float)
        arrays.append(merge(s, e) if merged else (s, e))
    hi = lo + width
    assert exclusive_sweep(arrays, lo, hi) == _sweep_by_concatenation(arrays, lo, hi)


@settings(max_examples=300, deadline=None)
@given(st.lists(_float_spans, max_size=4))
def test_union_of_merged_parts_is_the_union_of_their_concatenation_bit_for_bit(
    parts: list[list[tuple[float, float]]],
) -> None:
    """The bottleneck summary's unions of categories' merged spans, folded two at a time:
    the same float as merging the concatenation (empty parts and ties included)."""
    merged = []
    for spans in parts:
        s = np.array([a for a, _ in spans], dtype=float)
        merged.append(merge(s, s + np.array([d for _, d in spans], dtype=float)))
    starts = np.concatenate([np.empty(0)] + [m[0] for m in merged])
    ends = np.concatenate([np.empty(0)] + [m[1] for m in merged])
    assert merged_union_length(merged) == union_length(starts, ends)
