"""Recover each thread's call tree from its events, in one linear pass (the stack pass of
kerneltracer.analysis.nesting, closing crossed events).

Events arrive in (start asc, end desc) order. Every event learns
- its parent (the innermost open event that contains it),
- its nearest enclosing event of the same kind (``same_parent``): that is how a Tiling made of
  two inner Tilings is counted once, as the two inner ones (a Transdata made of two Tilings),
- whether it crosses an open event: it starts inside it but ends after it. Such a pair is not
  a tree; it is reported, and the earlier event is closed so that the walk stays linear.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from kerneltracer.analysis.nesting import stack_pass
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


def build_nesting(ev: PairedEvents) -> Nesting:
    # Host tids and the single device track must not share a key (tid 1 is real in containers).
    dev = ev.device
    thread = [t * 2 + (1 if dev[i] == DEVICE else 0) for i, t in enumerate(ev.tid)]
    walk = stack_pass(ev.start, ev.end, thread, close_crossed=True, kind=ev.event)
    same_parent = walk.same_parent if walk.same_parent is not None else array("q")
    nested = array("i", bytes(4 * len(ev)))
    pairs: dict[int, list[int]] = {}
    for i, w in enumerate(same_parent):
        if w < 0:
            continue
        nested[w] += 1
        if nested[w] <= 2:
            pairs.setdefault(w, []).append(i)
        else:
            pairs.pop(w, None)
    return Nesting(walk.parent, same_parent, nested, pairs, walk.crossings)
