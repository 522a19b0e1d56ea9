"""Host intervals nested by time, per thread: which op (or module, or runtime call)
encloses a moment on a thread.

Events of one thread are sorted by start (longer first on ties) and given the nearest
open interval as parent with one stack pass. The innermost interval enclosing a query is
found from the last interval that started at or before it, walking up its parents: in a
properly nested tree every interval enclosing the query is one of those ancestors.
Profiler traces nest host events properly; an interval that overlaps its neighbour without
nesting gets the nearest open one as parent, which is what a stack-based viewer shows.
"""

from __future__ import annotations

import numpy as np


def thread_keys(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 per (pid, tid) pair of label indices."""
    return (pid.astype(np.int64) << 32) | tid.astype(np.int64)


class Nesting:
    """Intervals (trace rows) grouped by thread, each with its parent row (-1 at the top)."""

    def __init__(
        self, rows: np.ndarray, ts: np.ndarray, end: np.ndarray, thread: np.ndarray
    ) -> None:
        order = np.lexsort((-end[rows], ts[rows], thread[rows]))
        self.rows = rows[order]
        self.ts = ts[self.rows]
        self.end = end[self.rows]
        self.thread = thread[self.rows]
        self.parent_pos = _parents(self.ts, self.end, self.thread)
        self._pos = {int(r): i for i, r in enumerate(self.rows.tolist())}

    def __len__(self) -> int:
        return int(self.rows.size)

    def parent(self, row: int) -> int:
        """The enclosing interval's row, -1 at the top of its thread."""
        p = self.parent_pos[self._pos[row]]
        return int(self.rows[p]) if p >= 0 else -1

    def ancestors(self, row: int) -> list[int]:
        """Rows enclosing ``row``, innermost first."""
        out = []
        p = self.parent_pos[self._pos[row]]
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
        # Sort key (thread, ts): a query's candidates are those of its thread starting <= ts.
        keys = _combined(self.thread, self.ts)
        qkeys = _combined(thread, ts)
        first = np.searchsorted(self.thread, thread, side="left")
        cand = np.searchsorted(keys, qkeys, side="right") - 1
        parent, iend = self.parent_pos, self.end
        for q in np.flatnonzero(cand >= first).tolist():
            p, e = int(cand[q]), end[q]
            while p >= 0 and iend[p] < e:
                p = int(parent[p])
            if p >= 0:
                out[q] = self.rows[p]
        return out


def _combined(thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """(thread, ts) as one sortable structured key."""
    key = np.empty(ts.size, dtype=[("t", np.int64), ("s", np.float64)])
    key["t"] = thread
    key["s"] = ts
    return key


def _parents(ts: np.ndarray, end: np.ndarray, thread: np.ndarray) -> np.ndarray:
    parent = np.full(ts.size, -1, dtype=np.int64)
    stack: list[int] = []
    stack_end: list[float] = []
    last_thread = None
    for i, (t, s, e) in enumerate(zip(thread.tolist(), ts.tolist(), end.tolist(), strict=True)):
        if t != last_thread:
            stack.clear()
            stack_end.clear()
            last_thread = t
        while stack and stack_end[-1] <= s and stack_end[-1] < e:
            stack.pop()
            stack_end.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
        stack_end.append(e)
    return parent
