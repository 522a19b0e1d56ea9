"""The per-rank page's data: every ok parallel job (one with ``rank_<r>/`` dirs) as its ranks
see it: ops x ranks, the collectives of one step with their bytes, and per layer the
estimated compute against the communication, with what bounds each layer.

Ranks that run the same program (every rank of a TP group, usually; a simulation writes
one dir for them and lists the others in ``roles.json``) are one column: a *role*, named by
its ranks. Times are estimates on the cost model's default device (the
roofline from shapes, the alpha-beta model for collectives), never measured.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from markupsafe import Markup

from kerneltracer.core.artefacts import DISPATCH_OPS_FILE
from kerneltracer.core.layout import JobPaths, RunPaths
from kerneltracer.core.parallel import CollectiveRecord
from kerneltracer.core.ranks import RankData, RankJob, rank_jobs, read_rank_job
from kerneltracer.core.signature import strip_ranges
from kerneltracer.costmodel import DEFAULT_DEVICE, Device, load_devices
from kerneltracer.costmodel.comm import CommCost, collective_cost
from kerneltracer.costmodel.layers import LayerCost, RankCost, is_compute_op, rank_cost
from kerneltracer.report.charts import stacked_bars

_OPS_SHOWN = 60
_LAYERS_CHARTED = 48
COMPUTE = "compute"
COMMUNICATION = "communication"


@dataclass(frozen=True)
class Role:
    """Ranks that run the same program; ``rank`` (a rank dir) is shown for all of them."""

    ranks: tuple[int, ...]
    rank: int

    @property
    def label(self) -> str:
        return _ranges(self.ranks)


@dataclass(frozen=True)
class CollectiveRow:
    record: CollectiveRecord
    cost: CommCost


@dataclass(frozen=True)
class RoleView:
    role: Role
    cost: RankCost
    total: LayerCost
    collectives: list[CollectiveRow]
    chart: Markup


@dataclass(frozen=True)
class JobRanks:
    key: str
    layout: str
    layout_source: str
    ranks: int
    missing: list[int]
    roles: list[RoleView]
    ops: list[tuple[str, list[int]]]  # op -> calls per role, most calls first
    ops_left_out: int
    bad: dict[str, int]
    missing_files: list[str]  # "rank 0: collectives.jsonl"


@dataclass(frozen=True)
class RanksView:
    device: str
    jobs: list[JobRanks] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _ranges(ranks: tuple[int, ...]) -> str:
    """``(0, 1, 2, 3, 8)`` -> ``0–3, 8``."""
    parts: list[str] = []
    start = prev = ranks[0]
    for r in [*ranks[1:], None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if r is not None:
            start = prev = r
    return ", ".join(parts)


# The per-rank record files (kerneltracer.core.ranks reads them).
_RECORDS = (DISPATCH_OPS_FILE, JobPaths(Path()).collectives(0).name)


def _program(data: RankData) -> bytes:
    """What makes two ranks the same role: their ops with shapes and counts, and their
    collectives (not the module paths: EP ranks holding different experts run the same; not
    the values a real rank read, e.g. how many of its tokens fall in its vocabulary shard,
    which a simulated rank never reads)."""
    counts: Counter[bytes] = Counter()
    for r in data.rows:
        key = [r.op, r.phase, strip_ranges(r.inputs), strip_ranges(r.outputs)]
        counts[orjson.dumps(key, option=orjson.OPT_SORT_KEYS)] += r.count
    rows = sorted(key + b" x" + str(n).encode() for key, n in counts.items())
    comms = [
        orjson.dumps([c.kind, c.group, c.group_size, c.dtype, list(c.shape), c.bytes_per_rank])
        for c in data.collectives
    ]
    return b"\n".join([*rows, b"--", *comms])


def roles(job: RankJob) -> list[Role]:
    """Rank dirs running the same program, each with the peers it stands for."""
    groups: dict[bytes, list[int]] = {}
    for rank, data in job.ranks.items():
        groups.setdefault(_program(data), []).append(rank)
    found = [
        Role(tuple(sorted({p for d in dirs for p in job.peers(d)})), dirs[0])
        for dirs in groups.values()
    ]
    return sorted(found, key=lambda r: r.ranks[0])


def _job_view(key: str, job: RankJob, device: Device) -> JobRanks:
    found = roles(job)
    views: list[RoleView] = []
    calls: dict[str, list[int]] = {}
    for i, role in enumerate(found):
        data = job.ranks[role.rank]
        cost = rank_cost(role.rank, data.rows, data.collectives, device, job.layout)
        rows = [
            CollectiveRow(r, collective_cost(r, device, job.layout, role.rank))
            for r in data.collectives
        ]
        views.append(RoleView(role, cost, cost.total(), rows, _chart(role, cost)))
        for row in data.rows:
            if is_compute_op(row.op):
                calls.setdefault(row.op, [0] * len(found))[i] += row.count
    ops = sorted(calls.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    bad: dict[str, int] = {}
    missing: list[str] = []
    # A file no rank wrote is one the job's tracer does not write (torch_profiler's ranks
    # record collectives, no dispatch signatures): only one some rank lacks is said.
    written = set(_RECORDS) - _unwritten(job)
    for rank, data in job.ranks.items():
        for what, n in data.bad.items():
            bad[f"rank {rank} {what}"] = n
        missing += [f"rank {rank}: {name}" for name in data.missing if name in written]
    return JobRanks(
        key,
        job.layout.label(),
        job.layout_source,
        len(job.ranks),
        job.missing_ranks,
        views,
        ops[:_OPS_SHOWN],
        max(len(ops) - _OPS_SHOWN, 0),
        bad,
        missing,
    )


def _chart(role: Role, cost: RankCost) -> Markup:
    rows = [
        (name, {COMPUTE: layer.compute.time_s * 1e6, COMMUNICATION: layer.comm_s * 1e6})
        for name, layer in list(cost.layers.items())[:_LAYERS_CHARTED]
    ]
    label = f"Estimated compute and communication per layer, rank {role.label} (µs)"
    return stacked_bars(rows, [COMPUTE, COMMUNICATION], label, lambda v: f"{v:,.1f} µs")


def build_ranks_view(run_dir: Path, device: Device | None = None) -> RanksView:
    """Every ok parallel job of ``run_dir``; one that cannot be read is a problem listed on
    the page, not a failed report."""
    device = device if device is not None else load_devices().get(DEFAULT_DEVICE)
    view = RanksView(device.key)
    if not RunPaths(run_dir).jobs.is_dir():
        return view
    for key, job_dir in rank_jobs(run_dir).items():
        try:
            job = read_rank_job(job_dir)
        except OSError as exc:
            view.problems.append(f"{key}: {exc}")
            continue
        if job is not None and _unwritten(job) >= set(_RECORDS):
            # Ranks with traces of their own but no per-rank records (vLLM's own ranks).
            view.problems.append(
                f"{key}: its rank dirs hold no dispatch signatures or collectives to show"
            )
        elif job is not None:
            view.jobs.append(_job_view(key, job, device))
    return view


def _unwritten(job: RankJob) -> set[str]:
    """The per-rank record files no rank of the job wrote."""
    return set.intersection(*(set(data.missing) for data in job.ranks.values()))
