"""Redundant-op elimination: common-subexpression elimination over pure nodes.

The planning lives in :mod:`kerneltracer.fx.cse` (torch-free, shared with the print_fx
analysis); this pass applies the plan to a live graph, and :func:`analyze` runs the same plan
on a stored node table (``graphs/graph_<i>.json``, format in :mod:`kerneltracer.fx.nodetable`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from torch import fx

from kerneltracer.fx.cse import Duplicate, plan_cse
from kerneltracer.fx.graph_table import node_views
from kerneltracer.fx.nodetable import NodeView, load_node_table, read_node_table
from kerneltracer.fx.passes.base import OptimizationPass, owning_module

_COMPUTE_OPS = frozenset({"call_function", "call_method", "call_module"})


@dataclass(frozen=True)
class GraphRedundancy:
    """The redundant computations of one graph."""

    graph: str | None
    nodes: int
    compute_nodes: int
    duplicates: tuple[Duplicate, ...]

    def by_target(self) -> dict[str, int]:
        return dict(Counter(d.target for d in self.duplicates).most_common())

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "nodes": self.nodes,
            "compute_nodes": self.compute_nodes,
            "redundant": len(self.duplicates),
            "by_target": self.by_target(),
            "duplicates": [asdict(d) for d in self.duplicates],
        }


def _summarise(graph: str | None, nodes: list[NodeView]) -> GraphRedundancy:
    return GraphRedundancy(
        graph=graph,
        nodes=len(nodes),
        compute_nodes=sum(1 for n in nodes if n.op in _COMPUTE_OPS),
        duplicates=tuple(plan_cse(nodes)),
    )


def analyze(table: Any, source: str = "<node table>") -> GraphRedundancy:
    """Redundant computations in a node table: parsed JSON, or a path to a JSON file."""
    if isinstance(table, Path):
        name, nodes = load_node_table(table)
        return _summarise(name or table.stem, nodes)
    name, nodes = read_node_table(table, source)
    return _summarise(name, nodes)


class RedundantOpElimination(OptimizationPass):
    """Replace every pure node that recomputes an earlier node's value by that node."""

    name = "redundant_ops"

    def analyze(self, graph: fx.Graph) -> dict[str, Any]:
        report = _summarise(None, node_views(owning_module(graph)))
        return {
            "opportunities": [asdict(d) for d in report.duplicates],
            "stats": {"redundant": len(report.duplicates), "by_target": report.by_target()},
            "safe": True,
        }

    def transform(self, graph: fx.Graph) -> fx.Graph:
        by_name = {n.name: n for n in graph.nodes}
        for dup in plan_cse(node_views(owning_module(graph))):
            node, keep = by_name[dup.node], by_name[dup.same_as]
            node.replace_all_uses_with(keep)
            graph.erase_node(node)
        graph.lint()
        return graph
