"""The one definition of "done", shared by the planner (``run``) and Slurm status/resubmit.

A job is done for a request when its status says ok, its request hash is the request's,
and every output it lists is intact (:func:`~kerneltracer.core.status.incomplete_reason`).
Any other end (failed, skipped, unsupported, ...) runs again, except a member of an
exclusive group another member satisfies: that one is bypassed (and marked skipped).
So "would ``run`` start a worker for this job" is :func:`to_run`, wherever it is asked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.rundir import JobRecord
from kerneltracer.core.status import incomplete_reason

COMPLETE = "complete"
J = TypeVar("J", bound=JobSpec)


@dataclass(frozen=True)
class JobState:
    done: bool
    reason: str  # "complete", or why the job must run again


def job_state(record: JobRecord, spec: JobSpec, verify: bool = False) -> JobState:
    """Whether ``record`` is a finished, intact run of exactly ``spec``'s request."""
    why = incomplete_reason(record.raw, spec, record.job_dir, verify=verify)
    return JobState(why is None, why or COMPLETE)


def group_of(spec: JobSpec) -> tuple[str, str, str] | None:
    """The exclusive group a job belongs to, per model and mode; None if it has none."""
    if spec.exclusive_group is None:
        return None
    return (spec.model.slug, spec.mode, spec.exclusive_group)


def group_winners(specs: Sequence[JobSpec], done: Collection[str]) -> dict[str, str]:
    """Members of an exclusive group that a done member satisfies: key → the done key.

    The first done member in plan order satisfies its group."""
    groups: dict[tuple[str, str, str], list[JobSpec]] = {}
    for spec in specs:
        group = group_of(spec)
        if group is not None:
            groups.setdefault(group, []).append(spec)
    out: dict[str, str] = {}
    for members in groups.values():
        winner = next((m for m in members if m.key in done), None)
        if winner is not None:
            out.update({m.key: winner.key for m in members if m is not winner})
    return out


def to_run(specs: Sequence[J], states: Mapping[str, JobState]) -> list[J]:
    """The jobs ``run`` would start a worker for, in plan order (without ``--force``)."""
    done = {key for key, state in states.items() if state.done}
    satisfied = group_winners(specs, done)
    return [s for s in specs if s.key not in done and s.key not in satisfied]
