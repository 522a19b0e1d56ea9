"""Pair Start/End records into events, per (tid, node, event), with a stack per key.

Records are visited in timestamp order (a stable sort, so equal timestamps keep file order).
Each Start reserves an event slot at once, so events come out in start order without a
sort; an End closes the innermost open Start of its key (same-key nesting pairs LIFO).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import pairwise

from kerneltracer.analysis.records.parser import RawDump

_OPEN = -1


@dataclass
class PairedEvents:
    """Event columns in (start ascending, end descending) order."""

    start: array[int] = field(default_factory=lambda: array("q"))
    end: array[int] = field(default_factory=lambda: array("q"))
    node: array[int] = field(default_factory=lambda: array("i"))
    event: array[int] = field(default_factory=lambda: array("i"))
    tid: array[int] = field(default_factory=lambda: array("q"))
    device: array[int] = field(default_factory=lambda: array("b"))
    start_rec: array[int] = field(default_factory=lambda: array("q"))
    end_rec: array[int] = field(default_factory=lambda: array("q"))
    unmatched_starts: list[int] = field(default_factory=list)  # record indices
    unmatched_ends: list[int] = field(default_factory=list)  # record indices

    COLUMNS = ("start", "end", "node", "event", "tid", "device", "start_rec", "end_rec")

    def __len__(self) -> int:
        return len(self.start)


def _time_order(ts: array[int]) -> range | list[int]:
    if all(a <= b for a, b in pairwise(ts)):
        return range(len(ts))
    return sorted(range(len(ts)), key=ts.__getitem__)


def pair_records(dump: RawDump) -> PairedEvents:
    ev = PairedEvents()
    ts, tids, nodes, events, ets, devs = (
        dump.timestamp, dump.tid, dump.node, dump.event, dump.et, dump.device,
    )  # fmt: skip
    open_by_key: dict[tuple[int, int, int], list[int]] = {}
    e_start, e_end, e_rec, e_end_rec = ev.start, ev.end, ev.start_rec, ev.end_rec
    for r in _time_order(ts):
        key = (tids[r], nodes[r], events[r])
        if ets[r]:
            stack = open_by_key.get(key)
            if stack is None:
                stack = open_by_key[key] = []
            stack.append(len(e_start))
            e_start.append(ts[r])
            e_end.append(_OPEN)
            e_rec.append(r)
            e_end_rec.append(_OPEN)
            ev.node.append(nodes[r])
            ev.event.append(events[r])
            ev.tid.append(tids[r])
            ev.device.append(devs[r])
        else:
            stack = open_by_key.get(key)
            if not stack:
                ev.unmatched_ends.append(r)
                continue
            k = stack.pop()
            e_end[k] = ts[r]
            e_end_rec[k] = r
    for stack in open_by_key.values():
        ev.unmatched_starts.extend(e_rec[k] for k in stack)
    ev.unmatched_starts.sort()
    return _finish_order(ev)


def _finish_order(ev: PairedEvents) -> PairedEvents:
    """Drop unclosed slots; among equal starts put the longer (outer) event first."""
    start, end = ev.start, ev.end
    keep: list[int] | range = range(len(start))
    if ev.unmatched_starts:
        keep = [k for k in keep if end[k] != _OPEN]
    # Cheap screen first: ties in start are rare, a misordered tie rarer still.
    if any(a == b for a, b in pairwise(start)) and any(
        start[a] == start[b] and end[a] < end[b] for a, b in pairwise(keep)
    ):
        keep = sorted(keep, key=lambda k: (start[k], -end[k]))
    if isinstance(keep, range):
        return ev
    out = PairedEvents(unmatched_starts=ev.unmatched_starts, unmatched_ends=ev.unmatched_ends)
    for name in PairedEvents.COLUMNS:
        src = getattr(ev, name)
        setattr(out, name, array(src.typecode, [src[k] for k in keep]))
    return out
