"""Interval unions and the exclusive sweep against a brute-force unit-grid count."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneltracer.analysis.timeline.model.intervals import exclusive_sweep, merge, union_length

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
