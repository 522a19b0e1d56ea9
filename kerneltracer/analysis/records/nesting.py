"""Recover each thread's call tree from its events, in one linear pass.

Events arrive in (start asc, end desc) order. Per thread we keep the stack of open events
and, per kind of event, the stack of open events of that kind, so every event learns
- its parent (the innermost open event that contains it),
- its nearest enclosing event of the same kind (``same_parent``): that is how a Tiling made of
  two inner Tilings is counted once, as the two inner ones (a Transdata made of two Tilings),
- whether it crosses an open event: it starts inside it but ends after it. Such a pair is not
  a tree; it is reported, and the earlier event is closed so that the walk stays linear.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from kerneltracer.analysis.records.model import DEVICE
from kerneltracer.analysis.records.pairing import PairedEvents


@dataclass
class Nesting:
    parent: array[int]
    same_parent: array[int]
    nested: array[int]  # direct same-kind children
    # wrapper index -> its same-kind children, only for wrappers with exactly two so far
    pairs: dict[int, list[int]] = field(default_factory=dict)
    crossings: list[tuple[int, int]] = field(default_factory=list)  # (earlier, later)


class _Thread:
    __slots__ = ("by_event", "stack")

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.by_event: dict[int, list[int]] = {}


def build_nesting(ev: PairedEvents) -> Nesting:
    n = len(ev)
    start, end, kind, tid, dev = ev.start, ev.end, ev.event, ev.tid, ev.device
    parent = array("q", bytes(8 * n))
    same_parent = array("q", bytes(8 * n))
    nested = array("i", bytes(4 * n))
    pairs: dict[int, list[int]] = {}
    crossings: list[tuple[int, int]] = []
    threads: dict[int, _Thread] = {}
    for i in range(n):
        s, e, k = start[i], end[i], kind[i]
        # Host tids and the single device track must not share a key (tid 1 is real in containers).
        tkey = tid[i] * 2 + (1 if dev[i] == DEVICE else 0)
        th = threads.get(tkey)
        if th is None:
            th = threads[tkey] = _Thread()
        stack, by_event = th.stack, th.by_event
        while stack and end[stack[-1]] <= s:
            by_event[kind[stack.pop()]].pop()
        while stack and end[stack[-1]] < e:
            j = stack.pop()
            by_event[kind[j]].pop()
            crossings.append((j, i))
        parent[i] = stack[-1] if stack else -1
        same = by_event.get(k)
        if same is None:
            same = by_event[k] = []
        if same:
            w = same[-1]
            same_parent[i] = w
            nested[w] += 1
            if nested[w] <= 2:
                pairs.setdefault(w, []).append(i)
            else:
                pairs.pop(w, None)
        else:
            same_parent[i] = -1
        stack.append(i)
        same.append(i)
    return Nesting(parent, same_parent, nested, pairs, crossings)
