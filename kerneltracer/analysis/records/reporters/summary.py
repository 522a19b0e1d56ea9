"""``<prefix>_summary_<i>.csv``: per event kind, count / avg / total time and weighted share.

Columns are ada-pa's (event, count, avg(us), total(us), w-percent) plus ``folded``: how many
wrapper events were folded into their nested events of the same kind (see ``summary.py``).
"""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltracer.analysis.records.files import atomic_text_writer
from kerneltracer.analysis.records.model import ProfilingData
from kerneltracer.analysis.records.reporters.base import Reporter
from kerneltracer.analysis.records.summary import summarize

HEADER = ("event", "count", "avg(us)", "total(us)", "w-percent", "folded")


class SummaryReporter(Reporter):
    name = "summary"
    ext = "csv"
    description = "per event: count, avg(us), total(us), w-percent (nested same events once)"

    def write(self, pd: ProfilingData, path: Path) -> None:
        summary = summarize(pd)
        with atomic_text_writer(path) as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(HEADER)
            for row in summary.rows:
                out.writerow((
                    row.event, row.count, f"{row.avg_ns / 1000:.3f}",
                    f"{row.total_ns / 1000:.3f}", f"{summary.w_percent(row):.6f}", row.folded,
                ))  # fmt: skip
