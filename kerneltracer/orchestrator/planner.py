"""Decide, for every planned job, whether it must run, is complete, or is bypassed.

Reading status files is the whole cost of planning a finished run, so it is done once per
job with pydantic's JSON parser and a stat per output (see :mod:`kerneltracer.status`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltracer.jobs import JOBS_DIR, JobSpec
from kerneltracer.status import incomplete_reason, read_raw_status


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
    jobs_root = f"{run_dir}/{JOBS_DIR}"
    for job in jobs:
        job_path = f"{jobs_root}/{job.key}"  # plain strings: Path objects cost 5x more here
        job_dir = Path(job_path)
        status = read_raw_status(job_path)
        if force:
            planned.append(PlannedJob(job, job_dir, status, True, "--force"))
            continue
        why = incomplete_reason(status, job, job_path, verify=verify)
        planned.append(PlannedJob(job, job_dir, status, why is not None, why or "complete"))
    plan = RunPlan(run_dir=run_dir, jobs=planned)
    _build_chains(plan)
    return plan


def _build_chains(plan: RunPlan) -> None:
    groups: dict[tuple[str, str, str], list[PlannedJob]] = {}
    for p in plan.jobs:
        if p.job.exclusive_group is None:
            if p.run:
                plan.chains.append(Chain([p]))
            continue
        key = (p.job.model.slug, p.job.mode, p.job.exclusive_group)
        groups.setdefault(key, []).append(p)
    for (_, _, group), members in groups.items():
        done = next((m for m in members if not m.run), None)
        if done is not None:
            for m in members:
                if m is not done:
                    plan.satisfied_by[m.job.key] = done.job.key
            continue
        plan.chains.append(Chain(members, group))
