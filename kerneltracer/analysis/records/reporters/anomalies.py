"""``<prefix>_anomalies_<i>.csv``: what could not be turned into a clean call tree.

Unmatched Start/End records, crossing ranges (two ranges of one thread that overlap without
nesting -- the analysis detects them, ada-pa silently mis-nested them) and dump-level problems,
each with its line number. The last rows give exact totals per kind, since details are capped.
"""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltracer.analysis.records.files import atomic_text_writer
from kerneltracer.analysis.records.model import AnomalyKind, ProfilingData
from kerneltracer.analysis.records.reporters.base import Reporter

HEADER = ("kind", "line", "other_line", "tid", "node", "event", "detail")


class AnomaliesReporter(Reporter):
    name = "anomalies"
    ext = "csv"
    description = "unmatched Start/End, crossing ranges, truncated dumps, with line numbers"

    def write(self, pd: ProfilingData, path: Path) -> None:
        with atomic_text_writer(path) as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(HEADER)
            for a in pd.anomalies:
                out.writerow((
                    a.kind.label, a.line, a.other_line or "", a.tid, a.node_name or "",
                    a.event, a.detail,
                ))  # fmt: skip
            for kind in AnomalyKind:
                shown = sum(1 for a in pd.anomalies if a.kind is kind)
                total = pd.count(kind)
                if total > shown:
                    out.writerow(
                        (kind.label, "", "", "", "", "", f"{total - shown} more not listed")
                    )
