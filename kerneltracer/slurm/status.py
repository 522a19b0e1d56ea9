"""``slurm status`` / ``slurm resubmit``: each shard's Slurm task merged with its jobs' status.

A shard is answered for by the last array that ran it; its jobs' ``_TRACE_STATUS.json``
files say what is done, whatever Slurm says (a task cancelled after its last job still
finished its work; a task that "completed" may have been interrupted).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.core import layout
from kerneltracer.core.layout import RunPaths
from kerneltracer.core.manifest import read_manifest
from kerneltracer.core.rundir import JobRecord, StatusProblem
from kerneltracer.core.runlock import orchestrator_gone
from kerneltracer.core.status import now_iso
from kerneltracer.slurm import cluster, partition
from kerneltracer.slurm.reasons import judge, needs_user_check
from kerneltracer.slurm.submit import (
    ArraySubmission,
    SubmissionRecord,
    incomplete_jobs,
    job_records,
    load_record,
    prepare,
    save_record,
    shard_jobs,
    write_scripts,
)

_LIVE_STATES = frozenset(
    {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED"}
)
_FAILED_STATES = frozenset(
    {"FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "PREEMPTED"}
)


@dataclass
class ShardReport:
    shard: int
    job_id: str | None  # the array that last ran this shard
    state: str  # the task's Slurm state, or UNKNOWN once Slurm forgot it
    reason: str
    jobs: int
    statuses: Counter[str] = field(default_factory=Counter)  # "missing" for no status file
    incomplete: list[str] = field(default_factory=list)  # job keys
    stuck: str = ""  # why a pending task will never start by itself; empty if it may
    node: str = ""  # the host its task runs or last ran on
    # Jobs a run of this shard started and never finished because that run is gone (its
    # node lost, or the task killed without a chance to stop them), and why.
    lost: list[str] = field(default_factory=list)
    lost_reason: str = ""

    @property
    def task(self) -> str:
        return f"{self.job_id}_{self.shard}" if self.job_id else "-"

    @property
    def live(self) -> bool:
        """Pending or running, and able to finish: a stuck task is not live (resubmit
        replaces it)."""
        return self.state in _LIVE_STATES and not self.stuck

    @property
    def problem(self) -> str:
        """One line when this shard needs the user: stuck, failed, or done but incomplete."""
        if self.stuck:
            return f"{self.state} ({self.reason}) never starts by itself: {self.stuck}"
        if self.live or not self.incomplete:
            return ""
        jobs = f"{len(self.incomplete)} of {self.jobs} job(s) incomplete: {_names(self.incomplete)}"
        if self.lost:
            jobs += f"; {len(self.lost)} lost ({self.lost_reason}): {_names(self.lost)}"
        if self.state in _FAILED_STATES:
            return f"{self.state} ({self.reason or 'no exit code'}), {jobs}"
        return f"{self.state}, {jobs}"


def _names(keys: list[str]) -> str:
    return ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")


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
        records = job_records(run_dir, jobs)
        counts = Counter(r.status_value or "missing" for r in records.values())
        incomplete = [j.key for j in incomplete_jobs(run_dir, jobs, records)]
        report = ShardReport(
            shard=shard,
            job_id=array.job_id if array else None,
            state=state.state if state else ("UNKNOWN" if array else "NOT_SUBMITTED"),
            reason=(state.reason or state.exit_code) if state else "",
            jobs=len(jobs),
            statuses=counts,
            incomplete=incomplete,
            node=state.node if state else "",
        )
        _find_lost(run_dir, record.shards, report, records, state)
        reports.append(report)
    _judge_pending(reports, record.download_job)
    return reports


def _find_lost(
    run_dir: Path,
    shards: int,
    report: ShardReport,
    records: dict[str, JobRecord],
    state: cluster.TaskState | None,
) -> None:
    """The shard's jobs that a run started (JOB.json written) and never sealed, when that
    run's orchestrator is provably gone: its lock is free, whichever host it ran on."""
    manifest = read_manifest(RunPaths(run_dir).manifest(layout.shard_tag(report.shard, shards)))
    if manifest is None or not manifest.open or not orchestrator_gone(run_dir, manifest):
        return
    report.lost = [
        key
        for key in report.incomplete
        if records[key].problem is StatusProblem.MISSING and records[key].paths.job_file.is_file()
    ]
    who = manifest.orchestrator
    host = (who.host if who else None) or "an unknown host"
    if state is not None and state.previous:
        report.lost_reason = f"requeued by Slurm after {state.previous}"
    elif state is not None and state.state in _FAILED_STATES:
        report.lost_reason = state.ended_on if state.node else f"{state.state} on {host}"
    else:
        report.lost_reason = f"its kerneltracer on {host} is gone without finishing them"


def _judge_pending(reports: list[ShardReport], download_job: str | None = None) -> None:
    """Mark pending tasks that can never start; asks Slurm only what the reasons need.

    A task waiting on its dependency is stuck when the download job itself is stuck."""
    pending = [r for r in reports if r.state == "PENDING" and r.reason]
    download = ("", "")
    if download_job and any(r.reason == "Dependency" for r in pending):
        download = cluster.job_state(download_job)
    reasons = [r.reason for r in pending] + [download[1]]
    nodes = None
    if any(reason.startswith("ReqNodeNotAvail") for reason in reasons):
        nodes = partition.known_nodes()
    user_running = any(r.state == "RUNNING" for r in reports)
    if not user_running and any(needs_user_check(reason) for reason in reasons):
        user_running = cluster.user_has_running_jobs()
    blocked = ""
    if download[0] == "PENDING":
        verdict = judge(download[1], nodes, user_running)
        if verdict.stuck:
            blocked = f"download job {download_job} is PENDING ({download[1]}): {verdict.why}"
    for report in pending:
        verdict = judge(report.reason, nodes, user_running)
        if verdict.stuck:
            report.stuck = verdict.why
        elif report.reason == "Dependency" and blocked:
            report.stuck = blocked


@dataclass
class Resubmission:
    shards: list[int]
    job_id: str | None
    still_running: list[int]
    cancelled: list[str] = field(default_factory=list)  # stuck tasks it replaced
    notes: list[str] = field(default_factory=list)  # values fitted to the partition


def resubmit(run_dir: Path, max_parallel: int | None = None) -> Resubmission:
    """Submit an array of just the shards that have incomplete jobs and no live task.

    The config is checked against the partition again (it may have been fixed since), and
    the stuck tasks being replaced are cancelled so they do not pend forever beside it."""
    record = load_record(run_dir)
    reports = shard_reports(run_dir, record)
    running = [r.shard for r in reports if r.live]
    todo = [r for r in reports if r.incomplete and not r.live]
    if not todo:
        return Resubmission([], None, running)
    prepared = prepare(
        Path(record.config),
        partition=record.partition,
        array_size=record.shards,
        max_parallel=max_parallel or record.max_parallel,
        lookup=partition.read_partition,
    )
    write_scripts(prepared)
    cancelled = [r.task for r in todo if r.stuck]
    for task in cancelled:
        cluster.scancel(task)
    shards = [r.shard for r in todo]
    job_id = cluster.sbatch(prepared.array_path, prepared.array_args(shards))
    record.arrays.append(ArraySubmission(job_id=job_id, tasks=shards, submitted_at=now_iso()))
    save_record(run_dir, record)
    return Resubmission(shards, job_id, running, cancelled, prepared.notes)
