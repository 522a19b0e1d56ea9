"""The FX node table: a JSON form of one ``torch.fx`` graph, and its torch-free reader.

The print_fx tracer writes one file per captured graph, ``graphs/graph_<i>.json``; the FX
optimizer converts live graphs to the same form (:func:`kerneltracer.fx.graph_table.to_table`)
so that one CSE planner serves both. Expected format::

    {"format": "kerneltracer.fx-node-table/1",       # optional
     "graph": "graph_0",                              # optional display name
     "nodes": [                                       # in graph (topological) order
        {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
        {"name": "relu", "op": "call_function", "target": "torch.nn.functional.relu",
         "args": [{"node": "x"}], "kwargs": {"inplace": false}},
        {"name": "bn", "op": "call_module", "target": "bn1", "args": [{"node": "relu"}],
         "kwargs": {}, "module": {"type": "torch.nn.modules.batchnorm.BatchNorm2d",
                                  "training": true, "inplace": false,
                                  "tracks_running_stats": true}},
        {"name": "output", "op": "output", "target": "output",
         "args": [{"node": "bn"}], "kwargs": {}}]}

A bare JSON list of node objects is accepted too. ``op`` is one of torch.fx's node kinds.
``target`` is ``torch.fx.node._get_qualified_name(fn)`` for ``call_function`` (e.g.
``torch.ops.aten.add.Tensor``, ``_operator.add``), the method name for ``call_method``, the
dotted attribute path for ``call_module`` / ``get_attr``. Argument values: JSON scalars and
lists as themselves, a reference to another node as ``{"node": NAME}``, a dict as
``{"dict": {KEY: VALUE}}``, anything else (dtypes, devices, slices) as ``{"repr": TEXT}``.
``module`` is optional; a ``call_module`` node without it is treated as impure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltracer.errors import UsageError
from kerneltracer.fx.purity import Classification, ModuleInfo, classify
from kerneltracer.jsonio import loads

FORMAT = "kerneltracer.fx-node-table/1"
_NODE_OPS = frozenset(
    {"placeholder", "get_attr", "call_function", "call_method", "call_module", "output"}
)


@dataclass(frozen=True)
class NodeRef:
    name: str


@dataclass(frozen=True)
class NodeView:
    """One node with its arguments decoded: node references are :class:`NodeRef`."""

    name: str
    op: str
    target: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    module: ModuleInfo | None = None
    classification: Classification = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "classification",
            classify(self.op, self.target, self.args, self.kwargs, self.module),
        )

    def inputs(self) -> list[str]:
        """Names of the nodes this node reads, in argument order, without duplicates."""
        found: dict[str, None] = {}
        _collect_refs(self.args, found)
        _collect_refs(tuple(self.kwargs.values()), found)
        return list(found)

    def arg(self, where: int | str) -> Any:
        if isinstance(where, int):
            return self.args[where] if where < len(self.args) else None
        return self.kwargs.get(where)


def _collect_refs(value: Any, found: dict[str, None]) -> None:
    if isinstance(value, NodeRef):
        found[value.name] = None
    elif isinstance(value, tuple):
        for item in value:
            _collect_refs(item, found)
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect_refs(item, found)


def _decode_value(raw: Any) -> Any:
    """JSON argument value → Python value with :class:`NodeRef` for node references."""
    if isinstance(raw, list):
        return tuple(_decode_value(v) for v in raw)
    if isinstance(raw, dict):
        if set(raw) == {"node"} and isinstance(raw["node"], str):
            return NodeRef(raw["node"])
        if set(raw) == {"dict"} and isinstance(raw["dict"], dict):
            return {str(k): _decode_value(v) for k, v in raw["dict"].items()}
        if set(raw) == {"repr"}:
            return Repr(str(raw["repr"]))
        return Repr(repr(sorted(raw.items())))
    return raw


@dataclass(frozen=True)
class Repr:
    """An argument only known by its text (a dtype, a device, a slice)."""

    text: str


def read_node_table(data: Any, source: str = "<node table>") -> tuple[str | None, list[NodeView]]:
    """Decode a node table (already parsed JSON); returns (graph name, nodes in order)."""
    graph_name: str | None = None
    rows = data
    if isinstance(data, dict):
        graph_name = data.get("graph") if isinstance(data.get("graph"), str) else None
        rows = data.get("nodes")
    if not isinstance(rows, list):
        raise UsageError(f"{source}: expected a list of nodes or an object with 'nodes'")
    nodes: list[NodeView] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        node = _read_row(row, f"{source}: node {index}")
        if node.name in seen:
            raise UsageError(f"{source}: node name {node.name!r} appears twice")
        missing = [n for n in node.inputs() if n not in seen]
        if missing:
            raise UsageError(
                f"{source}: node {node.name!r} uses {missing[0]!r} before it is "
                "defined (nodes must be in graph order)"
            )
        seen.add(node.name)
        nodes.append(node)
    return graph_name, nodes


def load_node_table(path: Path) -> tuple[str | None, list[NodeView]]:
    try:
        data = loads(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read node table: {exc}") from exc
    return read_node_table(data, str(path))


def _read_row(row: Any, where: str) -> NodeView:
    if not isinstance(row, dict):
        raise UsageError(f"{where}: expected an object")
    name, op, target = row.get("name"), row.get("op"), row.get("target")
    if not isinstance(name, str) or not isinstance(target, str):
        raise UsageError(f"{where}: 'name' and 'target' must be strings")
    if op not in _NODE_OPS:
        raise UsageError(f"{where}: unknown op {op!r}; valid: {', '.join(sorted(_NODE_OPS))}")
    args = _decode_value(row.get("args", []))
    kwargs = _decode_value({"dict": row.get("kwargs") or {}})
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        raise UsageError(f"{where}: 'args' must be a list and 'kwargs' an object")
    return NodeView(name, op, target, args, kwargs, _read_module(row.get("module"), where))


def _read_module(raw: Any, where: str) -> ModuleInfo | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise UsageError(f"{where}: 'module' must be an object with a string 'type'")
    return ModuleInfo(
        type=raw["type"],
        training=bool(raw.get("training", False)),
        inplace=bool(raw.get("inplace", False)),
        tracks_running_stats=bool(raw.get("tracks_running_stats", False)),
    )
