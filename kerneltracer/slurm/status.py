"""``slurm status`` / ``slurm resubmit``: each shard's Slurm task merged with its jobs' status.

A shard is answered for by the last array that ran it; its jobs' ``_TRACE_STATUS.json``
files say what is done, whatever Slurm says (a task cancelled after its last job still
finished its work; a task that "completed" may have been interrupted).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.slurm import cluster
from kerneltracer.slurm.submit import (
    ArraySubmission,
    SubmissionRecord,
    incomplete_jobs,
    load_record,
    prepare,
    save_record,
    shard_jobs,
    write_scripts,
)
from kerneltracer.status import now_iso, read_raw_status

LIVE_STATES = frozenset(
    {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED"}
)
# A pending task that can never start is not live: resubmit may replace it.
DEAD_REASONS = frozenset({"DependencyNeverSatisfied"})


@dataclass
class ShardReport:
    shard: int
    job_id: str | None  # the array that last ran this shard
    state: str  # the task's Slurm state, or UNKNOWN once Slurm forgot it
    reason: str
    jobs: int
    statuses: Counter[str] = field(default_factory=Counter)  # "missing" for no status file
    incomplete: list[str] = field(default_factory=list)  # job keys

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES and self.reason not in DEAD_REASONS


def _owner(record: SubmissionRecord) -> dict[int, ArraySubmission]:
    owner: dict[int, ArraySubmission] = {}
    for array in record.arrays:
        for task in array.tasks:
            owner[task] = array
    return owner


def shard_reports(run_dir: Path, record: SubmissionRecord | None = None) -> list[ShardReport]:
    record = record or load_record(run_dir)
    owner = _owner(record)
    states = cluster.task_states(sorted({a.job_id for a in owner.values()}))
    reports = []
    for shard, jobs in shard_jobs(record).items():
        array = owner.get(shard)
        state = states.get((array.job_id, shard)) if array else None
        counts: Counter[str] = Counter()
        for job in jobs:
            raw = read_raw_status(job.job_dir(run_dir))
            counts[str(raw.get("status")) if raw else "missing"] += 1
        reports.append(
            ShardReport(
                shard=shard,
                job_id=array.job_id if array else None,
                state=state.state if state else ("UNKNOWN" if array else "NOT_SUBMITTED"),
                reason=(state.reason or state.exit_code) if state else "",
                jobs=len(jobs),
                statuses=counts,
                incomplete=[j.key for j in incomplete_jobs(run_dir, jobs)],
            )
        )
    return reports


@dataclass
class Resubmission:
    shards: list[int]
    job_id: str | None
    still_running: list[int]


def resubmit(run_dir: Path, max_parallel: int | None = None) -> Resubmission:
    """Submit an array of just the shards that have incomplete jobs and no live task."""
    record = load_record(run_dir)
    reports = shard_reports(run_dir, record)
    running = [r.shard for r in reports if r.live]
    todo = [r.shard for r in reports if r.incomplete and not r.live]
    if not todo:
        return Resubmission([], None, running)
    prepared = prepare(
        Path(record.config),
        array_size=record.shards,
        max_parallel=max_parallel or record.max_parallel,
    )
    write_scripts(prepared)
    job_id = cluster.sbatch(prepared.array_path, prepared.array_args(todo))
    record.arrays.append(ArraySubmission(job_id=job_id, tasks=todo, submitted_at=now_iso()))
    save_record(run_dir, record)
    return Resubmission(todo, job_id, running)
