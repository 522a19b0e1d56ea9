"""The record data model: raw Start/End records and the events paired from them.

A log may hold millions of records, so each :class:`ProfilingData` stores its data as typed
columns (``array``) instead of one Python object per record. Readers get row objects
(:class:`Record`, :class:`EventRecord`) on demand, or read-only column views for fast scans;
nothing handed out can change the data, which is what lets several reporters share one
``ProfilingData`` safely.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Generic, TypeVar

DEV_HOST_CPU = "Host CPU"
DEV_DEVICE = "Device"
DEVICES: tuple[str, ...] = (DEV_HOST_CPU, DEV_DEVICE)
HOST, DEVICE = 0, 1

# Device-side events are recorded by whichever host thread observed them; the tid is
# meaningless, so they all share one device track (and Start/End can pair across threads).
DEVICE_EVENT = "Compute"
DEVICE_TID = 1

NO_NAME = -1  # node id of UNKNOWN(n) node names
START, END = 1, 0


class Attribution(IntEnum):
    """How an event's op (the node op_statistic charges it to) was decided."""

    OWN = 0  # the record names its node
    ENCLOSING = 1  # unnamed: the nearest enclosing named event's op
    ATOMIC = 2  # unnamed: the atomic-clean op hidden inside its parent op
    NONE = 3  # unnamed and nothing encloses it

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Record:
    node_name: str | None
    event: str
    et: str  # "Start" or "End"
    tid: int
    timestamp: int  # ns
    iteration: str
    device: str
    line: int  # 1-based line in the log


@dataclass(frozen=True, slots=True)
class EventRecord:
    node_name: str | None
    event: str
    tid: int
    iteration: str
    device: str
    start: int  # ns
    end: int  # ns
    op: str | None  # the node the event is charged to (see Attribution)
    attribution: Attribution
    parent: int  # index of the enclosing event in the same thread, -1 at top level
    same_parent: int  # index of the nearest enclosing event of the same kind, -1 if none
    nested: int  # events of the same kind directly folded into this one (0 = a leaf)
    start_line: int
    end_line: int

    @property
    def duration(self) -> int:
        return self.end - self.start


R = TypeVar("R")


class _Table(ABC, Generic[R]):
    """Read-only access to a set of equally long typed columns of one dump: ``names`` are
    its interned strings, a row reads as one ``R``."""

    COLUMNS: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, columns: dict[str, array[int]], names: tuple[str, ...], iteration: str
    ) -> None:
        self._names = names
        self._iteration = iteration
        missing = set(self.COLUMNS) - set(columns)
        if missing:
            raise ValueError(f"missing columns: {sorted(missing)}")
        lengths = {len(columns[c]) for c in self.COLUMNS}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        self._cols = {c: columns[c] for c in self.COLUMNS}
        self._len = lengths.pop() if lengths else 0

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> R:
        if not -self._len <= i < self._len:
            raise IndexError(i)
        return self._row(i)

    def __iter__(self) -> Iterator[R]:
        return (self._row(i) for i in range(self._len))

    def _name(self, index: int) -> str | None:
        return None if index == NO_NAME else self._names[index]

    @abstractmethod
    def _row(self, i: int) -> R:
        """Row ``i`` (in range)."""

    def column(self, name: str) -> memoryview:
        """A read-only view of one column (iterate it, index it, never write it)."""
        try:
            return memoryview(self._cols[name]).toreadonly()
        except KeyError:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self.COLUMNS)}") from None

    def _update_digest(self, h: hashlib._Hash) -> None:
        for name in self.COLUMNS:
            h.update(name.encode())
            h.update(self._cols[name].tobytes())


class RecordTable(_Table[Record]):
    COLUMNS = ("timestamp", "tid", "node", "event", "et", "device", "line")

    def _row(self, i: int) -> Record:
        c = self._cols
        return Record(
            node_name=self._name(c["node"][i]),
            event=self._names[c["event"][i]],
            et="Start" if c["et"][i] == START else "End",
            tid=c["tid"][i],
            timestamp=c["timestamp"][i],
            iteration=self._iteration,
            device=DEVICES[c["device"][i]],
            line=c["line"][i],
        )


class EventTable(_Table[EventRecord]):
    """Events in (start ascending, end descending) order: a parent precedes its children."""

    COLUMNS = (
        "start", "end", "node", "event", "tid", "device", "op", "attribution",
        "parent", "same_parent", "nested", "start_rec", "end_rec",
    )  # fmt: skip

    def __init__(
        self,
        columns: dict[str, array[int]],
        names: tuple[str, ...],
        iteration: str,
        record_lines: array[int],
    ) -> None:
        super().__init__(columns, names, iteration)
        self._lines = record_lines

    def _row(self, i: int) -> EventRecord:
        c = self._cols
        return EventRecord(
            node_name=self._name(c["node"][i]),
            event=self._names[c["event"][i]],
            tid=c["tid"][i],
            iteration=self._iteration,
            device=DEVICES[c["device"][i]],
            start=c["start"][i],
            end=c["end"][i],
            op=self._name(c["op"][i]),
            attribution=Attribution(c["attribution"][i]),
            parent=c["parent"][i],
            same_parent=c["same_parent"][i],
            nested=c["nested"][i],
            start_line=self._lines[c["start_rec"][i]],
            end_line=self._lines[c["end_rec"][i]],
        )


class AnomalyKind(IntEnum):
    UNMATCHED_START = 0  # a Start whose End never came (e.g. the worker died in that phase)
    UNMATCHED_END = 1  # an End with no open Start of the same (tid, node, event)
    CROSSING = 2  # two ranges of one thread overlap without nesting
    DUMP = 3  # a dump-level problem: record count mismatch, dump never ended

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: AnomalyKind
    line: int  # the line the anomaly is anchored on (0 if none)
    other_line: int  # crossing: the line of the other range's Start; else 0
    tid: int
    node_name: str | None
    event: str
    detail: str


@dataclass(frozen=True)
class ProfilingData:
    """One profiling dump: its raw records, the events paired from them, and what was wrong."""

    index: int
    version: str
    names: tuple[str, ...]
    records: RecordTable
    event_records: EventTable
    anomalies: tuple[Anomaly, ...]
    anomaly_counts: tuple[tuple[AnomalyKind, int], ...]  # exact, even when details are capped

    def count(self, kind: AnomalyKind) -> int:
        return dict(self.anomaly_counts).get(kind, 0)

    def fingerprint(self) -> str:
        """A digest of all the data, to show that readers left it unchanged."""
        h = hashlib.sha256()
        h.update(repr((self.index, self.version, self.names)).encode())
        self.records._update_digest(h)
        self.event_records._update_digest(h)
        h.update(repr((self.anomalies, self.anomaly_counts)).encode())
        return h.hexdigest()


def display_name(node: str | None, event: str) -> str:
    """ada-pa's event label: ``node@event``, or just the event when the node is unknown."""
    return event if node is None else f"{node}@{event}"
