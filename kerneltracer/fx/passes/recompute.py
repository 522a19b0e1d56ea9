"""Activation recomputation: wrap chosen layers in ``torch.utils.checkpoint``.

Layers are maximal runs of graph nodes that belong to the same numbered module (``layers.3``,
``model.layers.0``; otherwise the top-level child), read from ``call_module`` targets and the
``nn_module_stack`` metadata both tracers record. A layer is recomputable unless it mutates a
tensor or updates hidden state (BatchNorm in train mode would update its running stats twice);
random ops are fine because checkpoint restores the RNG state. Each chosen layer becomes a
sub-``GraphModule`` called as ``checkpoint(layer, *inputs, use_reentrant=False)``.

Policies:

* :class:`EveryNth` — checkpoint layers ``n-1, 2n-1, ...`` (the simple fixed-stride policy);
* :class:`MemoryBudget` (default) — measure each layer's saved activations and estimate its
  recompute cost (FLOPs + output elements) on the example inputs, then pick the set of
  layers with the least recomputation cost that brings the saved activations under the
  budget (0/1 knapsack, solved exactly by DP).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.utils.checkpoint
from torch import fx

from kerneltracer.fx.graph_table import node_views
from kerneltracer.fx.measure import saved_activations
from kerneltracer.fx.passes.base import OptimizationPass, PassContext, owning_module
from kerneltracer.fx.purity import Effect

_COMPUTE = frozenset({"call_function", "call_method", "call_module"})
_NUMBERED = re.compile(r"^(.*?\.\d+)(\.|$)")
_DP_UNITS = 1000
_MAX_STATES = 20_000


@dataclass(frozen=True)
class Layer:
    index: int
    key: str
    nodes: tuple[str, ...]
    eligible: bool
    reason: str
    saved_bytes: int = 0  # activations produced inside and saved, not counting its outputs
    recompute_cost: float = 0.0  # estimated operations (see measure.SavedActivations)


@dataclass(frozen=True)
class EveryNth:
    n: int = 2

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.n}")

    def choose(self, layers: list[Layer], total_bytes: int) -> list[int]:
        return [x.index for x in layers if x.eligible and x.index % self.n == self.n - 1]


@dataclass(frozen=True)
class MemoryBudget:
    """Keep saved activations under ``fraction`` of the unoptimised amount."""

    fraction: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"memory budget must be a fraction in [0, 1], got {self.fraction}")

    def choose(self, layers: list[Layer], total_bytes: int) -> list[int]:
        need = total_bytes - self.fraction * total_bytes
        candidates = [x for x in layers if x.eligible and x.saved_bytes > 0]
        if need <= 0 or not candidates:
            return []
        if sum(x.saved_bytes for x in candidates) <= need:
            return [x.index for x in candidates]
        return _min_cost_cover(candidates, need)


def _min_cost_cover(layers: list[Layer], need: float) -> list[int]:
    """Least total recompute cost whose saved bytes reach ``need`` (0/1 knapsack cover).

    Exact dynamic programming over the reachable byte sums (capped at ``need``), keeping only
    the Pareto front (no state that costs more and reaches less). Repeated layers have equal
    sizes, so the front stays small; past ``_MAX_STATES`` sums are rounded *down* to a grid,
    which keeps every chosen set feasible at a small loss of optimality.
    """
    target = math.ceil(need)
    states: dict[int, tuple[float, tuple[int, ...]]] = {0: (0.0, ())}
    grid = 1
    for layer in layers:
        merged = dict(states)
        for reach, (cost, chosen) in states.items():
            new_reach = min(target, reach + layer.saved_bytes)
            new_reach -= new_reach % grid if new_reach < target else 0
            option = (cost + layer.recompute_cost, (*chosen, layer.index))
            if new_reach not in merged or option[0] < merged[new_reach][0]:
                merged[new_reach] = option
        states = _pareto(merged)
        if len(states) > _MAX_STATES:
            grid = max(1, target // _DP_UNITS)
            states = _pareto({r - r % grid if r < target else r: v for r, v in states.items()})
    best = states.get(target)
    return sorted(best[1]) if best else [x.index for x in layers]


def _pareto(
    states: dict[int, tuple[float, tuple[int, ...]]],
) -> dict[int, tuple[float, tuple[int, ...]]]:
    front: dict[int, tuple[float, tuple[int, ...]]] = {}
    cheapest = math.inf
    for reach in sorted(states, reverse=True):
        if states[reach][0] < cheapest:
            front[reach] = states[reach]
            cheapest = states[reach][0]
    return front


def _layer_key(node: fx.Node) -> str | None:
    if node.op == "call_module":
        path: str | None = str(node.target)
    else:
        stack = node.meta.get("nn_module_stack") or {}
        path = None
        if stack:
            last = list(stack.values())[-1]
            path = str(last[0]) if isinstance(last, tuple) else str(last)
    if not path:
        return None
    match = _NUMBERED.match(path)
    return match.group(1) if match else path.split(".")[0]


def find_layers(gm: fx.GraphModule) -> list[Layer]:
    """Group the compute nodes into layers (contiguous runs with one layer key)."""
    effects = {v.name: v.classification for v in node_views(gm)}
    runs: list[tuple[str, list[str]]] = []
    current: str | None = None
    for node in gm.graph.nodes:
        if node.op not in _COMPUTE:
            continue
        key = _layer_key(node) or current or "<top>"
        if not runs or key != runs[-1][0]:
            runs.append((key, []))
        runs[-1][1].append(node.name)
        current = key
    layers = []
    for index, (key, names) in enumerate(runs):
        blockers = [
            f"{n}: {effects[n].reason}"
            for n in names
            if effects[n].effect in (Effect.MUTATING, Effect.STATEFUL)
        ]
        reason = "recomputable" if not blockers else blockers[0]
        layers.append(Layer(index, key, tuple(names), not blockers, reason))
    return layers


def _measure_layers(
    gm: fx.GraphModule, layers: list[Layer], context: PassContext
) -> tuple[list[Layer], int]:
    """Attach saved bytes and recompute cost per layer; returns them with the total."""
    saved = saved_activations(gm, context.example_inputs, context.state_storages)
    by_name = {n.name: n for n in gm.graph.nodes}
    measured = []
    for layer in layers:
        inside = set(layer.nodes)
        escaping = {n for n in layer.nodes if any(u.name not in inside for u in by_name[n].users)}
        internal = sum(saved.by_node.get(n, 0) for n in layer.nodes if n not in escaping)
        cost = sum(saved.node_cost.get(n, 0.0) for n in layer.nodes)
        measured.append(
            Layer(layer.index, layer.key, layer.nodes, layer.eligible, layer.reason, internal, cost)
        )
    return measured, saved.total_bytes


class RecomputationPass(OptimizationPass):
    """Trade forward recomputation in backward for activation memory."""

    def __init__(self, policy: EveryNth | MemoryBudget | None = None) -> None:
        self.policy = policy if policy is not None else MemoryBudget()
        self._context: PassContext | None = None

    name = "recompute"

    def bind(self, context: PassContext) -> None:
        self._context = context

    def plan(self, gm: fx.GraphModule) -> tuple[list[Layer], list[int], int]:
        layers = find_layers(gm)
        total = 0
        if self._context is not None:
            layers, total = _measure_layers(gm, layers, self._context)
        elif isinstance(self.policy, MemoryBudget):
            raise ValueError("the memory-budget policy needs example inputs (call bind())")
        return layers, self.policy.choose(layers, total), total

    def analyze(self, graph: fx.Graph) -> dict[str, Any]:
        layers, chosen, total = self.plan(owning_module(graph))
        budget = self.policy.fraction if isinstance(self.policy, MemoryBudget) else None
        # What checkpointing every recomputable layer would leave: a budget below it cannot
        # be met by this pass, and the report says so rather than only missing it.
        floor = total - sum(x.saved_bytes for x in layers if x.eligible and x.saved_bytes > 0)
        return {
            "opportunities": [asdict(x) for x in layers if x.index in chosen],
            "stats": {
                "policy": repr(self.policy),
                "layers": len(layers),
                "eligible": sum(x.eligible for x in layers),
                "checkpointed": len(chosen),
                "saved_bytes_before": total,
                "expected_saving_bytes": sum(x.saved_bytes for x in layers if x.index in chosen),
                "budget_fraction": budget,
                "least_saved_bytes": floor,
                "not_recomputable": {x.key: x.reason for x in layers if not x.eligible},
            },
            "safe": True,
        }

    def transform(self, graph: fx.Graph) -> fx.Graph:
        gm = owning_module(graph)
        layers, chosen, _ = self.plan(gm)
        for layer in layers:
            if layer.index in chosen:
                _wrap_in_checkpoint(gm, layer)
        graph.lint()
        return graph


def _wrap_in_checkpoint(gm: fx.GraphModule, layer: Layer) -> None:
    graph = gm.graph
    by_name = {n.name: n for n in graph.nodes}
    nodes = [by_name[n] for n in layer.nodes]
    inside = set(nodes)
    inputs: dict[fx.Node, None] = {}
    for node in nodes:
        for arg in node.all_input_nodes:
            if arg not in inside:
                inputs[arg] = None
    outputs = [n for n in nodes if any(u not in inside for u in n.users)]
    if not outputs:
        return

    sub = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    tensor_inputs = []
    for arg in inputs:
        if arg.op == "get_attr":
            env[arg] = sub.get_attr(str(arg.target))
        else:
            env[arg] = sub.placeholder(arg.name)
            tensor_inputs.append(arg)
    for node in nodes:
        env[node] = sub.node_copy(node, lambda a: env[a])
    result = env[outputs[0]] if len(outputs) == 1 else tuple(env[o] for o in outputs)
    sub.output(result)
    name = _free_name(gm, f"recompute_{re.sub(r'[^0-9A-Za-z_]', '_', layer.key)}")
    gm.add_submodule(name, fx.GraphModule(gm, sub, class_name="RecomputedLayer"))

    with graph.inserting_before(nodes[0]):
        segment = graph.get_attr(name)
        call = graph.call_function(
            torch.utils.checkpoint.checkpoint, (segment, *tensor_inputs), {"use_reentrant": False}
        )
        results = (
            [call]
            if len(outputs) == 1
            else [graph.call_function(operator.getitem, (call, i)) for i in range(len(outputs))]
        )
    for old, new in zip(outputs, results, strict=True):
        old.replace_all_uses_with(new, delete_user_cb=lambda user: user not in inside)
    for node in reversed(nodes):
        graph.erase_node(node)
    for arg in inputs:
        if arg.op == "get_attr" and not arg.users:
            graph.erase_node(arg)


def _free_name(gm: fx.GraphModule, base: str) -> str:
    name, i = base, 1
    while hasattr(gm, name):
        name, i = f"{base}_{i}", i + 1
    return name
