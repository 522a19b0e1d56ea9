"""ada-pa's original algorithm, re-written from the seed's description, as a reference.

Used to show that the TODO tests really discriminate (they fail on this) and, in the bench,
as the peer whose op_statistic is quadratic. Do not use for analysis.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path


@dataclass
class NaiveEvent:
    node: str | None
    event: str
    tid: int
    start: int
    end: int


def naive_events(path: Path) -> list[NaiveEvent]:
    recs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) != 5 or not parts[0].isdigit() or parts[4] not in ("Start", "End"):
            continue
        node = None if parts[2].startswith("UNKNOWN") else parts[2][1:-1]
        recs.append((int(parts[0]), int(parts[1]), node, parts[3][1:-1], parts[4]))
    recs.sort(key=lambda r: r[0])
    starts: dict[str, list[tuple[int, int, str | None, str, str]]] = defaultdict(list)
    events = []
    for rec in recs:
        key = f"{rec[2]}@{rec[3]}" if rec[2] else rec[3]  # keyed by name only, not by thread
        if rec[4] == "Start":
            starts[key].append(rec)
        elif starts[key]:
            s = starts[key].pop()
            events.append(NaiveEvent(s[2], s[3], s[1], s[0], rec[0]))
    return events


def naive_summary(events: list[NaiveEvent]) -> dict[str, tuple[int, float]]:
    """event → (count, total µs): every occurrence counted, nested ones included."""
    out: dict[str, list[float]] = defaultdict(list)
    for e in events:
        out[e.event].append((e.end - e.start) / 1000)
    return {k: (len(v), sum(v)) for k, v in out.items()}


def naive_op_statistic(events: list[NaiveEvent]) -> list[tuple[str | None, str]]:
    """(node, event) per event; an unnamed event rescans every named event of its thread."""
    events = sorted(events, key=lambda e: e.start)
    named: dict[int, list[NaiveEvent]] = defaultdict(list)
    rows: list[tuple[str | None, str]] = []
    for e in events:
        if e.node is not None:
            named[e.tid].append(e)
            rows.append((e.node, e.event))
            continue
        unfinished = sorted((n for n in named[e.tid] if n.end > e.start), key=lambda n: n.end)
        if unfinished:
            rows.append((unfinished[0].node, e.event))
    return rows
