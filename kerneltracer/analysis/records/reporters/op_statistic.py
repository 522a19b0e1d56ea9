"""``<prefix>_op_statistic_<i>.csv``: every event with the op (node) it is charged to.

One row per event in start order: node (the op, see ``attribution.py``), event, duration(us),
then start(us) relative to the dump's first record, tid, device, how the node was decided
(own / enclosing / atomic / none) and ``wrapper`` (1 when the event only wraps nested events of
its kind, so sums per (node, event) should skip it). Linear time: one pass, no scans.
"""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltracer.analysis.records.files import atomic_text_writer
from kerneltracer.analysis.records.model import DEVICES, NO_NAME, Attribution, ProfilingData
from kerneltracer.analysis.records.reporters.base import Reporter

HEADER = (
    "node", "event", "duration(us)", "start(us)", "tid", "device", "attribution", "wrapper",
)  # fmt: skip
_CHUNK = 20_000


class OpStatisticReporter(Reporter):
    name = "op_statistic"
    ext = "csv"
    description = "per event: the op it is charged to and its duration (atomic-aware)"

    def write(self, pd: ProfilingData, path: Path) -> None:
        ev = pd.event_records
        ts = pd.records.column("timestamp")
        base = min(ts) if len(ts) else 0
        names = pd.names
        op_label = [*names, ""]  # index -1 (NO_NAME) → empty cell
        kind_label = list(names)
        how_label = [a.label for a in Attribution]
        cols = [ev.column(c) for c in ("op", "event", "start", "end", "tid", "device")]
        how, nested = ev.column("attribution"), ev.column("nested")
        with atomic_text_writer(path) as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(HEADER)
            rows = []
            for i, (op, kind, s, e, tid, dev) in enumerate(zip(*cols, strict=True)):
                rows.append((
                    op_label[op if op != NO_NAME else -1], kind_label[kind],
                    f"{(e - s) / 1000:.3f}", f"{(s - base) / 1000:.3f}", tid, DEVICES[dev],
                    how_label[how[i]], 1 if nested[i] else 0,
                ))  # fmt: skip
                if len(rows) >= _CHUNK:
                    out.writerows(rows)
                    rows.clear()
            out.writerows(rows)
