"""Why a task is pending (squeue %r), and whether that will ever clear without someone acting.

Slurm keeps a job that can never start PENDING with a reason and says nothing else, so the
reasons that need a person (a request larger than the partition, a per-job limit, a hold,
a dependency that failed, a node that does not exist) are errors here; the rest (Priority,
Resources, Dependency, JobArrayTaskLimit, a drained node...) only mean "waiting".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Reasons that hold until the job or the cluster configuration is changed.
_NEVER = {
    "PartitionConfig": "the request exceeds what the partition's nodes offer",
    "PartitionNodeLimit": "the node count is outside the partition's limits",
    "PartitionTimeLimit": "the time limit exceeds the partition's MaxTime",
    "DependencyNeverSatisfied": "the job it depends on (the download) did not succeed",
    "BadConstraints": "no node has the requested features",
    "InvalidAccount": "the account is invalid",
    "InvalidQOS": "the QOS is invalid",
    "AccountNotAllowed": "the account may not use this partition",
    "QOSNotAllowed": "the QOS may not use this partition",
    "JobHeldUser": "held by its owner (scontrol release)",
    "JobHeldAdmin": "held by an administrator",
    "launch failed requeued held": "its launch failed and Slurm held it (scontrol release)",
}
# Limits that cap how many jobs run at once: they clear when one of the user's jobs ends,
# so they are stuck only while none of the user's jobs is running.
_COUNT_LIMITS = (
    "AssocMaxJobsLimit",
    "AssocGrpJobsLimit",
    "QOSMaxJobsPerUserLimit",
    "QOSMaxJobsPerAccountLimit",
    "QOSGrpJobsLimit",
)
_UNAVAILABLE_NODES = re.compile(r"UnavailableNodes:(\S+)")


@dataclass(frozen=True)
class Verdict:
    stuck: bool  # will not start unless someone acts
    why: str  # plain words; empty for an ordinary wait


def _hostlist(text: str) -> list[str]:
    """``node[1-3,7],gpu01`` → node1, node2, node3, node7, gpu01."""
    names = []
    for prefix, body in re.findall(r"([^,\[]+)(?:\[([^\]]*)\])?", text):
        if not body:
            names.append(prefix)
            continue
        for part in body.split(","):
            low, _, high = part.partition("-")
            if high and low.isdigit() and high.isdigit():
                names += [f"{prefix}{i:0{len(low)}d}" for i in range(int(low), int(high) + 1)]
            else:
                names.append(prefix + part)
    return names


def judge(reason: str, known_nodes: set[str] | None, user_running: bool) -> Verdict:
    """Whether a pending task with ``reason`` can still start by itself.

    ``known_nodes``: every node the cluster has (None: unknown, never judged missing);
    ``user_running``: whether any job of the submitting user is running now."""
    reason = reason.strip()
    if reason in _NEVER:
        return Verdict(True, _NEVER[reason])
    if "PerJob" in reason or reason == "QOSMinCpuNotSatisfied":
        return Verdict(True, "the request exceeds a per-job limit of the account or QOS")
    if reason in _COUNT_LIMITS and not user_running:
        return Verdict(True, "a job-count limit with none of the user's jobs running to free it")
    if reason.startswith("ReqNodeNotAvail") and known_nodes is not None:
        match = _UNAVAILABLE_NODES.search(reason)
        missing = [n for n in _hostlist(match.group(1)) if n not in known_nodes] if match else []
        if missing:
            names = ", ".join(missing)
            return Verdict(True, f"it needs node(s) the cluster does not have: {names}")
    return Verdict(False, "")


def needs_user_check(reason: str) -> bool:
    """Whether :func:`judge` needs ``user_running`` for this reason (a squeue call)."""
    return reason.strip() in _COUNT_LIMITS
