"""``cpu_call`` events of the InferScope file, built column-wise.

Host ops are nine events in ten of a Kineto trace. Building each through the generic
per-event path (classify, look up, format) cost ~10 µs an event, most of the default
``timeline`` run; here every field is gathered for a whole chunk with numpy fancy indexing
and the dicts are made in one comprehension. The output is identical to the generic path.

The streamed file skips the dicts altogether: ``encode`` formats each event's JSON text
from the same columns, with names and labels JSON-encoded once per distinct string (a dict
per event, serialised, then walked again by the validator cost three times as much).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from kerneltracer.analysis.timeline.load.loader import ChromeTrace


class CpuCallBuilder:
    """Per-trace lookup tables, then ``build(rows, positions, start_iso, end_iso)`` per chunk."""

    def __init__(
        self,
        trace: ChromeTrace,
        depth: np.ndarray,
        parent_scope: np.ndarray,
        scope_ids: dict[int, str],
    ) -> None:
        self.trace = trace
        self.names = np.array([*trace.names, None], dtype=object)  # [-1] -> None
        self.categories = np.array(trace.categories, dtype=object)
        self.labels = np.array(trace.thread_labels, dtype=object)
        self.depth = depth
        self.parent = parent_scope
        # Scope ids by scope, not by row: a table over every row held two pointers a row
        # (48 MiB at 3M events) for the few thousand scopes there are.
        rows = np.fromiter(scope_ids, dtype=np.int64, count=len(scope_ids))
        order = np.argsort(rows, kind="stable")
        self.scope_rows = rows[order]
        ids = [*scope_ids.values()]
        sid = np.array([*(ids[i] for i in order.tolist()), None], dtype=object)  # [-1] -> None
        self.scope_id = sid
        # The same tables with every entry already JSON text (None -> null), for encode.
        self.names_json = _as_json(self.names)
        self.categories_json = _as_json(self.categories)
        self.labels_json = _as_json(self.labels)
        self.scope_id_json = _as_json(sid)
        # Both parent-scope fields of each scope as one piece of text: a field less to
        # gather and format an event (entry -1: no scope).
        named = self.names_json[np.append(trace.name[self.scope_rows], -1)].tolist()
        self.scope_fields_json = np.array(
            [
                b'"parent_scope":%s,"parent_scope_id":%s' % pair
                for pair in zip(named, self.scope_id_json.tolist(), strict=True)
            ],
            dtype=object,
        )

    def _scope_index(self, parent: np.ndarray) -> np.ndarray:
        """Each parent scope row's entry in the scope id tables (-1, no scope: the last)."""
        at = np.searchsorted(self.scope_rows, parent)
        found = (parent >= 0) & (at < self.scope_rows.size)
        found[found] = self.scope_rows[at[found]] == parent[found]
        return np.where(found, at, -1)

    def _spans(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Start, end, parent scope row and that scope's name index, for ``rows``."""
        t = self.trace
        ts = t.ts[rows]
        parent = self.parent[rows]
        # -1 (no scope) indexes the trailing None of both tables.
        parent_name_idx = np.where(parent >= 0, t.name[np.maximum(parent, 0)], -1)
        return ts, ts + t.dur[rows], parent, parent_name_idx

    def build(
        self,
        rows: np.ndarray,
        positions: np.ndarray,
        start_iso: list[str | None],
        end_iso: list[str | None],
    ) -> list[dict[str, Any]]:
        t = self.trace
        ts, end, parent, parent_name_idx = self._spans(rows)
        events = [
            {
                "id": f"e{p}",
                "type": "cpu_call",
                "name": name,
                "timestamp_start_us": s,
                "timestamp_end_us": e,
                "wall_clock_start": ws,
                "wall_clock_end": we,
                "duration_us": d,
                "metadata": {
                    "category": cat,
                    "process_id": pid,
                    "thread_id": tid,
                    "call_depth": depth,
                    "parent_scope": pname,
                    "parent_scope_id": pid_s,
                },
            }
            for p, name, s, e, ws, we, d, cat, pid, tid, depth, pname, pid_s in zip(
                positions.tolist(),
                self.names[t.name[rows]].tolist(),
                ts.tolist(),
                end.tolist(),
                start_iso,
                end_iso,
                (end - ts).tolist(),
                self.categories[t.cat[rows]].tolist(),
                self.labels[t.pid[rows]].tolist(),
                self.labels[t.tid[rows]].tolist(),
                self.depth[rows].tolist(),
                self.names[parent_name_idx].tolist(),
                self.scope_id[self._scope_index(parent)].tolist(),
                strict=True,
            )
        ]
        for ev, corr in zip(events, t.correlation[rows].tolist(), strict=True):
            if corr >= 0:
                ev["metadata"]["correlation_id"] = corr
        return events

    def encode(
        self,
        rows: np.ndarray,
        positions: np.ndarray,
        wall_clocks: tuple[list[bytes], list[bytes], list[bytes], list[bytes]] | None,
    ) -> list[bytes]:
        """The events ``build`` makes, as JSON text. ``wall_clocks``: the start's and the
        end's ISO text, each in two parts (see convert._iso_parts); None: no base time.

        Numbers are written by orjson a whole column at a time, as it writes them for
        ``build``'s dicts (per-value ``repr`` would cost more than the dicts did); the
        caller passes only rows with finite timestamps, which JSON can hold."""
        t = self.trace
        ts = t.ts[rows]
        end = ts + t.dur[rows]
        parent = self.parent[rows]
        at = self._scope_index(parent)
        scope_fields = self.scope_fields_json[at]
        stray = np.flatnonzero((parent >= 0) & (at < 0))
        if stray.size:  # an enclosing row that is no scope: its name, no id (as build has it)
            scope_fields[stray] = [
                b'"parent_scope":%s,"parent_scope_id":null' % self.names_json[t.name[p]]
                for p in parent[stray].tolist()
            ]
        correlation = t.correlation[rows]
        corr = json_where(correlation, correlation >= 0, prefix=b',"correlation_id":')
        template, walls = (
            (_CPU_CALL_NO_WALL, ()) if wall_clocks is None else (_CPU_CALL, wall_clocks)
        )
        return [
            template % fields
            for fields in zip(
                json_column(positions),
                self.names_json[t.name[rows]].tolist(),
                json_column(ts),
                json_column(end),
                json_column(end - ts),
                self.categories_json[t.cat[rows]].tolist(),
                self.labels_json[t.pid[rows]].tolist(),
                self.labels_json[t.tid[rows]].tolist(),
                json_column(self.depth[rows]),
                scope_fields.tolist(),
                corr,
                *walls,
                strict=True,
            )
        ]


_CPU_CALL_NO_WALL = (
    b'{"id":"e%s","type":"cpu_call","name":%s,"timestamp_start_us":%s,"timestamp_end_us":%s,'
    b'"duration_us":%s,"metadata":{"category":%s,"process_id":%s,"thread_id":%s,'
    b'"call_depth":%s,%s%s},'
    b'"wall_clock_start":null,"wall_clock_end":null}'
)
_CPU_CALL = _CPU_CALL_NO_WALL.replace(
    b'"wall_clock_start":null,"wall_clock_end":null',
    b'"wall_clock_start":"%s%sZ","wall_clock_end":"%s%sZ"',
)


def json_column(values: np.ndarray) -> list[bytes]:
    """Each number's JSON text (numbers hold no commas, so one dump splits cleanly)."""
    if not values.size:
        return []
    text = orjson.dumps(np.ascontiguousarray(values), option=orjson.OPT_SERIALIZE_NUMPY)
    return text[1:-1].split(b",")


def json_where(
    values: np.ndarray, present: np.ndarray, prefix: bytes = b"", absent: bytes = b""
) -> list[bytes]:
    """``prefix`` and the JSON text of each value where ``present``, ``absent`` elsewhere:
    per row in Python, a conditional and a format cost several times this."""
    out = np.full(values.size, absent, dtype=object)
    at = np.flatnonzero(present)
    if at.size:
        text = orjson.dumps(np.ascontiguousarray(values[at]), option=orjson.OPT_SERIALIZE_NUMPY)
        # Numbers hold no NUL: it marks where each one's prefixed text starts.
        pieces = (prefix + text[1:-1].replace(b",", b"\0" + prefix)).split(b"\0")
        out[at] = np.array(pieces, dtype=object)
    return list(out.tolist())


def _as_json(table: np.ndarray) -> np.ndarray:
    return np.array([exact(orjson.dumps(v)) for v in table.tolist()], dtype=object)


def exact(text: bytes) -> bytes:
    """``text`` in a bytes object of its own size: orjson leaves its output in a buffer of
    at least 4 KiB, whatever the text's length, so each kept one (a table entry a distinct
    name or scope, an event's text until its chunk is joined) cost ~4 KiB: 40 MiB of scope
    ids alone at 3M events."""
    return bytes(memoryview(text))
