"""Check an InferScope document against its constraints, listing violations.

The constraints: unique ids, start before end, no overlapping kernels on one stream, scopes
within their parent and with an event range inside the trace; zero-length events are
warnings.

Real profiler traces break these rules now and then (zero-length ops, kernels that overlap
on a stream after ns rounding, annotations that cross), so every violation is reported with
the ids involved and nothing is fatal: the caller decides what to do with the list.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

_STREAM_TYPES = frozenset({"gpu_kernel", "h2d_copy", "d2h_copy"})
_MAX_LISTED_PER_CONSTRAINT = 50
_WARNINGS = frozenset({"zero_duration"})


@dataclass(frozen=True)
class Violation:
    # unique_id | timestamp_order | zero_duration | stream_overlap | scope_containment | event_range
    constraint: str
    severity: str  # error | warning
    ids: tuple[str, ...]
    detail: str


@dataclass
class ValidationReport:
    checked_events: int
    checked_scopes: int
    counts: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)  # the first few of each kind

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def error_count(self) -> int:
        return sum(n for k, n in self.counts.items() if k not in _WARNINGS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked_events": self.checked_events,
            "checked_scopes": self.checked_scopes,
            "counts": dict(sorted(self.counts.items())),
            "violations": [asdict(v) for v in self.violations],
            "listed": len(self.violations),
        }


class _Collector:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.listed: list[Violation] = []

    def add(self, constraint: str, severity: str, ids: tuple[str, ...], detail: str) -> None:
        self.counts[constraint] += 1
        if self.counts[constraint] <= _MAX_LISTED_PER_CONSTRAINT:
            self.listed.append(Violation(constraint, severity, ids, detail))


# An op on a stream: ((device id, stream id), (start, end, event id)).
Lane = tuple[tuple[Any, Any], tuple[float, float, str]]


@dataclass(frozen=True)
class LaneColumns:
    """What ``lane_of`` gives of the converter's events that run on a stream, as columns
    in event order: the lane ``(device, stream)`` (device -1: None) and the span of event
    ``e<number>``. A tuple and an id string per GPU op, parsed back into the number, were
    most of the checks' time."""

    device: np.ndarray  # int64
    stream: np.ndarray  # int64
    start: np.ndarray  # float64 µs
    end: np.ndarray  # float64 µs
    number: np.ndarray  # int64

    @classmethod
    def empty(cls) -> LaneColumns:
        ints, floats = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        return cls(ints, ints, floats, floats, ints)

    @classmethod
    def joined(cls, parts: list[LaneColumns]) -> LaneColumns:
        """``parts`` as one, in event order (their numbers are distinct)."""
        fields = ("device", "stream", "start", "end", "number")
        whole = {f: np.concatenate([getattr(p, f) for p in parts]) for f in fields}
        order = np.argsort(whole["number"], kind="stable")
        return cls(**{f: v[order] for f, v in whole.items()})


@dataclass
class EventColumns:
    """A run of the converter's events ``e<first>, e<first+1>, …`` as columns: what the checks
    read of them, without a dict per event. ``lanes``: those of them that run on a stream,
    in event order (the order the report lists streams in)."""

    first: int
    spans: np.ndarray  # bool: has a start and an end (not an instant)
    start: np.ndarray  # float64 µs
    end: np.ndarray  # float64 µs
    names: np.ndarray  # object: the event names
    lanes: LaneColumns


class Validator:
    """Checks events as they stream past (``feed`` or ``feed_columns``), then the scopes
    (``finish``); both feeds give the same report for the same events."""

    def __init__(self) -> None:
        self.out = _Collector()
        self.seen = _IdSet()
        self.n_events = 0
        self.lanes: defaultdict[tuple[Any, Any], _Spans] = defaultdict(_Spans)

    def feed(self, events: list[dict[str, Any]]) -> None:
        self.n_events += len(events)
        _unique_ids(events, self.seen, self.out)
        _timestamps(events, self.out)
        _collect_lanes(events, self.lanes)

    def feed_columns(self, c: EventColumns) -> None:
        n = int(c.start.size)
        self.n_events += n
        if not self.seen.add_range(c.first, n):
            _unique_ids([{"id": f"e{k}"} for k in range(c.first, c.first + n)], self.seen, self.out)

        def event(i: int) -> dict[str, Any]:
            return {
                "id": f"e{c.first + i}",
                "name": c.names[i],
                "timestamp_start_us": float(c.start[i]),
                "timestamp_end_us": float(c.end[i]),
            }

        _span_checks(c.spans, c.start, c.end, event, self.out)
        lanes = c.lanes
        devices, streams = lanes.device.tolist(), lanes.stream.tolist()
        # The lanes in the order they first come (few: one a stream), each one's ops at once.
        for device, stream in dict.fromkeys(zip(devices, streams, strict=True)):
            on = (lanes.device == device) & (lanes.stream == stream)
            key = (None if device < 0 else device, stream)
            self.lanes[key].extend(lanes.start[on], lanes.end[on], lanes.number[on])

    def finish(self, scopes: list[dict[str, Any]]) -> ValidationReport:
        _unique_ids(scopes, self.seen, self.out)
        _stream_overlaps(self.lanes, self.out)
        _scopes(scopes, self.n_events, self.out)
        return ValidationReport(self.n_events, len(scopes), dict(self.out.counts), self.out.listed)


def validate(doc: dict[str, Any]) -> ValidationReport:
    v = Validator()
    v.feed(doc.get("events", []))
    return v.finish(doc.get("relationships", {}).get("scopes", []))


class _IdSet:
    """Seen ids; the converter's ``e<N>``/``s<N>`` ids cost one bit each instead of a string."""

    def __init__(self) -> None:
        self.bits: dict[str, bytearray] = {"e": bytearray(), "s": bytearray()}
        self.other: set[str] = set()

    def add_run(self, items: list[dict[str, Any]]) -> bool:
        """Record the ids of ``items`` at once if they are ``e<k>, e<k+1>, …`` (what the
        converter writes) and none was seen; False (nothing recorded) otherwise."""
        if not items:
            return True
        first = items[0].get("id")
        if not isinstance(first, str) or first[:1] != "e" or not first[1:].isdigit():
            return False
        lo = int(first[1:])
        if first != f"e{lo}" or lo & 7 or lo >> 3 != len(self.bits["e"]):
            return False  # only runs that start where the seen bits end
        hi = lo + len(items)
        if [item.get("id") for item in items] != [f"e{n}" for n in range(lo, hi)]:
            return False
        return self.add_range(lo, len(items))

    def add_range(self, lo: int, count: int) -> bool:
        """Record ``e<lo>`` … ``e<lo+count-1>`` if that run starts where the seen bits end
        (so none of them was seen); False (nothing recorded) otherwise."""
        bits = self.bits["e"]
        if lo & 7 or lo >> 3 != len(bits):
            return False
        hi = lo + count
        bits.extend(b"\xff" * ((hi - lo) >> 3))
        for n in range(hi & ~7, hi):
            self._set(bits, n)
        return True

    @staticmethod
    def _set(bits: bytearray, n: int) -> None:
        if n >> 3 >= len(bits):
            bits.extend(bytes((n >> 3) + 1 - len(bits)))
        bits[n >> 3] |= 1 << (n & 7)

    def add(self, iid: str) -> bool:
        """Record ``iid``; False if it was seen before."""
        bits = self.bits.get(iid[:1])
        if bits is None or not iid[1:].isdigit() or (iid[1:2] == "0" and len(iid) > 2):
            if iid in self.other:
                return False
            self.other.add(iid)
            return True
        n = int(iid[1:])
        if n >> 3 >= len(bits):
            bits.extend(bytes(max(len(bits), (n >> 3) + 1 - len(bits))))
        if bits[n >> 3] & (1 << (n & 7)):
            return False
        bits[n >> 3] |= 1 << (n & 7)
        return True


def _unique_ids(items: list[dict[str, Any]], seen: _IdSet, out: _Collector) -> None:
    if seen.add_run(items):
        return
    for item in items:
        iid = item.get("id")
        if not isinstance(iid, str) or not seen.add(iid):
            out.add("unique_id", "error", (str(iid),), "missing or duplicate id")


def _timestamps(events: list[dict[str, Any]], out: _Collector) -> None:
    # Vectorised first: only the events that break a rule go through the loop below.
    try:
        start = np.array([e.get("timestamp_start_us", 0.0) for e in events], dtype=np.float64)
        end = np.array([e.get("timestamp_end_us", 0.0) for e in events], dtype=np.float64)
    except (TypeError, ValueError):
        return _timestamp_loop(events, out)
    spans = np.array([e.get("type") != "instant" for e in events], dtype=bool)
    _span_checks(spans, start, end, events.__getitem__, out)


def _span_checks(
    spans: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    event: Callable[[int], dict[str, Any]],
    out: _Collector,
) -> None:
    """Order and zero-length checks on columns; ``event(i)`` is only built for violations."""
    broken = np.flatnonzero(spans & ~(end >= start))  # ends first, or NaN
    _timestamp_loop([event(i) for i in broken.tolist()], out)
    # Zero-length ops are common (tens of thousands in a trace): list a few, count the rest.
    zero = np.flatnonzero(spans & (end == start))
    room = max(0, _MAX_LISTED_PER_CONSTRAINT - out.counts["zero_duration"])
    _timestamp_loop([event(i) for i in zero[:room].tolist()], out)
    if zero.size > room:
        out.counts["zero_duration"] += zero.size - room


def _timestamp_loop(events: list[dict[str, Any]], out: _Collector) -> None:
    for e in events:
        if e.get("type") == "instant":
            continue
        start, end = e.get("timestamp_start_us"), e.get("timestamp_end_us")
        if not isinstance(start, int | float) or not isinstance(end, int | float):
            out.add("timestamp_order", "error", (e["id"],), "missing start or end timestamp")
        elif end < start:
            detail = f"ends {start - end:.3f} µs before it starts"
            out.add("timestamp_order", "error", (e["id"],), detail)
        elif end == start:
            detail = f"{e.get('name', '')[:80]} has zero duration"
            out.add("zero_duration", "warning", (e["id"],), detail)


def lane_of(e: dict[str, Any]) -> Lane | None:
    """The stream an event runs on and its span there; None if it runs on none."""
    if e.get("type") not in _STREAM_TYPES:
        return None
    meta = e.get("metadata") or {}
    if meta.get("stream_id") is None:
        return None
    return (meta.get("device_id"), meta["stream_id"]), (
        e["timestamp_start_us"],
        e["timestamp_end_us"],
        e["id"],
    )


class _Spans:
    """One stream's spans as columns, ids ``e<k>`` (the converter's) as their number k.

    A (start, end, id) tuple per GPU op held ~37 MiB of objects at 3M events (212k ops) and
    sorting them at the end made the InferScope writer's peak; an id string per op alone
    is ~57 bytes where its number is 8."""

    def __init__(self) -> None:
        self.start = array("d")
        self.end = array("d")
        self.number = array("q")  # k of the id e<k>; -1 - i: the id is other[i]
        self.other: list[str] = []

    def add(self, start: float, end: float, eid: str) -> None:
        self.start.append(start)
        self.end.append(end)
        digits = eid[1:]
        if eid[:1] == "e" and digits.isascii() and digits.isdigit() and f"e{int(digits)}" == eid:
            self.number.append(int(digits))
        else:
            self.number.append(-1 - len(self.other))
            self.other.append(eid)

    def extend(self, start: np.ndarray, end: np.ndarray, number: np.ndarray) -> None:
        """:meth:`add` of the spans of events ``e<number>``, a column each."""
        self.start.frombytes(np.ascontiguousarray(start, dtype=np.float64).tobytes())
        self.end.frombytes(np.ascontiguousarray(end, dtype=np.float64).tobytes())
        self.number.frombytes(np.ascontiguousarray(number, dtype=np.int64).tobytes())

    def id_of(self, i: int) -> str:
        k = self.number[i]
        return f"e{k}" if k >= 0 else self.other[-1 - k]

    def overlaps(self) -> Iterator[tuple[str, str, float]]:
        """Each op that starts before an earlier one on the stream ended, with the earlier
        op whose end is the latest so far and by how much, taking the ops by start, then
        end, then id (as text); the ops are not made objects."""
        start, end = np.frombuffer(self.start), np.frombuffer(self.end)
        order = self._sorted(start, end)
        start, end = start[order], end[order]
        # The running latest end before each op, and the first op that reached it.
        reach = np.maximum.accumulate(np.where(np.isnan(end), -np.inf, end))  # NaN: no end
        before = np.concatenate(([-np.inf], reach[:-1]))
        leads = end > before
        leader = np.maximum.accumulate(np.where(leads, np.arange(end.size), 0))
        for i in np.flatnonzero(start < before).tolist():
            prev_end = float(before[i])
            prev = self.id_of(int(order[leader[i - 1]]))
            yield prev, self.id_of(int(order[i])), min(prev_end, float(end[i])) - float(start[i])

    def _sorted(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        order = np.lexsort((end, start))
        s, e = start[order], end[order]
        tied = np.flatnonzero((s[1:] == s[:-1]) & (e[1:] == e[:-1]))
        if tied.size:  # runs of equal spans: by id, as text
            run_start = tied[np.concatenate(([True], tied[1:] != tied[:-1] + 1))]
            run_end = tied[np.concatenate((tied[1:] != tied[:-1] + 1, [True]))] + 2
            for lo, hi in zip(run_start.tolist(), run_end.tolist(), strict=True):
                members = order[lo:hi].tolist()
                members.sort(key=self.id_of)
                order[lo:hi] = members
        return order


def _collect_lanes(
    events: list[dict[str, Any]], lanes: defaultdict[tuple[Any, Any], _Spans]
) -> None:
    for e in events:
        lane = lane_of(e)
        if lane is None:
            continue
        start, end, eid = lane[1]
        if _number(start) and _number(end):  # else a timestamp_order error of its own
            lanes[lane[0]].add(start, end, str(eid))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _stream_overlaps(lanes: dict[tuple[Any, Any], _Spans], out: _Collector) -> None:
    for (device, stream), spans in lanes.items():
        for prev_id, eid, by in spans.overlaps():
            out.add(
                "stream_overlap",
                "error",
                (prev_id, eid),
                f"device {device} stream {stream}: overlaps the previous op by {by:.3f} µs",
            )


def _scopes(scopes: list[dict[str, Any]], n_events: int, out: _Collector) -> None:
    by_id = {s.get("id"): s for s in scopes}
    for s in scopes:
        lo, hi = (s.get("event_range") or [0, 0])[:2]
        if not 0 <= lo <= hi <= n_events:
            out.add(
                "event_range", "error", (s["id"],), f"event_range {lo}..{hi} outside 0..{n_events}"
            )
        parent = by_id.get(s.get("parent_id"))
        if s.get("parent_id") is not None and parent is None:
            out.add(
                "scope_containment", "error", (s["id"],), f"unknown parent {s.get('parent_id')}"
            )
        elif parent is not None and (
            s["start_us"] < parent["start_us"] or s["end_us"] > parent["end_us"]
        ):
            over = max(parent["start_us"] - s["start_us"], s["end_us"] - parent["end_us"])
            out.add(
                "scope_containment",
                "error",
                (parent["id"], s["id"]),
                f"scope {s.get('name', '')[:60]!r} sticks out of its parent by {over:.3f} µs",
            )
