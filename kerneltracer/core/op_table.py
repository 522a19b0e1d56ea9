"""An op/kernel table from chrome traces: name, kind, count, total, self and average time.

Self time is the event's duration minus that of the operators nested directly inside it on
the same thread, the number a kernel engineer ranks by; totals double-count nesting.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

# Host operators nest; device work does not, so its self time is its duration.
NESTING_KINDS = frozenset({"cpu_op"})
KINDS = frozenset({"cpu_op", "kernel", "gpu_memcpy", "gpu_memset"})
COLUMNS = ("name", "kind", "count", "total_us", "self_us", "avg_us")


@dataclass
class OpRow:
    name: str
    kind: str
    count: int = 0
    total_us: float = 0.0
    self_us: float = 0.0

    @property
    def avg_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0


def load_events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = orjson.loads(raw)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict)]


def op_table(events: Iterable[dict[str, Any]]) -> list[OpRow]:
    """Aggregate complete (``ph: X``) events of the op/kernel kinds, largest self time first."""
    rows: dict[tuple[str, str], OpRow] = {}
    threads: dict[tuple[Any, Any], list[tuple[float, float, str]]] = {}
    for e in events:
        kind = e.get("cat")
        if e.get("ph") != "X" or kind not in KINDS:
            continue
        name, ts, dur = str(e.get("name", "")), float(e.get("ts", 0)), float(e.get("dur", 0))
        row = rows.setdefault((name, kind), OpRow(name, kind))
        row.count += 1
        row.total_us += dur
        if kind in NESTING_KINDS:
            threads.setdefault((e.get("pid"), e.get("tid")), []).append((ts, dur, name))
        else:
            row.self_us += dur
    for spans in threads.values():
        for name, self_us in _self_times(spans):
            rows[(name, "cpu_op")].self_us += self_us
    return sorted(rows.values(), key=lambda r: (-r.self_us, r.kind, r.name))


def _self_times(spans: list[tuple[float, float, str]]) -> Iterable[tuple[str, float]]:
    """Per span, its duration minus its direct children's (outer spans sort first)."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    stack: list[list[Any]] = []  # [end, name, self_us]
    for ts, dur, name in spans:
        while stack and ts >= stack[-1][0]:
            _, done, self_us = stack.pop()
            yield done, max(self_us, 0.0)
        if stack:
            stack[-1][2] -= min(dur, stack[-1][0] - ts)
        stack.append([ts + dur, name, dur])
    while stack:
        _, done, self_us = stack.pop()
        yield done, max(self_us, 0.0)


def to_csv(rows: Iterable[OpRow]) -> bytes:
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(COLUMNS)
    for r in rows:
        times = (r.total_us, r.self_us, r.avg_us)
        out.writerow([r.name, r.kind, r.count, *(f"{t:.3f}" for t in times)])
    return buf.getvalue().encode()
