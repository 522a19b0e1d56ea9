"""Live ``torch.fx`` graph → node table (the JSON form described in :mod:`.nodetable`).

The print_fx tracer can call :func:`to_table` to write ``graphs/graph_<i>.json``; the
redundant-ops pass uses it so that live graphs and stored tables go through one planner.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import fx
from torch.fx.node import _get_qualified_name

from kerneltracer.fx.nodetable import FORMAT, NodeView, read_node_table


def _target_name(node: fx.Node) -> str:
    if node.op == "call_function":
        try:
            return str(_get_qualified_name(node.target))  # type: ignore[arg-type]
        except (RuntimeError, AttributeError, TypeError):
            # Lambdas and bound builtins have no importable name: they classify as unknown.
            return f"<unnamed>.{getattr(node.target, '__name__', repr(node.target))}"
    return str(node.target)


def _encode_value(value: Any) -> Any:
    if isinstance(value, fx.Node):
        return {"node": value.name}
    if isinstance(value, list | tuple):
        return [_encode_value(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): _encode_value(v) for k, v in value.items()}}
    if isinstance(value, float) and not math.isfinite(value):
        return {"repr": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return {"repr": repr(value)}


def _module_row(root: torch.nn.Module | None, path: str) -> dict[str, Any] | None:
    if root is None:
        return None
    try:
        module = root.get_submodule(path)
    except AttributeError:
        return None
    cls = type(module)
    return {
        "type": f"{cls.__module__}.{cls.__qualname__}",
        "training": bool(module.training),
        "inplace": getattr(module, "inplace", False) is True,
        "tracks_running_stats": getattr(module, "track_running_stats", False) is True,
    }


def to_table(
    graph: fx.Graph, root: torch.nn.Module | None = None, name: str | None = None
) -> dict[str, Any]:
    """Serialisable node table; ``root`` owns the ``call_module`` targets (for their types)."""
    rows: list[dict[str, Any]] = []
    for node in graph.nodes:
        row: dict[str, Any] = {
            "name": node.name,
            "op": node.op,
            "target": _target_name(node),
            "args": _encode_value(node.args),
            "kwargs": {str(k): _encode_value(v) for k, v in node.kwargs.items()},
        }
        if node.op == "call_module":
            module = _module_row(root, str(node.target))
            if module is not None:
                row["module"] = module
        rows.append(row)
    table: dict[str, Any] = {"format": FORMAT, "nodes": rows}
    if name is not None:
        table["graph"] = name
    return table


def node_views(gm: fx.GraphModule) -> list[NodeView]:
    return read_node_table(to_table(gm.graph, gm), "<live graph>")[1]
