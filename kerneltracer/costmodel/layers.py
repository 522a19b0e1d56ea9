"""One rank's estimated compute and communication per layer, and which one bounds it.

Compute is the roofline lower bound of the rank's dispatch signatures (:mod:`.aggregate`'s
``Totals``), attributed to layers by the module paths each signature's calls came from;
communication is :func:`.comm.collective_cost` of each collective the rank issued, attributed
by the module that issued it. A layer is the module path up to its first index
(``model.layers.17``); modules outside the stack of layers (``lm_head``) are layers of their
own. Calls or collectives without an estimate are counted, never added as zero, and a layer
whose verdict they could change is ``unknown``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kerneltracer.core.dispatch_row import DispatchRow
from kerneltracer.core.parallel import CollectiveRecord, Layout
from kerneltracer.costmodel.aggregate import NO_MODULE, UNRECORDED, PerCall, Totals
from kerneltracer.costmodel.comm import CommCost, collective_cost
from kerneltracer.costmodel.devices import Device
from kerneltracer.costmodel.estimate import estimate
from kerneltracer.costmodel.roofline import roofline

COMPUTE = "compute"
COMMUNICATION = "communication"
UNKNOWN = "unknown"
NONE = "none"
# Ops that are collectives or wait on one: their time is the communication's, not compute.
_COMM_NAMESPACES = ("_c10d_functional", "c10d", "_c10d_functional_autograd", "_dtensor")
# Ops that launch nothing: markers (record_function's enter / exit around FSDP's steps).
_MARKER_NAMESPACES = ("profiler",)


def is_compute_op(op: str) -> bool:
    """Not a collective, nor a marker: an op whose time is the rank's compute."""
    namespace = op.split(".", 1)[0]
    return namespace not in _COMM_NAMESPACES and namespace not in _MARKER_NAMESPACES


def layer_of(module: str | None) -> str:
    """``model.layers.17.mlp.experts.3`` -> ``model.layers.17``; ``lm_head`` -> ``lm_head``."""
    if not module:
        return NO_MODULE
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: i + 1])
    return module


def block_of(module: str | None) -> str:
    """The layer and one level below it: ``model.layers.17.self_attn.o_proj`` ->
    ``model.layers.17.self_attn`` (the unit a layer's collectives separate)."""
    if not module:
        return NO_MODULE
    layer = layer_of(module)
    if layer == module:
        return module
    rest = module[len(layer) + 1 :].split(".")
    return f"{layer}.{rest[0]}"


def natural(name: str) -> tuple[tuple[int, int | str], ...]:
    return tuple((1, int(p)) if p.isdigit() else (0, p) for p in re.split(r"(\d+)", name) if p)


def layer_order(layers: Iterable[str], records: list[CollectiveRecord]) -> list[str]:
    """Layers in program order, as far as the records tell it: a layer that issued a
    collective where its first one is; one that issued none after the layer before it in
    index order (``model.layers.3`` after ``model.layers.2``); embeddings first and other
    modules outside the stack (``lm_head``, a final norm) last."""
    layers = list(layers)
    key: dict[str, float] = {}
    for i, record in enumerate(records):
        key.setdefault(layer_of(record.module), float(i))
    indexed = sorted((x for x in layers if x[-1:].isdigit()), key=natural)
    previous = -0.5
    for layer in indexed:
        previous = key.setdefault(layer, previous + 1e-6)
    for layer in layers:
        key.setdefault(layer, -1.0 if "embed" in layer else math.inf)
    return sorted(key, key=lambda x: (key[x], natural(x)))


@dataclass
class LayerCost:
    layer: str
    compute: Totals = field(default_factory=Totals)
    comm_calls: int = 0
    comm_unknown: int = 0  # collectives without a time estimate: not in comm_s
    comm_bytes: int = 0  # sum of known bytes_per_rank
    comm_wire_bytes: float = 0.0
    comm_s: float = 0.0

    def add_comm(self, cost: CommCost) -> None:
        self.comm_calls += 1
        if cost.time_s is None:
            self.comm_unknown += 1
            return
        self.comm_bytes += cost.bytes_per_rank or 0
        self.comm_wire_bytes += cost.wire_bytes or 0.0
        self.comm_s += cost.time_s

    @property
    def bound(self) -> str:
        """What takes longer: the layer's compute or its communication (no overlap assumed).
        ``unknown`` when an unestimated part could change the answer."""
        compute, comm = self.compute.time_s, self.comm_s
        if not self.compute.calls and not self.comm_calls:
            return NONE
        if comm > compute:
            return UNKNOWN if self.compute.unknown_calls else COMMUNICATION
        if self.comm_unknown:
            return UNKNOWN
        if compute == 0:
            return UNKNOWN if self.compute.unknown_calls else NONE
        return COMPUTE


@dataclass
class RankCost:
    rank: int
    device: str
    layers: dict[str, LayerCost] = field(default_factory=dict)  # in program order
    collectives: list[CommCost] = field(default_factory=list)  # in program order

    def total(self) -> LayerCost:
        out = LayerCost("(all layers)")
        for layer in self.layers.values():
            out.compute.merge(layer.compute)
            out.comm_calls += layer.comm_calls
            out.comm_unknown += layer.comm_unknown
            out.comm_bytes += layer.comm_bytes
            out.comm_wire_bytes += layer.comm_wire_bytes
            out.comm_s += layer.comm_s
        return out


def compute_calls(
    rows: Iterable[DispatchRow], device: Device, group: Callable[[str | None], str]
) -> Iterator[tuple[str, PerCall | None, int]]:
    """The compute ops of ``rows`` as (group, roofline point per call or None when the op is
    unknown, calls): one per ``group(module)`` the row's calls were recorded in, and the calls
    no module recorded under :data:`UNRECORDED` (so the calls add up to ``row.count``)."""
    for row in rows:
        if not is_compute_op(row.op):
            continue
        cost = estimate(row.op, row.inputs, row.kwargs, row.outputs)
        point = PerCall.of(roofline(cost, device)) if cost is not None else None
        recorded = 0
        for module, calls in row.modules.items():
            yield group(module), point, calls
            recorded += calls
        if row.count > recorded:
            yield UNRECORDED, point, row.count - recorded


def rank_cost(
    rank: int,
    rows: Iterable[DispatchRow],
    collectives: Iterable[CollectiveRecord],
    device: Device,
    layout: Layout | None = None,
) -> RankCost:
    """``rank``'s layers in program order (:func:`layer_order`): compute from ``rows`` (a
    dispatch trace), communication from ``collectives`` (in program order)."""
    out = RankCost(rank, device.key)
    records = list(collectives)
    for layer, point, calls in compute_calls(rows, device, layer_of):
        _layer(out, layer).compute.add(point, calls)
    for record in records:
        comm = collective_cost(record, device, layout, rank)
        out.collectives.append(comm)
        _layer(out, layer_of(record.module)).add_comm(comm)
    out.layers = {name: out.layers[name] for name in layer_order(out.layers, records)}
    return out


def _layer(out: RankCost, layer: str) -> LayerCost:
    found = out.layers.get(layer)
    if found is None:
        found = out.layers[layer] = LayerCost(layer)
    return found
