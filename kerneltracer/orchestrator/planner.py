"""Decide, for every planned job, whether it must run, is complete, or is bypassed.

Reading status files is the whole cost of planning a finished run, so it is done once per
job with orjson and a stat per output. "Complete" is :func:`kerneltracer.core.state.job_state`,
the same definition Slurm status and resubmit use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import RunPaths
from kerneltracer.core.rundir import JobRecord
from kerneltracer.core.state import group_of, group_winners, job_state


@dataclass
class PlannedJob:
    job: JobSpec
    job_dir: Path
    status: dict[str, Any] | None  # the status file on disk now, unvalidated
    run: bool  # must run (subject to its exclusive group)
    reason: str  # why it runs, or why not


@dataclass
class Chain:
    """Jobs that run one after another; the first ok one ends the chain (exclusive group)."""

    members: list[PlannedJob]
    group: str | None = None


@dataclass
class RunPlan:
    run_dir: Path
    jobs: list[PlannedJob]
    chains: list[Chain] = field(default_factory=list)
    # Members of a satisfied exclusive group: job key → the key that satisfied it.
    satisfied_by: dict[str, str] = field(default_factory=dict)

    @property
    def to_run(self) -> list[PlannedJob]:
        return [p for p in self.jobs if p.run and p.job.key not in self.satisfied_by]


def plan_run(
    run_dir: Path, jobs: list[JobSpec], force: bool = False, verify: bool = False
) -> RunPlan:
    planned = []
    paths = RunPaths(run_dir)
    for job in jobs:
        record = JobRecord.read(paths.job(job.key).dir, job.key)
        if force:
            planned.append(PlannedJob(job, record.job_dir, record.raw, True, "--force"))
            continue
        state = job_state(record, job, verify=verify)
        planned.append(PlannedJob(job, record.job_dir, record.raw, not state.done, state.reason))
    plan = RunPlan(run_dir=run_dir, jobs=planned)
    _build_chains(plan)
    return plan


def _build_chains(plan: RunPlan) -> None:
    done = {p.job.key for p in plan.jobs if not p.run}
    plan.satisfied_by = group_winners([p.job for p in plan.jobs], done)
    groups: dict[tuple[str, str, str], list[PlannedJob]] = {}
    for p in plan.jobs:
        group = group_of(p.job)
        if group is None:
            if p.run:
                plan.chains.append(Chain([p]))
        elif p.job.key not in plan.satisfied_by and p.job.key not in done:
            groups.setdefault(group, []).append(p)
    for (_, _, name), members in groups.items():
        plan.chains.append(Chain(members, name))
