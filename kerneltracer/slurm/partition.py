"""What a partition can give one array task: its nodes' CPUs, memory and GPUs, and its limits.

Read from ``scontrol -o show partition`` (limits, which partition is the default) and
``sinfo -N -p`` (one line per node, so nodes of different sizes are seen one by one).
The parsers are pure so they can be tested on captured output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kerneltracer.errors import SlurmError, UsageError, choices
from kerneltracer.slurm import cluster

_KV = re.compile(r"(\w+)=(\S*)")
_NODE_FORMAT = "%N|%c|%m|%G|%T"
_UNLIMITED = frozenset({"UNLIMITED", "INFINITE", "NONE", "N/A", ""})
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT]?)B?$", re.I)
_MB_PER_UNIT = {"K": 1 / 1024, "M": 1, "": 1, "G": 1024, "T": 1024 * 1024}
# Node states in which a node will not take new work until someone acts on it.
_UNAVAILABLE = ("down", "drain", "fail", "future", "maint", "reboot", "power", "inval")


@dataclass(frozen=True)
class Node:
    name: str
    cpus: int
    mem_mb: int
    gpus: int
    state: str

    @property
    def available(self) -> bool:
        state = self.state.lower().rstrip("*~#!%$@^-+")
        return not any(state.startswith(s) for s in _UNAVAILABLE)


@dataclass(frozen=True)
class Partition:
    name: str
    state: str  # UP, DOWN, DRAIN, INACTIVE
    max_time_s: int | None  # None: unlimited
    max_cpus_per_node: int | None
    max_mem_per_node_mb: int | None
    nodes: tuple[Node, ...] = field(default_factory=tuple)

    def usable_cpus(self, node: Node) -> int:
        """CPUs one task can get on ``node`` under this partition's per-node cap."""
        if self.max_cpus_per_node is None:
            return node.cpus
        return min(node.cpus, self.max_cpus_per_node)

    def usable_mem_mb(self, node: Node) -> int:
        if self.max_mem_per_node_mb is None:
            return node.mem_mb
        return min(node.mem_mb, self.max_mem_per_node_mb)


def time_seconds(value: str) -> int | None:
    """A Slurm time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) → seconds;
    None for UNLIMITED/INFINITE. Raises ValueError for anything else."""
    text = value.strip()
    if text.upper() in _UNLIMITED:
        return None
    match = _TIME.match(text)
    if not match:
        raise ValueError(f"not a Slurm time: {value!r}")
    days, a, b, c = match.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # D-HH[:MM[:SS]]
        h, m, s = [*parts, 0, 0][:3]
        return ((int(days) * 24 + h) * 60 + m) * 60 + s
    if len(parts) == 1:  # minutes
        return parts[0] * 60
    if len(parts) == 2:  # MM:SS
        return parts[0] * 60 + parts[1]
    h, m, s = parts
    return (h * 60 + m) * 60 + s


def size_mb(value: str) -> int:
    """A Slurm memory size (``500M``, ``64G``, ``2T``; a bare number is megabytes) → MB."""
    match = _SIZE.match(value.strip())
    if not match:
        raise ValueError(f"not a memory size: {value!r}")
    number, unit = match.groups()
    return int(float(number) * _MB_PER_UNIT[unit.upper()])


def gpu_count(gres: str) -> int:
    """GPUs in a node's Gres (``gpu:4``, ``gpu:a100:2(S:0-1),gpu:v100:2``, ``(null)``)."""
    total = 0
    for item in re.split(r",(?![^(]*\))", gres):
        name, _, rest = re.sub(r"\(.*?\)", "", item).strip().partition(":")
        if name != "gpu":
            continue
        count = rest.rsplit(":", 1)[-1]
        total += int(count) if count.isdigit() else 1
    return total


def parse_partitions(text: str) -> dict[str, dict[str, str]]:
    """``scontrol -o show partition`` → partition name → its fields."""
    out = {}
    for line in text.splitlines():
        fields = dict(_KV.findall(line))
        if fields.get("PartitionName"):
            out[fields["PartitionName"]] = fields
    return out


def parse_nodes(text: str) -> tuple[Node, ...]:
    """``sinfo -h -N -o '%N|%c|%m|%G|%T'`` → nodes (a node listed twice is kept once)."""
    nodes: dict[str, Node] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5 or not parts[1].rstrip("+").isdigit():
            continue
        mem = parts[2].rstrip("+")
        nodes.setdefault(
            parts[0],
            Node(
                parts[0],
                int(parts[1].rstrip("+")),
                int(mem) if mem.isdigit() else 0,
                gpu_count(parts[3]),
                parts[4],
            ),
        )
    return tuple(nodes.values())


def _limit(fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key, "")
    if value.upper() in _UNLIMITED:
        return None
    if key == "MaxTime":
        return time_seconds(value)
    return int(value) if value.isdigit() else None


def choose(partitions: dict[str, dict[str, str]], name: str | None) -> dict[str, str]:
    """The named partition, or the cluster's default one; one-line errors otherwise."""
    if not partitions:
        raise SlurmError("Slurm reports no partitions (scontrol show partition is empty)")
    if name is not None:
        if name not in partitions:
            raise UsageError(
                f"slurm.partition {name!r}: no such partition; choose from {choices(partitions)}"
            )
        return partitions[name]
    default = [f for f in partitions.values() if f.get("Default") == "YES"]
    if not default:
        raise UsageError(
            "the cluster has no default partition: set slurm.partition (or --partition) "
            f"to one of {choices(partitions)}"
        )
    return default[0]


def build(fields: dict[str, str], nodes: tuple[Node, ...]) -> Partition:
    return Partition(
        name=fields["PartitionName"],
        state=fields.get("State", "UP"),
        max_time_s=_limit(fields, "MaxTime"),
        max_cpus_per_node=_limit(fields, "MaxCPUsPerNode"),
        max_mem_per_node_mb=_limit(fields, "MaxMemPerNode"),
        nodes=nodes,
    )


def read_partition(name: str | None) -> Partition:
    """Ask the cluster about partition ``name`` (None: the default partition)."""
    proc = cluster.run_slurm(["scontrol", "-o", "show", "partition"])
    if proc.returncode != 0:
        raise SlurmError(f"scontrol show partition failed: {proc.stderr.strip() or 'no output'}")
    fields = choose(parse_partitions(proc.stdout), name)
    part = fields["PartitionName"]
    proc = cluster.run_slurm(["sinfo", "-h", "-N", "-p", part, "-o", _NODE_FORMAT])
    if proc.returncode != 0:
        raise SlurmError(f"sinfo -p {part} failed: {proc.stderr.strip() or 'no output'}")
    return build(fields, parse_nodes(proc.stdout))


def known_nodes() -> set[str] | None:
    """Every node name the cluster knows, or None when sinfo does not answer."""
    proc = cluster.run_slurm(["sinfo", "-h", "-N", "-o", "%N"])
    if proc.returncode != 0:
        return None
    return {line.strip() for line in proc.stdout.splitlines() if line.strip()}
