"""``<prefix>_tracing_<i>.json``: a Chrome trace (chrome://tracing, Perfetto) of one dump.

Complete events (``ph: X``), one process per device (host CPU, device), one track per thread.
Timestamps are µs relative to the dump's first record (kept in ``otherData.base_ts_ns``):
absolute ns epochs do not fit a double at sub-µs precision. When at least a quarter of the
events last under 1 µs the trace asks viewers to display ns. Starts that never ended are
instant events, so a worker that died mid-phase shows where.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from kerneltracer.analysis.records.files import atomic_binary_writer
from kerneltracer.analysis.records.model import (
    DEVICES,
    NO_NAME,
    AnomalyKind,
    Attribution,
    ProfilingData,
    display_name,
)
from kerneltracer.analysis.records.reporters.base import Reporter

_SUB_US_SHARE = 0.25
_CHUNK = 50_000


class TracingReporter(Reporter):
    name = "tracing"
    ext = "json"
    description = "Chrome trace (ph X, pid per device, µs)"

    def write(self, pd: ProfilingData, path: Path) -> None:
        base = _base_ns(pd)
        header: dict[str, Any] = {
            "displayTimeUnit": _display_unit(pd),
            "otherData": {"base_ts_ns": base, "version": pd.version, "dump": pd.index},
        }
        with atomic_binary_writer(path) as fh:
            fh.write(orjson.dumps(header)[:-1] + b',"traceEvents":[\n')
            chunk: list[str] = []
            for item in _events(pd, base):
                chunk.append(item)
                if len(chunk) >= _CHUNK:
                    fh.write(",\n".join(chunk).encode() + b",\n")
                    chunk.clear()
            fh.write(",\n".join(chunk).encode() + b"\n]}\n")


def _base_ns(pd: ProfilingData) -> int:
    ts = pd.records.column("timestamp")
    return min(ts) if len(ts) else 0


def _display_unit(pd: ProfilingData) -> str:
    ev = pd.event_records
    if not len(ev):
        return "ms"
    start, end = ev.column("start"), ev.column("end")
    sub_us = sum(1 for s, e in zip(start, end, strict=True) if e - s < 1000)
    return "ns" if sub_us >= _SUB_US_SHARE * len(ev) else "ms"


def _us(ns: int) -> str:
    """ns as an exact decimal µs literal (a float would round epoch-sized values)."""
    q, r = divmod(ns, 1000)
    return f"{q}.{r:03d}" if ns >= 0 else f"-{_us(-ns)}"


def _events(pd: ProfilingData, base: int) -> Iterator[str]:
    """The trace events as JSON texts, built from cached per-track prefixes (millions of them)."""
    ev = pd.event_records
    devices_used = sorted(set(ev.column("device")) | set(pd.records.column("device")))
    for dev in devices_used:
        meta = {"name": "process_name", "ph": "M", "pid": dev, "args": {"name": DEVICES[dev]}}
        yield orjson.dumps(meta).decode()
    names = pd.names
    prefixes: dict[tuple[int, int, int, int], str] = {}
    suffixes: dict[tuple[int, int], str] = {}
    cols = [ev.column(c) for c in ("start", "end", "node", "event", "tid", "device", "op")]
    how = ev.column("attribution")
    for i, (s, e, node, kind, tid, dev, op) in enumerate(zip(*cols, strict=True)):
        prefix = prefixes.get((node, kind, tid, dev))
        if prefix is None:
            label = display_name(None if node == NO_NAME else names[node], names[kind])
            head = {"name": label, "cat": names[kind], "ph": "X", "pid": dev, "tid": tid}
            prefix = prefixes[(node, kind, tid, dev)] = orjson.dumps(head).decode()[:-1]
        tail = "}"
        if node == NO_NAME and op != NO_NAME:
            tail = suffixes.get((op, how[i]), "")
            if not tail:
                args = {"op": names[op], "attribution": Attribution(how[i]).label}
                tail = suffixes[(op, how[i])] = ',"args":' + orjson.dumps(args).decode() + "}"
        yield f'{prefix},"ts":{_us(s - base)},"dur":{_us(e - s)}{tail}'
    lines = pd.records.column("line")
    for a in pd.anomalies:
        if a.kind is AnomalyKind.UNMATCHED_START:
            r = _record_of_line(lines, a.line)
            instant = {
                "name": f"{display_name(a.node_name, a.event)} (no End)",
                "cat": a.event, "ph": "i", "s": "t",
                "pid": pd.records.column("device")[r], "tid": a.tid,
                "args": {"line": a.line},
            }  # fmt: skip
            ts = pd.records.column("timestamp")[r] - base
            yield orjson.dumps(instant).decode()[:-1] + f',"ts":{_us(ts)}}}'


def _record_of_line(lines: memoryview, line: int) -> int:
    # Record line numbers increase with the record index: binary search.
    return bisect.bisect_left(lines, line)
