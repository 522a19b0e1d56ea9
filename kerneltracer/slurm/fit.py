"""Fit a run's per-task request to what the partition can give, before anything is submitted.

Slurm accepts a job no node can run and keeps it PENDING forever (Reason=PartitionConfig or
PartitionTimeLimit), so a request that exceeds every node is refused here, in one line
naming the setting, the asked value and the most the partition offers. Settings the user
left unset are fitted instead (CPUs down to the largest node, a derived time limit down to
the partition's MaxTime), and each fitted value is reported as a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerneltracer.config import SlurmSettings
from kerneltracer.errors import UsageError
from kerneltracer.slurm.partition import Node, Partition, size_mb, time_seconds
from kerneltracer.slurm.scripts import format_time

_CLOSED_STATES = ("INACTIVE", "DRAIN")


@dataclass
class Fitted:
    settings: SlurmSettings
    task_time: str
    download_time: str
    notes: list[str] = field(default_factory=list)


def _mem_mb(settings: SlurmSettings) -> int | None:
    if settings.mem is None:
        return None
    try:
        return size_mb(settings.mem)
    except ValueError:
        raise UsageError(
            f"slurm.mem {settings.mem!r}: expected a size such as 500M, 32G or 1T"
        ) from None


def _gb(mb: int) -> str:
    return f"{mb}M" if mb < 1024 else f"{mb}M ({mb / 1024:.1f}G)"


def _check_partition(part: Partition) -> list[str]:
    state = part.state.upper()
    if state in _CLOSED_STATES:
        raise UsageError(f"partition {part.name} is {state}: it accepts no new jobs")
    if not part.nodes:
        raise UsageError(f"partition {part.name} has no nodes: no task could ever start")
    if state != "UP":
        return [f"partition {part.name} is {state}: tasks wait until it is UP"]
    return []


def _check_each(settings: SlurmSettings, mem: int | None, part: Partition) -> None:
    """Each explicit request against the most any node offers for it alone."""
    most_gpus = max(n.gpus for n in part.nodes)
    if settings.gpus > most_gpus:
        offer = f"at most {most_gpus} GPU(s) per node" if most_gpus else "no GPUs"
        raise UsageError(f"slurm.gpus {settings.gpus}: partition {part.name} offers {offer}")
    most_mem = max(part.usable_mem_mb(n) for n in part.nodes)
    if mem is not None and mem > most_mem:
        raise UsageError(
            f"slurm.mem {settings.mem}: partition {part.name} offers at most "
            f"{_gb(most_mem)} per node"
        )
    most_cpus = max(part.usable_cpus(n) for n in part.nodes)
    if "cpus_per_task" in settings.model_fields_set and settings.cpus_per_task > most_cpus:
        raise UsageError(
            f"slurm.cpus_per_task {settings.cpus_per_task}: partition {part.name} offers "
            f"at most {most_cpus} CPUs per node"
        )


def _fits(node: Node, part: Partition, cpus: int, mem: int | None, gpus: int) -> bool:
    return (
        part.usable_cpus(node) >= cpus
        and (mem is None or part.usable_mem_mb(node) >= mem)
        and node.gpus >= gpus
    )


def _fit_cpus(settings: SlurmSettings, mem: int | None, part: Partition) -> tuple[int, str]:
    """The CPUs to ask: the user's, or the default capped by the nodes that meet the rest."""
    if "cpus_per_task" in settings.model_fields_set:
        return settings.cpus_per_task, ""
    default = settings.cpus_per_task
    candidates = [n for n in part.nodes if _fits(n, part, 1, mem, settings.gpus)]
    largest = max((part.usable_cpus(n) for n in candidates), default=default)
    if largest >= default:
        return default, ""
    note = (
        f"slurm.cpus_per_task not set: using {largest} (the default {default} is more than "
        f"partition {part.name}'s largest node has)"
    )
    return largest, note


def _check_together(cpus: int, mem: int | None, settings: SlurmSettings, part: Partition) -> None:
    if any(_fits(n, part, cpus, mem, settings.gpus) for n in part.nodes):
        return
    shapes = sorted(
        {(part.usable_cpus(n), part.usable_mem_mb(n), n.gpus) for n in part.nodes}, reverse=True
    )
    offered = "; ".join(f"{c} CPUs, {_gb(m)}, {g} GPU(s)" for c, m, g in shapes[:4])
    asked = f"{cpus} CPUs, {settings.mem or 'default memory'}, {settings.gpus} GPU(s)"
    raise UsageError(
        f"slurm: no node of partition {part.name} offers {asked} together (nodes offer: {offered})"
    )


def _fit_time(value: str, explicit: bool, part: Partition, what: str, notes: list[str]) -> str:
    if part.max_time_s is None:
        return value
    asked = time_seconds(value)
    if asked is not None and asked <= part.max_time_s:
        return value
    most = format_time(part.max_time_s)
    if explicit:
        raise UsageError(f"slurm.time {value}: partition {part.name}'s MaxTime is {most}")
    notes.append(
        f"{what} time limit {value} (derived from the timeouts) capped to partition "
        f"{part.name}'s MaxTime {most}; more shards (--array-size) make shorter tasks"
    )
    return most


def fit(settings: SlurmSettings, part: Partition, task_time: str, download_time: str) -> Fitted:
    """Check ``settings`` against ``part``; refuse what no node can run, fit the rest."""
    notes = _check_partition(part)
    mem = _mem_mb(settings)
    _check_each(settings, mem, part)
    cpus, note = _fit_cpus(settings, mem, part)
    notes += [note] if note else []
    _check_together(cpus, mem, settings, part)
    if not any(_fits(n, part, cpus, mem, settings.gpus) and n.available for n in part.nodes):
        notes.append(
            f"every node of partition {part.name} that fits the request is unavailable "
            "(down, drained or reserved): tasks wait until one returns"
        )
    task_time = _fit_time(task_time, settings.time is not None, part, "array task", notes)
    download_time = _fit_time(download_time, False, part, "download job", notes)
    fitted = settings.model_copy(update={"cpus_per_task": cpus})
    return Fitted(fitted, task_time, download_time, notes)
