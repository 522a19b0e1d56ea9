"""Intervals nested by time, per thread: one stack pass that gives every interval its parent.

Both the timeline (host ops of a chrome trace) and the records analysis (ranges of a device
dump) recover call trees this way. Intervals come in (start ascending, end descending)
order within each thread — threads may interleave — and each is given the innermost open
interval of its thread as parent.

Two rules differ between the callers and are chosen by ``close_crossed``:

- ``False`` (what a stack-based trace viewer shows): an open interval is closed once it
  ended before the new one starts; one that the new interval overlaps without nesting stays
  open and becomes its parent, and an empty interval at its end is inside it.
- ``True`` (records): an interval that ended at or before the new one's start is closed,
  and one the new interval crosses (starts inside, ends after) is closed too and reported
  in ``crossings`` as ``(earlier, later)``, so the walk stays linear and the tree a tree.

With ``kind``, each interval also learns its nearest enclosing interval of the same kind
(``same_parent``), kept with one stack per kind beside the thread's stack.

:class:`Nesting` answers queries on the result for numpy columns (the innermost interval
enclosing a moment on a thread, an interval's ancestors).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class StackPass:
    parent: array[int]  # per interval, its parent's index (-1 at the top of its thread)
    same_parent: array[int] | None = None  # only with ``kind``: nearest same-kind ancestor
    crossings: list[tuple[int, int]] = field(default_factory=list)  # close_crossed only


def stack_pass(
    start: Sequence[float],
    end: Sequence[float],
    thread: Sequence[int],
    *,
    close_crossed: bool = False,
    kind: Sequence[int] | None = None,
) -> StackPass:
    """Parents (and same-kind parents with ``kind``) of intervals given in (start asc, end
    desc) order per thread; see the module docstring for ``close_crossed``."""
    n = len(start)
    parent = array("q", bytes(8 * n))
    same_parent = array("q", bytes(8 * n)) if kind is not None else None
    crossings: list[tuple[int, int]] = []
    threads: dict[int, tuple[list[int], dict[int, list[int]]]] = {}
    last: int | None = None
    stack: list[int] = []
    by_kind: dict[int, list[int]] = {}
    for i in range(n):
        s, e, t = start[i], end[i], thread[i]
        if t != last:  # callers mostly give one thread's run at a time: one lookup per run
            state = threads.get(t)
            if state is None:
                state = threads[t] = ([], {})
            stack, by_kind = state
            last = t
        if close_crossed:
            while stack and end[stack[-1]] <= s:
                _pop(stack, by_kind, kind)
            while stack and end[stack[-1]] < e:
                crossings.append((_pop(stack, by_kind, kind), i))
        else:
            while stack and end[stack[-1]] <= s and end[stack[-1]] < e:
                _pop(stack, by_kind, kind)
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
        if kind is not None and same_parent is not None:
            same = by_kind.get(kind[i])
            if same is None:
                same = by_kind[kind[i]] = []
            same_parent[i] = same[-1] if same else -1
            same.append(i)
    return StackPass(parent, same_parent, crossings)


def _pop(stack: list[int], by_kind: dict[int, list[int]], kind: Sequence[int] | None) -> int:
    j = stack.pop()
    if kind is not None:
        by_kind[kind[j]].pop()
    return j


def thread_keys(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 per (pid, tid) pair of label indices."""
    return (pid.astype(np.int64) << 32) | tid.astype(np.int64)


class Nesting:
    """Intervals (trace rows) grouped by thread, each with its parent row (-1 at the top).

    The innermost interval enclosing a query is found from the last interval of its thread
    that started at or before it, walking up its parents: in a properly nested tree every
    interval enclosing the query is one of those ancestors."""

    def __init__(
        self, rows: np.ndarray, ts: np.ndarray, end: np.ndarray, thread: np.ndarray
    ) -> None:
        rows = rows[np.lexsort((-end[rows], ts[rows], thread[rows]))]
        self.rows = rows
        self.ts = ts[rows]
        self.end = end[rows]
        threads = thread[rows]
        # Memoryviews, not lists: the three columns as Python lists peaked ~55 MiB higher
        # for the 700k host ops of a 3M-event trace, for the same Python floats and ints
        # read one at a time.
        # Each thread's run of positions, not a thread key per interval: queries search the
        # ts of their thread's run (a (thread, ts) key per interval held 16 bytes each).
        cuts = np.flatnonzero(threads[1:] != threads[:-1]) + 1
        self._threads = threads[np.concatenate(([0], cuts))] if threads.size else threads
        self._bounds = np.concatenate(([0], cuts, [threads.size]))
        found = _nested_parents(self.ts, self.end, self._bounds)
        if found is None:  # not nested as the levels need: the stack walk itself
            parents = stack_pass(memoryview(self.ts), memoryview(self.end), memoryview(threads))
            found = np.frombuffer(parents.parent, dtype=np.int64) if len(threads) else _NONE
        self.parent_pos = found
        del threads
        # Row -> position as an array over the trace's rows, not a dict: a dict of 700k
        # host ops held 80 MiB on a 3M-event trace, this 4 bytes per trace row.
        self._pos = np.full(ts.size, -1, dtype=np.int32 if self.rows.size < 2**31 else np.int64)
        self._pos[self.rows] = np.arange(self.rows.size)

    def __len__(self) -> int:
        return int(self.rows.size)

    def parent(self, row: int) -> int:
        """The enclosing interval's row, -1 at the top of its thread."""
        # item(): Python ints straight from the arrays, no numpy scalar per step (called
        # for every op instance attribution makes).
        p = self.parent_pos.item(self._position(row))
        return self.rows.item(p) if p >= 0 else -1

    def positions(self, rows: np.ndarray) -> np.ndarray:
        """Each of ``rows``' position in ``self.rows`` (KeyError for a row not held)."""
        pos = self._pos[rows].astype(np.int64)
        if (pos < 0).any():
            raise KeyError(int(rows[pos < 0][0]))
        return pos

    def parents(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`parent` of each of ``rows``."""
        p = self.parent_pos[self.positions(rows)]
        return np.where(p >= 0, self.rows[np.maximum(p, 0)], -1) if p.size else p

    def _position(self, row: int) -> int:
        pos = self._pos.item(row)
        if pos < 0:
            raise KeyError(row)
        return int(pos)

    def ancestors(self, row: int) -> list[int]:
        """Rows enclosing ``row``, innermost first."""
        out = []
        p = self.parent_pos[self._position(row)]
        while p >= 0:
            out.append(int(self.rows[p]))
            p = self.parent_pos[p]
        return out

    def innermost(self, thread: np.ndarray, ts: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Per query, the row of the innermost interval on its thread that encloses
        ``[ts, end]``; -1 where none does."""
        out = np.full(ts.size, -1, dtype=np.int64)
        if not self.rows.size or not ts.size:
            return out
        # A query's candidate: the last interval of its thread starting at or before it.
        cand = np.full(ts.size, -1, dtype=np.int64)
        run = np.searchsorted(self._threads, thread)
        run[run == self._threads.size] = 0
        mine = np.flatnonzero(self._threads[run] == thread)
        mine = mine[np.argsort(run[mine], kind="stable")]
        for group in np.split(mine, np.flatnonzero(np.diff(run[mine])) + 1):  # one per thread
            if not group.size:
                continue
            k = int(run[group[0]])
            lo, hi = int(self._bounds[k]), int(self._bounds[k + 1])
            cand[group] = lo + np.searchsorted(self.ts[lo:hi], ts[group], side="right") - 1
            cand[group[cand[group] < lo]] = -1
        parent, iend = self.parent_pos, self.end
        for q in np.flatnonzero(cand >= 0).tolist():
            p, e = int(cand[q]), end[q]
            while p >= 0 and iend[p] < e:
                p = int(parent[p])
            if p >= 0:
                out[q] = self.rows[p]
        return out


_NONE = np.empty(0, dtype=np.int64)
_BLOCK = 1 << 16  # intervals whose temporaries are made at a time


def _nested_parents(start: np.ndarray, end: np.ndarray, bounds: np.ndarray) -> np.ndarray | None:
    """What :func:`stack_pass` gives as parents (``close_crossed=False``) of intervals in
    (thread, start asc, end desc) order, threads' runs at ``bounds``, with whole-array
    operations; None where it cannot tell (the walk then runs).

    Interval j is on the walk's stack from j on until the first interval k after it that
    starts at or after j's end and ends after it (an empty one at j's end is inside j): its
    ``until``. While intervals nest, the stack at i is the j < i with ``until[j] > i``, and
    its top (i's parent) is the last j before i at one level less; that each interval ends
    no later than that parent is what nesting means here, and is checked: it keeps the
    stack's ends in order, so that the walk's pops are the ``until`` counts (by induction).
    The walk over the 50k host ops of a 218k-event trace took ~14 ms, this ~5."""
    n = start.size
    if not n or not (np.isfinite(start).all() and np.isfinite(end).all()):
        return None
    # Positions and levels as int32 where they fit, and work on whole-array temporaries a
    # block at a time: at 3M events (700k host ops) they otherwise raised the run's peak
    # by ~30 MiB over the walk's.
    small = np.int32 if n < 2**31 - 1 else np.int64
    until: np.ndarray = np.empty(n, dtype=small)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        s, e_run = start[lo:hi], end[lo:hi]
        for at0 in range(lo, hi, _BLOCK):
            at1 = min(at0 + _BLOCK, hi)
            e = end[at0:at1]
            first = np.searchsorted(s, e, side="left")
            np.maximum(first, np.arange(at0 - lo + 1, at1 - lo + 1), out=first)
            # Intervals that start at j's end come longest first: from the first empty one
            # there on they all are, and empty intervals at j's end stay inside j.
            at = np.minimum(first, s.size - 1)
            empty = (first < s.size) & (s[at] == e) & (e_run[at] == e)
            first[empty] = np.searchsorted(s, e[empty], side="right")
            until[at0:at1] = first + lo
    level, keys = levels(until)
    parent = np.full(n, -1, dtype=np.int64)
    for at0 in range(0, n, _BLOCK):
        inner = at0 + np.flatnonzero(level[at0 : at0 + _BLOCK] > 0)
        if not inner.size:
            continue
        up = last_at_level(keys, level[inner] - 1, inner, n)
        if up is None or not ((end[inner] <= end[up]).all() and (until[up] > inner).all()):
            return None
        parent[inner] = up
    return parent


def levels(until: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each interval's depth on a stack that interval j stays on up to position
    ``until[j]`` (the intervals open at its start: those before it less those closed by
    then), and the ``level * n + position`` keys of all, sorted, that :func:`last_at_level`
    searches. Levels are int32 where they fit; the keys are made a block at a time."""
    n = until.size
    closed = np.bincount(until, minlength=n + 1)
    np.cumsum(closed, out=closed)
    level: np.ndarray = np.arange(n, dtype=np.int32 if n < 2**31 - 1 else np.int64)
    np.subtract(level, closed[:n], out=level, casting="unsafe")
    del closed
    keys = level.astype(np.int64)
    keys *= n
    for at0 in range(0, n, _BLOCK):
        keys[at0 : at0 + _BLOCK] += np.arange(at0, min(at0 + _BLOCK, n))
    keys.sort()
    return level, keys


def last_at_level(
    keys: np.ndarray, wanted: np.ndarray, rows: np.ndarray, n: int
) -> np.ndarray | None:
    """For each of ``rows`` (positions), the last position before it at the ``wanted``
    level, from ``keys`` (``level * n + position`` of the candidates, sorted); None if one
    has none."""
    found = np.searchsorted(keys, wanted.astype(np.int64) * n + rows) - 1
    if found.size and found.min() < 0:
        return None
    hit = keys[found]
    if not (hit // n == wanted).all():
        return None
    return hit % n
