"""Common-subexpression planning over a node table: which nodes recompute an earlier value.

Torch-free; works on :class:`~kerneltracer.fx.nodetable.NodeView` lists, so the live FX pass
and the analysis of print_fx's JSON graphs find exactly the same duplicates.

Two nodes are the same computation when they have the same op kind, target, arguments and
keyword arguments, where node arguments compare by identity *and* by version: every in-place
write bumps the version of the written tensor's alias class (a tensor and its views), so
``relu(x); x.add_(1); relu(x)`` keeps both relus. Nodes with unknown side effects bump a
global epoch that is part of every key. A node whose own alias class is written to later is
never merged either: it would hand the mutation to the other users.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kerneltracer.fx.nodetable import NodeRef, NodeView, Repr
from kerneltracer.fx.purity import Effect, op_name

_CSE_OPS = frozenset({"call_function", "call_method", "call_module", "get_attr"})

# Ops whose result may share storage with their first tensor argument.
_VIEW_LIKE = frozenset(
    {
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "transpose",
        "permute",
        "t",
        "T",
        "mT",
        "expand",
        "expand_as",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "narrow",
        "select",
        "slice",
        "as_strided",
        "getitem",
        "detach",
        "contiguous",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "diagonal",
        "alias",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "unfold",
        "real",
        "imag",
        "_unsafe_view",
        "_reshape_alias",
        "to",
        "type_as",
        "float",
        "half",
        "double",
        "bfloat16",
        "int",
        "long",
        "type",
        "lift_fresh",
        "view_as_real",
        "view_as_complex",
        "dropout",
        "identity",
    }
)
_VIEW_MODULES = frozenset(
    {"Identity", "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d"}
)


@dataclass(frozen=True)
class Duplicate:
    """``node`` computes the same value as the earlier ``same_as``."""

    node: str
    same_as: str
    op: str
    target: str


class _Aliases:
    """Union-find over node names: one class per group of tensors that may share storage."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        parent = self._parent.setdefault(name, name)
        while parent != name:
            grand = self._parent.setdefault(parent, parent)
            self._parent[name] = grand
            name, parent = parent, grand
        return name

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._parent[rb] = ra


def _refs(value: Any) -> list[str]:
    if isinstance(value, NodeRef):
        return [value.name]
    if isinstance(value, tuple):
        return [r for item in value for r in _refs(item)]
    if isinstance(value, Mapping):
        return [r for item in value.values() for r in _refs(item)]
    return []


def _is_view_like(node: NodeView) -> bool:
    if node.op == "call_module":
        return node.module is not None and node.module.type.rsplit(".", 1)[-1] in _VIEW_MODULES
    name = node.target if node.op == "call_method" else op_name(node.target)[1]
    return name in _VIEW_LIKE


def _mutated_refs(node: NodeView) -> list[str]:
    return [r for where in node.classification.mutates for r in _refs(node.arg(where))]


def _build_aliases(nodes: Sequence[NodeView]) -> tuple[_Aliases, set[str]]:
    aliases = _Aliases()
    for node in nodes:
        if node.op == "output":
            continue
        if _is_view_like(node):
            for ref in node.inputs()[:1]:
                aliases.union(ref, node.name)
        for ref in _mutated_refs(node):
            # An in-place op returns the tensor it wrote into.
            aliases.union(ref, node.name)
    mutated = {aliases.find(r) for node in nodes for r in _mutated_refs(node)}
    return aliases, mutated


def plan_cse(nodes: Sequence[NodeView]) -> list[Duplicate]:
    """Return the nodes that can be replaced by an earlier identical node, in graph order."""
    aliases, mutated = _build_aliases(nodes)
    versions: dict[str, int] = {}
    replaced: dict[str, str] = {}
    seen: dict[tuple[Any, ...], str] = {}
    duplicates: list[Duplicate] = []
    epoch = 0

    def freeze(value: Any) -> Any:
        if isinstance(value, NodeRef):
            name = replaced.get(value.name, value.name)
            return ("n", name, versions.get(aliases.find(name), 0))
        if isinstance(value, bool):
            return ("b", value)
        if isinstance(value, int):
            return ("i", value)
        if isinstance(value, float):
            return ("f", repr(value) if math.isnan(value) else value)
        if isinstance(value, str):
            return ("s", value)
        if value is None:
            return ("none",)
        if isinstance(value, tuple):
            return ("t", tuple(freeze(v) for v in value))
        if isinstance(value, Mapping):
            return ("d", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
        if isinstance(value, Repr):
            return ("r", value.text)
        return ("r", repr(value))

    for node in nodes:
        effect = node.classification.effect
        if effect is Effect.MUTATING:
            for ref in _mutated_refs(node):
                root = aliases.find(replaced.get(ref, ref))
                versions[root] = versions.get(root, 0) + 1
            continue
        if effect is Effect.STATEFUL and node.op in _CSE_OPS:
            epoch += 1
            continue
        if effect is not Effect.PURE or node.op not in _CSE_OPS:
            continue
        if aliases.find(node.name) in mutated:
            continue
        key = (node.op, node.target, freeze(node.args), freeze(node.kwargs), epoch)
        first = seen.get(key)
        if first is None:
            seen[key] = node.name
            continue
        replaced[node.name] = first
        duplicates.append(Duplicate(node.name, first, node.op, node.target))
    return duplicates
