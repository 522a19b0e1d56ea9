"""What an array task must hold for the multi-rank jobs it may run: every rank on the task's
one node, a CPU core per rank, and a GPU per rank for ranks that run on GPUs.

A task is one Slurm task on one node (``--nodes=1``: the ranks rendezvous on loopback), so
its ``--cpus-per-task`` and ``--gres=gpu:N`` are the largest job's ranks at least. A value
the config left unset is raised to that (with a note); one set lower is refused in one line
with the numbers, before anything is submitted.
"""

from __future__ import annotations

from collections.abc import Sequence

from kerneltracer.config import SlurmSettings
from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.parallelspec import ParallelSpec
from kerneltracer.errors import UsageError


def _on_gpus(job: JobSpec, settings: SlurmSettings) -> bool:
    """Whether the job's ranks run on GPUs in a task: cuda asked, or auto on a task with GPUs."""
    if job.device.startswith("cuda"):
        return True
    return job.device == "auto" and settings.gpus > 0


def _widest(jobs: Sequence[JobSpec]) -> tuple[int, str]:
    job = max(jobs, key=lambda j: j.rank_processes)
    return job.rank_processes, ParallelSpec.from_json(job.parallel or {}).label()


def fit_ranks(
    settings: SlurmSettings, jobs: Sequence[JobSpec]
) -> tuple[SlurmSettings, list[str], int]:
    """The settings raised to hold the widest multi-rank job, the notes saying so, and that
    job's rank count (1: no multi-rank job)."""
    multi = [j for j in jobs if j.rank_processes > 1]
    if not multi:
        return settings, [], 1
    notes: list[str] = []
    update: dict[str, int] = {}
    world, label = _widest(multi)
    on_gpus = [j for j in multi if _on_gpus(j, settings)]
    if on_gpus:
        need, gpu_label = _widest(on_gpus)
        if settings.gpus < need:
            if "gpus" in settings.model_fields_set:
                raise UsageError(
                    f"slurm.gpus {settings.gpus}: parallel {gpu_label} needs {need} GPUs on one "
                    "node (one per rank); set slurm.gpus to at least that, or device: cpu"
                )
            update["gpus"] = need
            notes.append(f"slurm.gpus not set: asking {need} (one per rank of {gpu_label})")
    if settings.cpus_per_task < world:
        if "cpus_per_task" in settings.model_fields_set:
            raise UsageError(
                f"slurm.cpus_per_task {settings.cpus_per_task}: parallel {label} needs {world} "
                "CPUs on one node (one per rank)"
            )
        update["cpus_per_task"] = world
        notes.append(f"slurm.cpus_per_task not set: asking {world} (one per rank of {label})")
    return settings.model_copy(update=update), notes, world
