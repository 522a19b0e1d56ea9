"""Multi-rank view: one row per rank and the stragglers among them.

In a synchronous job the slowest rank sets the pace and the others wait for it inside
collectives, so a straggler shows up as *more* compute (or a longer step) than its peers,
while its peers show more exposed communication.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kerneltracer.analysis.timeline.analyses.multirank import RankCollectives, cross_rank

_STRAGGLER_FACTOR = 1.10


@dataclass
class RankRow:
    rank: int
    source_file: str
    end_to_end_latency_us: float
    mean_step_us: float | None
    steps: int
    gpu_busy_pct: float | None
    gpu_idle_pct: float | None
    compute_us: float | None
    communication_pct: float | None
    bottleneck: str
    temporal_breakdown: dict[str, Any] | None
    comm_comp_overlap_pct: float | None = None  # HTA's get_comm_comp_overlap


@dataclass
class Straggler:
    rank: int
    source_file: str
    metric: str
    value: float
    median: float
    ratio: float


def find_stragglers(rows: list[RankRow]) -> list[Straggler]:
    """Ranks more than 10% above the median on step time or GPU compute time."""
    if len(rows) < 2:
        return []
    import statistics  # ~1.4 ms with fractions and decimal: only with several ranks

    out: list[Straggler] = []
    for metric in ("mean_step_us", "compute_us", "end_to_end_latency_us"):
        values = [(r, getattr(r, metric)) for r in rows if getattr(r, metric) is not None]
        if len(values) < 2:
            continue
        median = statistics.median(v for _, v in values)
        if median <= 0:
            continue
        for row, v in values:
            if v > _STRAGGLER_FACTOR * median:
                out.append(
                    Straggler(
                        row.rank,
                        row.source_file,
                        metric,
                        float(v),
                        float(median),
                        round(v / median, 3),
                    )
                )
        if out:
            break  # the first metric that separates the ranks is the most telling one
    return out


def rank_table(
    rows: list[RankRow], collectives: list[RankCollectives] | None = None
) -> dict[str, Any]:
    """The ranks, their stragglers and, given each rank's collective calls, the cross-rank
    figures (``multi_rank``: waits in collectives, straggler per step; None for one rank)."""
    figures = cross_rank(collectives) if collectives else None
    return {
        "ranks": [asdict(r) for r in sorted(rows, key=lambda r: r.rank)],
        "stragglers": [asdict(s) for s in find_stragglers(rows)],
        "multi_rank": figures.to_dict() if figures else None,
    }
