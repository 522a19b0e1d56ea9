"""The time of a collective on a device's links: the alpha-beta model with ring algorithms.

A collective over ``n`` ranks with a buffer of ``S`` bytes takes ``steps * alpha + wire / beta``:
``alpha`` a link's latency per algorithm step, ``beta`` its bandwidth per GPU per direction,
``wire`` the bytes each rank sends. The factors are the ring algorithms' (NCCL / RCCL's
defaults at the sizes that matter, and what nccl-tests' "bus bandwidth" assumes):

============== =========================== ==========
kind           bytes each rank sends       steps
============== =========================== ==========
all_reduce     2 (n - 1) / n * S           2 (n - 1)
all_gather     (n - 1) / n * n S_in        n - 1      (S_in: this rank's shard)
reduce_scatter (n - 1) / n * S             n - 1
all_to_all     (n - 1) / n * S             n - 1      (pairwise exchange)
broadcast      S                           n - 1      (pipelined ring)
send / recv    S                           1
barrier        0                           2 (n - 1)  (an all_reduce of nothing)
============== =========================== ==========

``S`` is the record's ``bytes_per_rank`` (this rank's input buffer). A group whose ranks sit
on one node crosses the device's intra-node link (NVLink, Infinity Fabric); a group that
spans nodes is bound by the slower inter-node link (a ring is as fast as its slowest hop).
Unknown bytes stay unknown: the cost says why, and no time is given.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kerneltracer.core.parallel import AXES, CollectiveRecord, Layout
from kerneltracer.costmodel.devices import Device, Link

ALL_REDUCE = "all_reduce"


def steps(kind: str, n: int) -> int:
    """Algorithm steps (each pays one link latency) of ``kind`` over ``n`` ranks."""
    if n <= 1:
        return 0
    if kind in (ALL_REDUCE, "barrier"):
        return 2 * (n - 1)
    if kind in ("send", "recv"):
        return 1
    return n - 1  # all_gather, reduce_scatter, all_to_all, broadcast


def wire_bytes(kind: str, n: int, s: int) -> float:
    """Bytes each rank sends over its link for ``kind`` over ``n`` ranks, input ``s`` bytes."""
    if n <= 1 and kind not in ("send", "recv"):
        return 0.0
    if kind == ALL_REDUCE:
        return 2 * (n - 1) / n * s
    if kind == "all_gather":
        return (n - 1) * s  # (n - 1) / n of the gathered buffer of n * s
    if kind in ("reduce_scatter", "all_to_all"):
        return (n - 1) / n * s
    if kind in ("broadcast", "send", "recv"):
        return float(s)
    return 0.0  # barrier


@dataclass(frozen=True, slots=True)
class CommCost:
    """One collective's estimated cost on one rank; ``time_s`` None when not estimable."""

    kind: str
    group: str
    group_size: int
    bytes_per_rank: int | None
    link: str | None  # the link it crosses ("NVLink 4"); None: none (one rank) or unknown
    wire_bytes: float | None  # bytes this rank sends
    steps: int
    time_s: float | None
    why_unknown: str | None = None
    assumption: str | None = None  # what the estimate assumed (the record's, or placement)

    @property
    def known(self) -> bool:
        return self.time_s is not None


def _alpha_beta(kind: str, n: int, s: int, link: Link) -> tuple[float, float]:
    """(bytes sent, seconds) of ``kind`` over ``n`` ranks with input ``s`` bytes on ``link``."""
    sent = wire_bytes(kind, n, s)
    return sent, steps(kind, n) * link.latency + sent / link.bandwidth


def group_members(layout: Layout, rank: int, axis: str) -> list[int]:
    """The ranks of ``rank``'s group along ``axis``, in order."""
    coords = layout.coords(rank)
    return [layout.rank_of({**coords, axis: i}) for i in range(getattr(layout, axis))]


def _placement(
    record: CollectiveRecord, rank: int, layout: Layout | None, per_node: int
) -> tuple[bool, str | None]:
    """(whether the group spans nodes, what was assumed to decide it)."""
    if record.kind in ("send", "recv") and record.peer is not None:
        return rank // per_node != record.peer // per_node, None
    if (
        layout is not None
        and record.group in AXES
        and getattr(layout, record.group) == record.group_size
        and rank < layout.world_size
    ):
        members = group_members(layout, rank, record.group)
        return len({m // per_node for m in members}) > 1, None
    spans = record.group_size > per_node
    where = "across nodes" if spans else "within one node"
    return spans, f"group {record.group!r} placement unknown: assumed {where}"


def collective_cost(
    record: CollectiveRecord, device: Device, layout: Layout | None = None, rank: int = 0
) -> CommCost:
    """The estimated time of ``record`` as ``rank`` of ``layout`` issues it on ``device``."""
    n = record.group_size
    base = CommCost(
        record.kind, record.group, n, record.bytes_per_rank, None, None, 0, None,
        assumption=record.assumption,
    )  # fmt: skip
    if n <= 1 and record.kind not in ("send", "recv"):
        return replace(base, wire_bytes=0.0, time_s=0.0)
    if record.bytes_per_rank is None:
        return replace(base, why_unknown="bytes not known (the record says so)")
    net = device.interconnect
    if net is None:
        return replace(base, why_unknown=f"device {device.key} has no interconnect in its table")
    spans, placed = _placement(record, rank, layout, net.gpus_per_node)
    link = net.inter_node if spans else net.intra_node
    if link is None:
        return replace(
            base, why_unknown=f"the group spans nodes and {device.key} has no inter_node link"
        )
    sent, seconds = _alpha_beta(record.kind, n, record.bytes_per_rank, link)
    assumed = "; ".join(a for a in (record.assumption, placed) if a) or None
    return CommCost(
        record.kind, record.group, n, record.bytes_per_rank, link.name, sent,
        steps(record.kind, n), seconds, None, assumed,
    )  # fmt: skip
