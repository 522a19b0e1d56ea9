"""Per-event totals for one dump, with nested events of the same kind counted once.

For each kind of event (host CPU only, as in ada-pa):
- total = the sum of each event's time *exclusive of nested events of the same kind*, which
  is the time covered by that kind in each thread (the outermost ranges' sum);
- count = the events that have no nested event of their kind (leaves); a wrapper that only
  splits into inner events of its kind is ``folded`` into them, not counted again.
A Transdata (a 20 µs Tiling made of two 10 µs Tilings) gives 2 tilings,
20 µs total, 10 µs average -- not 3 tilings, 40 µs.

w-percent is the total divided by the total of the first standard event present
(``AclCompileAndExecute``, then ``OpExecute``); a log without one (the worker phase log)
uses the dump's host wall time, first Start to last End.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltracer.analysis.records.model import HOST, ProfilingData

_STANDARD_EVENTS: tuple[str, ...] = ("AclCompileAndExecute", "OpExecute")
_WALL_TIME = "wall time"


@dataclass(frozen=True)
class SummaryRow:
    event: str
    count: int
    total_ns: int
    folded: int  # wrappers folded into their inner events of the same kind

    @property
    def avg_ns(self) -> float:
        return self.total_ns / self.count if self.count else 0.0


@dataclass(frozen=True)
class Summary:
    rows: tuple[SummaryRow, ...]  # by total time, largest first
    basis: str  # the standard event w-percent divides by, or _WALL_TIME
    basis_ns: int

    def w_percent(self, row: SummaryRow) -> float:
        return row.total_ns / self.basis_ns if self.basis_ns else 0.0


def summarize(pd: ProfilingData, standard_events: tuple[str, ...] = _STANDARD_EVENTS) -> Summary:
    ev = pd.event_records
    start, end, kind = ev.column("start"), ev.column("end"), ev.column("event")
    dev, same_parent, nested = ev.column("device"), ev.column("same_parent"), ev.column("nested")
    totals: dict[int, int] = {}
    counts: dict[int, int] = {}
    folded: dict[int, int] = {}
    first = last = None
    for i in range(len(ev)):
        if dev[i] != HOST:
            continue
        k, s, e = kind[i], start[i], end[i]
        if same_parent[i] < 0:
            totals[k] = totals.get(k, 0) + (e - s)
        if nested[i]:
            folded[k] = folded.get(k, 0) + 1
        else:
            counts[k] = counts.get(k, 0) + 1
        if first is None or s < first:
            first = s
        if last is None or e > last:
            last = e
    rows = tuple(
        sorted(
            (
                SummaryRow(pd.names[k], counts.get(k, 0), totals.get(k, 0), folded.get(k, 0))
                for k in totals
            ),
            key=lambda r: (-r.total_ns, r.event),
        )
    )
    by_name = {r.event: r.total_ns for r in rows}
    for name in standard_events:
        if by_name.get(name):
            return Summary(rows, name, by_name[name])
    wall = (last - first) if first is not None and last is not None else 0
    return Summary(rows, _WALL_TIME, wall)
