"""Per-rank Chakra execution traces (.et), the MLCommons format ASTRA-sim and other
distributed-training simulators read, from a parallel job's rank dirs.

Each rank's file ``trace.<rank>.et`` is a length-delimited stream: one ``GlobalMetadata``
then one ``Node`` per step of the rank's program, each depending (``data_deps``) on the step
before it:

- a compute node (``COMP_NODE``) per block of a layer (``model.layers.3.self_attn``: the
  unit a layer's collectives separate), with ``num_ops`` (FLOPs), ``tensor_size`` (bytes
  read and written) and ``duration_micros`` from the cost model (the roofline lower bound
  on the chosen device; ``est_time_us`` keeps the fraction);
- a communication node per collective, in the rank's program order: ``COMM_COLL_NODE``
  with ``comm_type`` and ``comm_size`` (this rank's input buffer in bytes, what Chakra's
  PyTorch converter records), ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` with ``comm_src``,
  ``comm_dst`` and ``comm_tag``; ``pg_name`` names the process group, whose ranks
  ``comm_group.json`` lists (ASTRA-sim's communicator group file).

A dispatch trace keeps one row per call signature, not the call sequence, so the order
comes from the collectives (program order, each with the module that issued it) and the
module paths: layers where their first collective is (else by index), a block that issued
collectives just before the last of them (a row-parallel linear before its all_reduce, an
MoE block's experts between dispatch and combine), blocks that issued none (norms) at their
layer's start.
Collectives never leave their own order (simulators match them across ranks by it). A
collective whose bytes are unknown gets no ``comm_size`` and ``comm_size_known`` false;
the export counts them. The wire format is written by :mod:`.protowire`; the field numbers
below are Chakra's ``et_def.proto`` (schema version 0.0.4).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.core.parallel import AXES, CollectiveRecord, Layout
from kerneltracer.core.ranks import RankData, RankJob, as_rank
from kerneltracer.costmodel import Device, Totals
from kerneltracer.costmodel.comm import collective_cost, group_members
from kerneltracer.costmodel.layers import block_of, compute_calls, layer_of, layer_order, natural
from kerneltracer.export import protowire as pw
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_json

SCHEMA_VERSION = "0.0.4"
_TRACE_PREFIX = "trace"
_COMM_GROUP_FILE = "comm_group.json"
SUMMARY_FILE = "chakra_export.json"

# et_def.proto: NodeType and CollectiveCommType values.
COMP_NODE = 4
COMM_SEND_NODE = 5
COMM_RECV_NODE = 6
COMM_COLL_NODE = 7
_COMM_TYPE = {
    "all_reduce": 0,
    "all_gather": 2,
    "broadcast": 5,
    "all_to_all": 6,
    "reduce_scatter": 7,
    "barrier": 9,
}
# Field numbers: Node, AttributeProto (its oneof value), GlobalMetadata, IOInfo.
_NODE_ID, _NODE_NAME, _NODE_TYPE, _NODE_DATA_DEPS = 1, 2, 3, 5
_NODE_DURATION, _NODE_INPUTS, _NODE_ATTR = 7, 8, 10
_ATTR_NAME, _ATTR_DOUBLE, _ATTR_INT64, _ATTR_UINT64, _ATTR_BOOL, _ATTR_STRING = 1, 3, 9, 13, 27, 29
_META_VERSION, _META_ATTR = 1, 2
_IO_SHAPES, _IO_TYPES = 2, 3

Value = int | float | bool | str


@dataclass(frozen=True)
class Attr:
    name: str
    value: Value
    unsigned: bool = False  # ints: uint64_val rather than int64_val

    def encode(self) -> bytes:
        out = pw.text(_ATTR_NAME, self.name)
        v = self.value
        if isinstance(v, bool):
            return out + pw.uint(_ATTR_BOOL, v)
        if isinstance(v, int):
            return out + pw.uint(_ATTR_UINT64 if self.unsigned else _ATTR_INT64, v)
        if isinstance(v, float):
            return out + pw.double(_ATTR_DOUBLE, v)
        return out + pw.text(_ATTR_STRING, v)


@dataclass
class Node:
    id: int
    name: str
    type: int
    deps: list[int]
    duration_us: int
    attrs: list[Attr] = field(default_factory=list)
    shapes: str | None = None  # IOInfo.shapes of the inputs, e.g. "[[1,2048,8192]]"
    types: str | None = None

    def encode(self) -> bytes:
        out = pw.uint(_NODE_ID, self.id) + pw.text(_NODE_NAME, self.name)
        out += pw.uint(_NODE_TYPE, self.type) + pw.packed(_NODE_DATA_DEPS, self.deps)
        out += pw.uint(_NODE_DURATION, self.duration_us)
        if self.shapes is not None:
            io = pw.text(_IO_SHAPES, self.shapes) + pw.text(_IO_TYPES, self.types or "")
            out += pw.blob(_NODE_INPUTS, io)
        return out + b"".join(pw.blob(_NODE_ATTR, a.encode()) for a in self.attrs)


@dataclass
class _Block:
    name: str
    totals: Totals = field(default_factory=Totals)

    @property
    def layer(self) -> str:
        return layer_of(self.name)


class Groups:
    """Process groups by their ranks, numbered in the order first met (``pg_name``)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, ...], str] = {}

    def name(self, record: CollectiveRecord, rank: int, layout: Layout) -> str:
        if record.group in AXES and getattr(layout, record.group) == record.group_size:
            members = tuple(group_members(layout, rank, record.group))
            return self.ids.setdefault(members, str(len(self.ids)))
        return record.group  # a group the layout does not name: as the record names it

    def to_json(self) -> dict[str, list[int]]:
        return {gid: list(members) for members, gid in self.ids.items()}


def _blocks(data: RankData, device: Device) -> dict[str, _Block]:
    blocks: dict[str, _Block] = {}
    for block, point, calls in compute_calls(data.rows, device, block_of):
        _block(blocks, block).totals.add(point, calls)
    return blocks


def _block(blocks: dict[str, _Block], name: str) -> _Block:
    found = blocks.get(name)
    if found is None:
        found = blocks[name] = _Block(name)
    return found


def program(blocks: dict[str, _Block], records: list[CollectiveRecord]) -> list[_Block | int]:
    """The rank's steps: compute blocks and collectives (their index in ``records``), in
    program order. Collectives keep their own order; a block that issued collectives runs
    just before the last of them, a block that issued none (a norm) at its layer's start."""
    by_layer: dict[str, list[_Block]] = {}
    for block in blocks.values():
        by_layer.setdefault(block.layer, []).append(block)
    order = layer_order(by_layer, records)
    rank_of_layer = {layer: i for i, layer in enumerate(order)}
    issuing = {block_of(r.module) for r in records}
    steps: list[_Block | int] = []
    done: set[str] = set()
    next_layer = 0

    def layer_start(layer: str) -> None:
        nonlocal next_layer
        while next_layer <= rank_of_layer[layer]:
            current = order[next_layer]
            quiet = [b for b in by_layer.get(current, []) if b.name not in issuing]
            for block in sorted(quiet, key=lambda b: natural(b.name)):
                steps.append(block)
                done.add(block.name)
            if current != layer:  # a layer wholly before this one: its other blocks too
                for block in sorted(by_layer.get(current, []), key=lambda b: natural(b.name)):
                    if block.name not in done:
                        steps.append(block)
                        done.add(block.name)
            next_layer += 1

    # A block's compute runs before the last collective it issues: a row-parallel linear's
    # all_reduce follows it; an MoE block's dispatch all_to_all precede its experts, the
    # combine follows them.
    last = {block_of(r.module): i for i, r in enumerate(records)}
    for index, record in enumerate(records):
        layer_start(layer_of(record.module))
        name = block_of(record.module)
        if name in blocks and name not in done and last[name] == index:
            steps.append(blocks[name])
            done.add(name)
        steps.append(index)
    if order:
        layer_start(order[-1])
    steps += [b for layer in order for b in by_layer.get(layer, []) if b.name not in done]
    return steps


def _micros(seconds: float) -> int:
    return math.ceil(seconds * 1e6) if seconds > 0 else 0


def _compute_node(node_id: int, block: _Block) -> Node:
    t = block.totals
    attrs = [
        Attr("is_cpu_op", False),
        Attr("num_ops", t.flops, unsigned=True),
        Attr("tensor_size", t.bytes, unsigned=True),
        Attr("est_time_us", t.time_s * 1e6),
        Attr("calls", t.calls),
        Attr("module", block.name),
    ]
    if t.unknown_calls:
        attrs.append(Attr("unknown_calls", t.unknown_calls))  # calls the estimates leave out
    return Node(node_id, block.name, COMP_NODE, [], _micros(t.time_s), attrs)


def _comm_node(
    node_id: int, record: CollectiveRecord, rank: int, layout: Layout, device: Device, pg: str
) -> Node:
    cost = collective_cost(record, device, layout, rank)
    attrs = [Attr("is_cpu_op", False)]
    kind = record.kind
    if kind in ("send", "recv"):
        node_type = COMM_SEND_NODE if kind == "send" else COMM_RECV_NODE
        peer = record.peer if record.peer is not None else -1
        src, dst = (rank, peer) if kind == "send" else (peer, rank)
        attrs += [Attr("comm_src", src), Attr("comm_dst", dst), Attr("comm_tag", record.seq)]
    else:
        node_type = COMM_COLL_NODE
        attrs.append(Attr("comm_type", _COMM_TYPE[kind]))
    if record.bytes_per_rank is not None:
        attrs.append(Attr("comm_size", record.bytes_per_rank))
    attrs.append(Attr("comm_size_known", record.bytes_per_rank is not None))
    attrs += [Attr("pg_name", pg), Attr("comm_group", record.group), Attr("op", record.op)]
    attrs += [Attr("phase", record.phase), Attr("seq", record.seq)]
    if record.module:
        attrs.append(Attr("module", record.module))
    if cost.assumption:
        attrs.append(Attr("assumption", cost.assumption))
    if cost.time_s is not None:
        attrs.append(Attr("est_time_us", cost.time_s * 1e6))
    if cost.link:
        attrs.append(Attr("link", cost.link))
    shapes = "[[" + ",".join(str(d) for d in record.shape) + "]]"
    name = f"{kind}:{record.group}#{record.seq}"
    return Node(
        node_id, name, node_type, [], _micros(cost.time_s or 0.0), attrs, shapes, record.dtype
    )


@dataclass
class RankTrace:
    rank: int
    nodes: list[Node]
    compute_nodes: int
    comm_nodes: int
    unknown_size: int  # comm nodes without comm_size


def _rank_trace(data: RankData, layout: Layout, device: Device, groups: Groups) -> RankTrace:
    """The rank's program as Chakra nodes, each depending on the one before."""
    nodes: list[Node] = []
    for step in program(_blocks(data, device), data.collectives):
        if isinstance(step, _Block):
            nodes.append(_compute_node(len(nodes), step))
            continue
        record = data.collectives[step]
        pg = groups.name(record, data.rank, layout)
        nodes.append(_comm_node(len(nodes), record, data.rank, layout, device, pg))
    for node in nodes[1:]:
        node.deps = [node.id - 1]
    comm = sum(n.type != COMP_NODE for n in nodes)
    unknown = sum(r.bytes_per_rank is None for r in data.collectives)
    return RankTrace(data.rank, nodes, len(nodes) - comm, comm, unknown)


def metadata(rank: int, layout: Layout, device: Device, source: str, role: int) -> bytes:
    """``role``: the rank dir whose program this rank runs (itself, or the role it is a
    tp / dp peer of)."""
    attrs = [
        Attr("schema", f"kerneltracer {SCHEMA_VERSION}"),
        Attr("rank", rank),
        Attr("role_rank", role),
        Attr("world_size", layout.world_size),
        Attr("layout", layout.label()),
        *(Attr(axis, getattr(layout, axis)) for axis in AXES),
        Attr("layout_source", source),
        Attr("device", device.key),
        Attr("estimates", "roofline lower bound and alpha-beta ring model, from shapes"),
    ]
    return pw.text(_META_VERSION, SCHEMA_VERSION) + b"".join(
        pw.blob(_META_ATTR, a.encode()) for a in attrs
    )


def _encode_trace(meta: bytes, nodes: Iterable[Node]) -> bytes:
    return pw.delimited(meta) + b"".join(pw.delimited(n.encode()) for n in nodes)


@dataclass
class ChakraExport:
    out_dir: Path
    layout: Layout
    layout_source: str
    files: list[Path]
    traces: list[RankTrace]
    missing_ranks: list[int]  # ranks of the layout without a rank dir: no trace for them
    bad: dict[str, int]  # "rank <r> <file>: <kind>" -> lines skipped

    def summary(self) -> dict[str, object]:
        return {
            "schema_version": SCHEMA_VERSION,
            "layout": self.layout.to_json(),
            "layout_label": self.layout.label(),
            "layout_source": self.layout_source,
            "files": [f.name for f in self.files],
            "ranks": [
                {
                    "rank": t.rank,
                    "nodes": len(t.nodes),
                    "compute_nodes": t.compute_nodes,
                    "comm_nodes": t.comm_nodes,
                    "comm_size_unknown": t.unknown_size,
                }
                for t in self.traces
            ],
            "missing_ranks": self.missing_ranks,
            "bad_lines": self.bad,
        }


def export_chakra(job: RankJob, device: Device, out_dir: Path) -> ChakraExport:
    """Write ``trace.<rank>.et`` for every rank a rank dir stands for (a simulation's role
    dir stands for its tp / dp peers), ``comm_group.json`` and a summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = Groups()
    files: list[Path] = []
    traces: list[RankTrace] = []
    bad: dict[str, int] = {}
    for rank in range(job.layout.world_size):
        source = job.source_of(rank)
        if source is None:
            continue
        data = as_rank(job.ranks[source], rank, job.layout)
        trace = _rank_trace(data, job.layout, device, groups)
        meta = metadata(rank, job.layout, device, job.layout_source, source)
        path = out_dir / f"{_TRACE_PREFIX}.{rank}.et"
        atomic_write_bytes(path, _encode_trace(meta, trace.nodes))
        files.append(path)
        traces.append(trace)
    for rank, data in job.ranks.items():
        for kind, n in data.bad.items():
            bad[f"rank {rank} {kind}"] = n
    atomic_write_json(out_dir / _COMM_GROUP_FILE, groups.to_json())
    result = ChakraExport(
        out_dir, job.layout, job.layout_source, files, traces, job.missing_ranks, bad
    )
    atomic_write_json(out_dir / SUMMARY_FILE, result.summary())
    return result
