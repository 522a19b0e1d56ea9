"""Query an InferScope document by event type, time range and scope.

idx = TraceIndex(doc)
idx.count("h2d_copy")
idx.between(10_000, 50_000, types={"gpu_kernel"})   # µs, relative to the trace start
idx.in_scope("ProfilerStep#3")                      # scope id or name
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from kerneltracer.analysis.timeline.model.schema import EVENT_TYPES
from kerneltracer.errors import UsageError, choices


class TraceIndex:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = doc["events"]
        self.scopes: list[dict[str, Any]] = doc.get("relationships", {}).get("scopes", [])
        n = len(self.events)
        self._start = np.empty(n)
        self._end = np.empty(n)
        by_type: dict[str, list[int]] = defaultdict(list)
        for i, e in enumerate(self.events):
            start = e.get("timestamp_start_us", e.get("timestamp_us"))
            self._start[i] = start
            self._end[i] = e.get("timestamp_end_us", start)
            by_type[e["type"]].append(i)
        self._by_type = {t: np.asarray(v, dtype=np.int64) for t, v in by_type.items()}
        self._order = np.argsort(self._start, kind="stable")
        self._sorted_start = self._start[self._order]
        self._max_dur = float(np.max(self._end - self._start)) if n else 0.0
        self.origin_us = float(self._sorted_start[0]) if n else 0.0
        self._scopes_by_id = {s["id"]: s for s in self.scopes}
        self._scopes_by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in self.scopes:
            self._scopes_by_name[s["name"]].append(s)

    # -- by type -------------------------------------------------------------------------
    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [self.events[i] for i in self._type_rows(event_type).tolist()]

    def count(self, event_type: str) -> int:
        return int(self._type_rows(event_type).size)

    def _type_rows(self, event_type: str) -> np.ndarray:
        if event_type not in EVENT_TYPES:
            raise UsageError(f"unknown event type {event_type!r}; valid: {choices(EVENT_TYPES)}")
        return self._by_type.get(event_type, np.empty(0, dtype=np.int64))

    # -- by time range -------------------------------------------------------------------
    def between(
        self,
        start_us: float,
        end_us: float,
        types: Iterable[str] | None = None,
        absolute: bool = False,
    ) -> list[dict[str, Any]]:
        """Events overlapping ``[start_us, end_us)``, by start time.

        Times are relative to the first event unless ``absolute`` is set.
        """
        if end_us < start_us:
            raise UsageError(f"time range ends before it starts: {start_us}..{end_us}")
        shift = 0.0 if absolute else self.origin_us
        lo, hi = start_us + shift, end_us + shift
        # Any event overlapping [lo, hi) starts after lo - max duration: bound the scan.
        first = int(np.searchsorted(self._sorted_start, lo - self._max_dur, side="left"))
        last = int(np.searchsorted(self._sorted_start, hi, side="left"))
        rows = self._order[first:last]
        hit = rows[
            (self._end[rows] > lo)
            | ((self._end[rows] == self._start[rows]) & (self._start[rows] >= lo))
        ]
        wanted = set(types) if types is not None else None
        if wanted is not None:
            unknown = wanted - set(EVENT_TYPES)
            if unknown:
                raise UsageError(
                    f"unknown event type(s) {sorted(unknown)}; valid: {choices(EVENT_TYPES)}"
                )
        return [
            self.events[i]
            for i in hit.tolist()
            if wanted is None or self.events[i]["type"] in wanted
        ]

    # -- by scope ------------------------------------------------------------------------
    def scope(self, key: str) -> list[dict[str, Any]]:
        """Scopes with this id, or else with this name."""
        if key in self._scopes_by_id:
            return [self._scopes_by_id[key]]
        found = self._scopes_by_name.get(key)
        if not found:
            raise UsageError(f"no scope with id or name {key!r} ({len(self.scopes)} scopes)")
        return found

    def in_scope(self, key: str, types: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Events that start inside the scope(s) named by ``key`` (id or name)."""
        wanted = set(types) if types is not None else None
        rows: set[int] = set()
        for s in self.scope(key):
            lo, hi = s["event_range"]
            rows.update(range(lo, hi))
        return [
            self.events[i]
            for i in sorted(rows)
            if wanted is None or self.events[i]["type"] in wanted
        ]

    def children(self, scope_id: str) -> list[dict[str, Any]]:
        return [self._scopes_by_id[c] for c in self.scope(scope_id)[0]["child_ids"]]

    def roots(self) -> list[dict[str, Any]]:
        return [s for s in self.scopes if s.get("parent_id") is None]
