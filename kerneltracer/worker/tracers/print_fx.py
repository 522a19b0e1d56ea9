"""print_fx: the Dynamo FX graph(s) of the model's forward, one per graph break.

Method ``dynamo``: ``torch._dynamo.explain`` runs the forward under Dynamo with a capturing
backend and reports the graphs with each break's reason and user location. Fallback
``export``: ``torch.export.export`` (non-strict) when Dynamo cannot capture at all; its graph
is already ATen-level (export IR), which the summary says.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from kerneltracer.core.artefacts import ArtefactKind, ArtefactPatterns
from kerneltracer.tracers.base import Tracer, TraceResult, TracerOptions
from kerneltracer.worker.tracers._graphs import (
    Capture,
    CapturedGraph,
    capture_graph,
    graph_artefacts,
    run_methods,
    write_capture,
)

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.huggingface import HFContext

log = logging.getLogger("kerneltracer.worker.tracers")

_FxMethod = Literal["dynamo", "export"]

METHODS_DOC = {
    "dynamo": "torch._dynamo.explain: Dynamo FX graphs (torch-level), one per graph break",
    "export": "torch.export.export(strict=False): one whole-model graph in export (ATen) IR",
}


class PrintFxOptions(TracerOptions):
    methods: tuple[_FxMethod, ...] = Field(
        ("dynamo", "export"),
        min_length=1,
        description="Capture methods, tried in order until one yields graphs",
    )
    extend_layers: bool = Field(
        True,
        description=(
            "dynamo: trace a deep model's stacks of alike layers (one, or an encoder and a "
            "decoder, a vision tower and the LM) at depths 2 and 3 and extend that graph to "
            "full depth (checked per job, else every layer is traced); false traces every layer"
        ),
    )


class PrintFxTracer(Tracer["HFContext"]):
    name: ClassVar[str] = "print_fx"
    version: ClassVar[str] = "1"
    frameworks: ClassVar[frozenset[str]] = frozenset({"huggingface"})
    # Graphs are of one forward; generate() is a Python loop of prefill + decode forwards.
    phases: ClassVar[frozenset[str]] = frozenset({"prefill", "decode"})
    fake_weights_refusal: ClassVar[str | None] = None
    parallel_refusal: ClassVar[str | None] = None
    real_ranks_refusal: ClassVar[str | None] = None
    summary: ClassVar[str] = "Dynamo FX graph(s), one per graph break, as text + JSON node table"
    outputs_doc: ClassVar[str] = "graphs/graph_<i>.json, graphs/graph_<i>.txt, graphs/index.json"
    preload_modules: ClassVar[tuple[str, ...]] = (
        "torch._dynamo.utils",
        # explain's capturing backend: half a second of imports (functorch, AOTAutograd's
        # partitioner, networkx) that every print_fx job paid after the fork.
        "torch._dynamo.backends.debugging",
        "kerneltracer.worker.tracers._compiler_errors",
        "kerneltracer.fx.graph_table",
    )
    artefacts: ClassVar[ArtefactPatterns] = graph_artefacts(ArtefactKind.FX_GRAPH)
    Options: ClassVar[type[TracerOptions]] = PrintFxOptions

    def trace(self, ctx: HFContext) -> Capture:
        assert isinstance(self.options, PrintFxOptions)
        extend = self.options.extend_layers
        runners = {
            "dynamo": lambda c, h: _dynamo_graphs(c, h, repeat_layers=extend),
            "export": _export_graphs,
        }
        holder: dict[str, Any] = {}
        # Dynamo and export call the model themselves, outside ctx.step.
        with ctx.values_read():
            capture = run_methods(
                [(m, _bind(runners[m], ctx, holder)) for m in self.options.methods]
            )
        breaks = holder.get("breaks", [])
        capture.extra.update(
            # Says which way the graph was made: from depths 2 and 3, or every layer traced.
            layers_extended=capture.method == "dynamo" and holder.get("extended", False),
            graph_break_count=len(breaks),
            graph_breaks=breaks,
            graph_break_reasons=holder.get("reasons", []),
        )
        return capture

    def write(self, ctx: HFContext, traced: Any, job_dir: Path) -> TraceResult:
        outputs, summary = write_capture(traced, job_dir, METHODS_DOC)
        return TraceResult(outputs=outputs, summary=summary)


def _bind(fn: Any, ctx: HFContext, holder: dict[str, Any]) -> Any:
    return lambda: fn(ctx, holder)


def _grad_mode(ctx: HFContext) -> Any:
    import torch

    return torch.enable_grad() if ctx.mode == "train" else torch.no_grad()


def _dynamo_graphs(
    ctx: HFContext, extra: dict[str, Any], *, repeat_layers: bool = True
) -> list[CapturedGraph]:
    from kerneltracer.worker.tracers._layers import NotRepeating, find_stacks

    stacks = find_stacks(ctx.model) if repeat_layers else None
    if stacks is not None:
        # One graph without breaks at depths 2 and 3 is the full depth's one graph with
        # its last layer repeated (see _layers); anything else traces every layer.
        try:
            (gm,) = stacks.extended(lambda: _unbroken_graph(ctx))
        except NotRepeating as exc:
            log.info("print_fx traces every layer: %s", exc)
        else:
            extra["breaks"], extra["reasons"], extra["extended"] = [], [], True
            return [capture_graph(gm, "dynamo", "graph_0", ops=len(gm.graph.nodes))]
    explained, reasons = _explain(ctx)
    extra["breaks"] = [_break_row(r) for r in explained.break_reasons]
    extra["reasons"] = reasons
    return [
        capture_graph(gm, "dynamo", f"graph_{i}", ops=len(gm.graph.nodes))
        for i, gm in enumerate(explained.graphs)
    ]


def _explain(ctx: HFContext) -> tuple[Any, list[dict[str, Any]]]:
    """explain's result and the graph-break reasons Dynamo counted."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    try:
        with _grad_mode(ctx):
            explained = torch._dynamo.explain(ctx.model)(**ctx.example_inputs)
        # explain lists only breaks that split a graph; the counters also hold those met in
        # resumed frames with nothing left to capture (a print right after an .item()).
        reasons = [
            {"reason": _first_line(r), "count": int(n)}
            for r, n in counters.get("graph_break", {}).items()
        ]
    finally:
        torch._dynamo.reset()
    return explained, reasons


def _unbroken_graph(ctx: HFContext) -> list[Any]:
    from kerneltracer.worker.tracers._layers import NotRepeating

    explained, reasons = _explain(ctx)
    if len(explained.graphs) != 1 or explained.break_reasons or reasons:
        raise NotRepeating(f"{len(explained.graphs)} graph(s), {len(reasons)} break reason(s)")
    return list(explained.graphs)


def _break_row(reason: Any) -> dict[str, Any]:
    stack = list(getattr(reason, "user_stack", None) or [])
    where = f"{stack[-1].filename}:{stack[-1].lineno}" if stack else None
    return {"reason": _first_line(str(getattr(reason, "reason", reason))), "where": where}


def _first_line(text: str) -> str:
    from kerneltracer.worker.tracers._compiler_errors import graph_break_line

    return graph_break_line(text)


def _export_graphs(ctx: HFContext, extra: dict[str, Any]) -> list[CapturedGraph]:
    import torch

    with _grad_mode(ctx):
        program = torch.export.export(ctx.model, (), dict(ctx.example_inputs), strict=False)
    extra["breaks"], extra["reasons"] = [], []
    return [capture_graph(program.graph_module, "export", "graph_0")]
