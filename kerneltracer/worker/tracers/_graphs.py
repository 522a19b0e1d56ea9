"""Shared by the graph tracers: captured graphs, their two written forms, method fallbacks.

A graph is written as ``graphs/graph_<i>.json`` (the FX node table of
:mod:`kerneltracer.fx.nodetable`, each node row extended with ``shape``/``dtype`` read from
``meta['val']`` or ``meta['example_value']``) and ``graphs/graph_<i>.txt`` (the readable
``GraphModule`` code). ``graphs/index.json`` says what each graph is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltracer.core import artefacts
from kerneltracer.core.artefacts import ArtefactKind, ArtefactPatterns
from kerneltracer.jsonio import atomic_write_json, atomic_write_text

log = logging.getLogger("kerneltracer.worker.tracers")

GRAPHS_DIR = artefacts.GRAPHS_DIR
_INDEX_FILE = artefacts.GRAPH_INDEX_FILE


def graph_artefacts(kind: ArtefactKind) -> ArtefactPatterns:
    """What a graph tracer writes; ``kind`` says whether its graphs are torch- or ATen-level."""
    return {
        _INDEX_FILE: ArtefactKind.GRAPH_INDEX,
        f"{GRAPHS_DIR}/graph_*.json": kind,
        f"{GRAPHS_DIR}/graph_*.txt": ArtefactKind.GRAPH_TEXT,
    }


class GraphCaptureError(RuntimeError):
    """Every capture method failed; the message lists each method's root cause, and
    ``causes`` holds their exceptions (a fake-weight run reads them: a value read by every
    method makes the job ``unsupported``)."""

    def __init__(self, message: str, causes: Sequence[BaseException] = ()) -> None:
        super().__init__(message)
        self.causes = list(causes)


@dataclass
class CapturedGraph:
    """One graph as captured, turned into serialisable form at once (the module may die)."""

    kind: str  # "dynamo", "forward", "backward", "inference", "joint"
    table: dict[str, Any]
    text: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Attempt:
    method: str
    ok: bool
    error: str | None = None
    seconds: float = 0.0


@dataclass
class Capture:
    """What a graph tracer returns from ``trace``: the graphs and how they were obtained."""

    method: str
    graphs: list[CapturedGraph]
    attempts: list[Attempt]
    extra: dict[str, Any] = field(default_factory=dict)


def capture_graph(gm: Any, kind: str, name: str, **info: Any) -> CapturedGraph:
    from kerneltracer.fx.graph_table import to_table

    table = to_table(gm.graph, gm, name)
    metas = {node.name: node.meta for node in gm.graph.nodes}
    for row in table["nodes"]:
        row.update(tensor_meta(metas.get(row["name"], {})))
    try:
        text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    except TypeError:  # older signature without the include_* flags
        text = gm.print_readable(print_output=False)
    return CapturedGraph(kind=kind, table=table, text=text, info=info)


def tensor_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """``shape``/``dtype`` of a node's value (lists of them for tuple outputs); {} if none."""
    value = meta.get("val", meta.get("example_value"))
    if value is None:
        return {}
    if isinstance(value, list | tuple):
        parts = [_one_meta(v) for v in value]
        if not any(parts):
            return {}
        return {"shape": [p.get("shape") for p in parts], "dtype": [p.get("dtype") for p in parts]}
    return _one_meta(value)


def _one_meta(value: Any) -> dict[str, Any]:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        if isinstance(value, bool | int | float) or type(value).__name__.startswith("Sym"):
            return {"shape": [], "dtype": type(value).__name__.lower()}
        return {}
    return {"shape": [_dim(d) for d in shape], "dtype": str(dtype).removeprefix("torch.")}


def _dim(d: Any) -> int | str:
    try:
        return int(d)
    except (TypeError, ValueError):
        return str(d)  # a symbolic size (dynamic shapes)


def aten_ops(graphs: Sequence[CapturedGraph]) -> list[str]:
    """Distinct ``torch.ops`` targets over the graphs, as ``aten.mm.default`` style names."""
    ops: set[str] = set()
    for g in graphs:
        for row in g.table["nodes"]:
            target = row["target"]
            if row["op"] == "call_function" and target.startswith("torch.ops."):
                ops.add(target.removeprefix("torch.ops."))
    return sorted(ops)


def run_methods(
    methods: Sequence[tuple[str, Callable[[], list[CapturedGraph]]]],
) -> Capture:
    """Try each method in order; the first that yields graphs wins, failures are recorded."""
    import time

    from kerneltracer.errors import KernelTracerError
    from kerneltracer.worker.tracers._compiler_errors import root_cause_line

    attempts: list[Attempt] = []
    causes: list[BaseException] = []
    for method, run in methods:
        t0 = time.monotonic()
        try:
            graphs = run()
        except (MemoryError, KeyboardInterrupt, KernelTracerError):
            raise
        except Exception as exc:
            log.warning("capture method %s failed", method, exc_info=exc)
            attempts.append(Attempt(method, False, root_cause_line(exc), time.monotonic() - t0))
            causes.append(exc)
            continue
        if not graphs:
            attempts.append(Attempt(method, False, "no graph captured", time.monotonic() - t0))
            continue
        attempts.append(Attempt(method, True, None, round(time.monotonic() - t0, 3)))
        return Capture(method=method, graphs=graphs, attempts=attempts)
    # Each line shortened so every method shows in the status' one-line reason.
    detail = "; ".join(f"{a.method}: {_shorten(a.error or '', 160)}" for a in attempts)
    # Not chained: the worker reports the innermost explicit cause, and this line already
    # holds every method's root cause (each traceback is in worker.log).
    raise GraphCaptureError(f"every capture method failed: {detail}", causes)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def write_capture(
    capture: Capture, job_dir: Path, methods_doc: dict[str, str]
) -> tuple[list[str], dict[str, Any]]:
    """Write the graphs and their index; returns (outputs, summary)."""
    outputs: list[str] = []
    index: list[dict[str, Any]] = []
    for i, graph in enumerate(capture.graphs):
        stem = f"{GRAPHS_DIR}/graph_{i}"
        atomic_write_json(job_dir / f"{stem}.json", graph.table)
        atomic_write_text(job_dir / f"{stem}.txt", graph.text)
        outputs += [f"{stem}.json", f"{stem}.txt"]
        nodes = graph.table["nodes"]
        index.append(
            {
                "graph": i,
                "kind": graph.kind,
                "nodes": len(nodes),
                "call_nodes": sum(1 for n in nodes if n["op"].startswith("call_")),
                "files": [f"{stem}.json", f"{stem}.txt"],
                **graph.info,
            }
        )
    attempts = [
        {"method": a.method, "ok": a.ok, "error": a.error, "seconds": round(a.seconds, 3)}
        for a in capture.attempts
    ]
    failed_before = [a for a in attempts if not a["ok"]]
    summary: dict[str, Any] = {
        "method": capture.method,
        "method_detail": methods_doc.get(capture.method, ""),
        "graph_count": len(capture.graphs),
        "graph_kinds": [g.kind for g in capture.graphs],
        "earlier_methods_failed": {a["method"]: a["error"] for a in failed_before},
        **capture.extra,
    }
    atomic_write_json(job_dir / _INDEX_FILE, {**summary, "attempts": attempts, "graphs": index})
    outputs.append(_INDEX_FILE)
    return outputs, summary
