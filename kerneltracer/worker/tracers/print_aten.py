"""print_aten: the ATen-level graph(s) the model runs, forward and (train mode) backward.

Methods, tried in order until one yields graphs:

- ``aot``: Dynamo in front of ``aot_module_simplified`` with capturing forward / backward /
  inference compilers; the real step runs (backward too in train mode), so the graphs are
  exactly what AOTAutograd hands a backend: functionalized ATen, one set per graph break.
- ``export``: ``torch.export.export(strict=False).run_decompositions()``: one forward graph
  in core ATen IR (no backward: export captures the forward only).
- ``make_fx``: ``make_fx`` over the eager step; in train mode over forward + ``autograd.grad``
  of the loss, giving one joint graph.

The three alternatives are also registered as separate tracers in the ``print_aten``
exclusive group, so a worker that dies in one method (segfault, timeout) leaves the next
tracer to try the remaining ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from kerneltracer.core.artefacts import ArtefactKind, ArtefactPatterns
from kerneltracer.tracers.base import Tracer, TraceResult, TracerOptions
from kerneltracer.worker.tracers._graphs import (
    Capture,
    CapturedGraph,
    aten_ops,
    capture_graph,
    graph_artefacts,
    run_methods,
    write_capture,
)

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.huggingface import HFContext

log = logging.getLogger("kerneltracer.worker.tracers")

_AtenMethod = Literal["aot", "export", "make_fx"]

METHODS_DOC = {
    "aot": "Dynamo + aot_module_simplified with capturing fw/bw compilers (functionalized ATen)",
    "export": "torch.export.export(strict=False).run_decompositions(): core ATen, forward only",
    "make_fx": "make_fx over the eager step (train: forward + autograd.grad as one joint graph)",
}


class PrintAtenOptions(TracerOptions):
    methods: tuple[_AtenMethod, ...] = Field(
        ("aot", "export", "make_fx"),
        min_length=1,
        description="Capture methods, tried in order until one yields graphs",
    )
    extend_layers: bool = Field(
        True,
        description=(
            "aot: trace a deep model's stacks of alike layers (one, or an encoder and a "
            "decoder, a vision tower and the LM) at depths 2 and 3 and extend those graphs to "
            "full depth (checked per job, else every layer is traced); false traces every layer"
        ),
    )


class PrintAtenExportOptions(PrintAtenOptions):
    methods: tuple[_AtenMethod, ...] = Field(("export", "make_fx"), min_length=1)


class PrintAtenMakeFxOptions(PrintAtenOptions):
    methods: tuple[_AtenMethod, ...] = Field(("make_fx",), min_length=1)


class PrintAtenTracer(Tracer["HFContext"]):
    name: ClassVar[str] = "print_aten"
    version: ClassVar[str] = "1"
    frameworks: ClassVar[frozenset[str]] = frozenset({"huggingface"})
    # Graphs are of one forward; generate() is a Python loop of prefill + decode forwards.
    phases: ClassVar[frozenset[str]] = frozenset({"prefill", "decode"})
    exclusive_group: ClassVar[str | None] = "print_aten"
    fake_weights_refusal: ClassVar[str | None] = None
    parallel_refusal: ClassVar[str | None] = None
    real_ranks_refusal: ClassVar[str | None] = None
    summary: ClassVar[str] = (
        "ATen graph(s) via aot_module_simplified (fallbacks export, make_fx); text + JSON"
    )
    outputs_doc: ClassVar[str] = "graphs/graph_<i>.json, graphs/graph_<i>.txt, graphs/index.json"
    preload_modules: ClassVar[tuple[str, ...]] = (
        "functorch.compile",
        "torch._functorch.aot_autograd",
        "torch.export",
        "torch.func",
        "torch.fx.experimental.proxy_tensor",
        "kerneltracer.worker.tracers._compiler_errors",
        "kerneltracer.fx.graph_table",
    )
    artefacts: ClassVar[ArtefactPatterns] = graph_artefacts(ArtefactKind.ATEN_GRAPH)
    Options: ClassVar[type[TracerOptions]] = PrintAtenOptions

    def trace(self, ctx: HFContext) -> Capture:
        assert isinstance(self.options, PrintAtenOptions)
        extend = self.options.extend_layers
        note: dict[str, Any] = {}
        runners: dict[str, Callable[[HFContext], list[CapturedGraph]]] = {
            "aot": lambda c: _aot_graphs(c, note, repeat_layers=extend),
            "export": _export_graphs,
            "make_fx": _make_fx_graphs,
        }
        capture = run_methods([(m, _bind(runners[m], ctx)) for m in self.options.methods])
        capture.extra["backward_captured"] = any(
            g.kind in ("backward", "joint") for g in capture.graphs
        )
        capture.extra["aten_ops"] = aten_ops(capture.graphs)
        # Says which way the graphs were made: from depths 2 and 3, or every layer traced.
        capture.extra["layers_extended"] = capture.method == "aot" and note.get("extended", False)
        return capture

    def write(self, ctx: HFContext, traced: Any, job_dir: Path) -> TraceResult:
        outputs, summary = write_capture(traced, job_dir, METHODS_DOC)
        summary["aten_op_count"] = len(summary.pop("aten_ops"))
        return TraceResult(outputs=outputs, summary=summary)


class PrintAtenExportTracer(PrintAtenTracer):
    real_ranks_refusal: ClassVar[str | None] = "its variants have not been run on real ranks"
    name: ClassVar[str] = "print_aten_export"
    summary: ClassVar[str] = "ATen graph via torch.export + run_decompositions (print_aten group)"
    Options: ClassVar[type[TracerOptions]] = PrintAtenExportOptions


class PrintAtenMakeFxTracer(PrintAtenTracer):
    real_ranks_refusal: ClassVar[str | None] = "its variants have not been run on real ranks"
    name: ClassVar[str] = "print_aten_make_fx"
    summary: ClassVar[str] = "ATen graph via make_fx (print_aten group)"
    Options: ClassVar[type[TracerOptions]] = PrintAtenMakeFxOptions


def _bind(fn: Callable[[HFContext], list[CapturedGraph]], ctx: HFContext) -> Any:
    return lambda: fn(ctx)


def _aot_graphs(
    ctx: HFContext, note: dict[str, Any] | None = None, *, repeat_layers: bool = True
) -> list[CapturedGraph]:
    from kerneltracer.worker.tracers._layers import TRACE_DEPTH, NotRepeating, find_stacks

    stacks = find_stacks(ctx.model) if repeat_layers else None
    # The backward runs the layers last to first and names its first layer's nodes without
    # suffixes, as the forward does its layer 0: the alike pair it is extended from must lie
    # between the two, so train mode traces at depths 3 and 4.
    depth = TRACE_DEPTH + 1 if ctx.mode == "train" else TRACE_DEPTH
    if stacks is not None:
        # The same graphs at depths 2 and 3 from one Dynamo graph are the full depth's
        # graphs with the last layer repeated (see _layers); anything else traces all.
        kinds: list[list[str]] = []

        def trace() -> list[Any]:
            got = _aot_capture(ctx, keep=True)
            kinds.append([kind for kind, _, _ in got])
            if {frame for _, frame, _ in got} != {0} or kinds[0] != kinds[-1]:
                raise NotRepeating(f"graphs {kinds}, Dynamo frames {[f for _, f, _ in got]}")
            return [gm for _, _, gm in got]

        try:
            modules = stacks.extended(trace, depth)
        except NotRepeating as exc:
            log.info("print_aten traces every layer: %s", exc)
        else:
            if note is not None:
                note["extended"] = True
            return [
                capture_graph(gm, kind, f"graph_{i}", dynamo_graph=0)
                for i, (kind, gm) in enumerate(zip(kinds[-1], modules, strict=True))
            ]
    return [graph for _, _, graph in _aot_capture(ctx, keep=False)]


def _aot_capture(ctx: HFContext, *, keep: bool) -> list[tuple[str, int, Any]]:
    """(kind, Dynamo graph number, graph) per graph AOTAutograd hands the backend; the
    graph is the GraphModule itself if ``keep``, else captured at once (the module may
    not outlive the compile)."""
    import torch
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    graphs: list[tuple[str, int, Any]] = []
    frame = {"n": -1}

    def capturing(kind: str) -> Any:
        def compiler(gm: Any, example_inputs: Any) -> Any:
            n = frame["n"]
            graph = gm if keep else capture_graph(gm, kind, f"graph_{len(graphs)}", dynamo_graph=n)
            graphs.append((kind, n, graph))
            return make_boxed_func(gm.forward)

        return compiler

    def backend(gm: Any, example_inputs: Any) -> Any:
        frame["n"] += 1
        return aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=capturing("forward"),
            bw_compiler=capturing("backward"),
            inference_compiler=capturing("inference"),
        )

    torch._dynamo.reset()
    eager = ctx.model
    ctx.model = torch.compile(eager, backend=backend)
    try:
        ctx.step()
    finally:
        ctx.model = eager
        torch._dynamo.reset()
    return graphs


def _export_graphs(ctx: HFContext) -> list[CapturedGraph]:
    import torch

    grad = torch.enable_grad() if ctx.mode == "train" else torch.no_grad()
    with grad:
        program = torch.export.export(ctx.model, (), dict(ctx.example_inputs), strict=False)
        program = program.run_decompositions()
    return [capture_graph(program.graph_module, "forward", "graph_0")]


def _make_fx_graphs(ctx: HFContext) -> list[CapturedGraph]:
    import torch
    from torch.func import functional_call
    from torch.fx.experimental.proxy_tensor import make_fx

    from kerneltracer.worker.frameworks.huggingface import loss_of

    model, keys = ctx.model, list(ctx.example_inputs)
    values = [ctx.example_inputs[k] for k in keys]
    if ctx.mode == "eval":

        def forward(*args: Any) -> Any:
            return model(**dict(zip(keys, args, strict=True)))

        with torch.no_grad():
            gm = make_fx(forward)(*values)
        return [capture_graph(gm, "inference", "graph_0")]

    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = [dict(model.named_parameters())[n] for n in names]

    def train_step(*args: Any) -> Any:
        weights = dict(zip(names, args[: len(names)], strict=True))
        inputs = dict(zip(keys, args[len(names) :], strict=True))
        loss = loss_of(functional_call(model, weights, (), inputs))
        grads = torch.autograd.grad(loss, list(weights.values()), allow_unused=True)
        return loss, grads

    gm = make_fx(train_step)(*params, *values)
    return [capture_graph(gm, "joint", "graph_0")]
