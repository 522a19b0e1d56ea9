"""The benchmark: original vs optimised graph size, activation memory and step time.

Memory on CPU is the activation bytes autograd holds for backward after one forward pass
(:func:`kerneltracer.fx.measure.saved_activations`); on CUDA the peak allocated memory over
a forward + backward is reported as well. Time is a train step (forward + backward, where
recomputation costs), median over interleaved runs.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.utils.checkpoint
from torch import fx

from kerneltracer.fx.measure import (
    TimeStats,
    cuda_peak_bytes,
    saved_activations,
    tensor_leaves,
    time_train_steps,
)

_MB = 1024 * 1024


@dataclass(frozen=True)
class PassRecord:
    """What one applied pass did: node counts before/after, its analysis, its verification."""

    name: str
    nodes_before: int
    nodes_after: int
    compute_before: int
    compute_after: int
    stats: dict[str, Any] = field(default_factory=dict)
    verification: str = ""


@dataclass(frozen=True)
class GraphMetrics:
    """Node counts; nodes inside checkpointed layers count as if they were inline."""

    total_nodes: int
    compute_nodes: int
    op_counts: dict[str, int]
    recomputed_nodes: int = 0


def _is_checkpoint(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.utils.checkpoint.checkpoint


def _flat_ops(gm: fx.GraphModule, nested: bool = False) -> tuple[Counter[str], int]:
    ops: Counter[str] = Counter()
    recomputed = 0
    for node in gm.graph.nodes:
        if _is_checkpoint(node):
            inner, _ = _flat_ops(getattr(gm, str(node.args[0].target)), nested=True)
            ops.update(inner)
            recomputed += sum(inner[k] for k in _COMPUTE)
            continue
        # Plumbing of extracted layers is not model computation: the layer's placeholders and
        # output, the get_attr of the layer module, getitem on its results.
        if nested and node.op in ("placeholder", "output"):
            continue
        if node.users and all(_is_checkpoint(u) and u.args[0] is node for u in node.users):
            continue
        if node.target is operator.getitem and _is_checkpoint(node.args[0]):
            continue
        ops[node.op] += 1
    return ops, recomputed


_COMPUTE = ("call_function", "call_method", "call_module")


def _graph_metrics(gm: fx.GraphModule) -> GraphMetrics:
    ops, recomputed = _flat_ops(gm)
    return GraphMetrics(
        sum(ops.values()), sum(ops[k] for k in _COMPUTE), dict(sorted(ops.items())), recomputed
    )


@dataclass(frozen=True)
class BenchmarkReport:
    model: str
    input_shapes: list[list[int]]
    device: str
    trace_method: str
    passes: list[PassRecord]
    graph_original: GraphMetrics
    graph_optimized: GraphMetrics
    saved_bytes_original: int
    saved_bytes_optimized: int
    time_original: TimeStats
    time_optimized: TimeStats
    cuda_peak_original: int | None = None
    cuda_peak_optimized: int | None = None

    @property
    def node_reduction_pct(self) -> float:
        return _pct(self.graph_original.total_nodes, self.graph_optimized.total_nodes)

    @property
    def memory_reduction_pct(self) -> float:
        return _pct(self.saved_bytes_original, self.saved_bytes_optimized)

    @property
    def time_overhead_pct(self) -> float:
        return -_pct(self.time_original.median_ms, self.time_optimized.median_ms)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            node_reduction_pct=self.node_reduction_pct,
            memory_reduction_pct=self.memory_reduction_pct,
            time_overhead_pct=self.time_overhead_pct,
        )
        return data

    def format_text(self) -> str:
        shapes = ", ".join(str(tuple(s)) for s in self.input_shapes)
        lines = [
            f"Model: {self.model}",
            f"Input: {shapes}",
            f"Device: {self.device} (traced with {self.trace_method})",
            "",
            "PASSES:",
        ]
        lines += [
            f"  {p.name}: {p.nodes_before} -> {p.nodes_after} nodes; {_pass_note(p)}"
            for p in self.passes
        ] or ["  (none)"]
        lines += [
            "",
            "GRAPH STATISTICS:",
            f"  Original nodes: {self.graph_original.total_nodes}"
            f" ({self.graph_original.compute_nodes} compute)",
            f"  Optimized nodes: {self.graph_optimized.total_nodes}"
            f" ({self.graph_optimized.compute_nodes} compute,"
            f" {self.graph_optimized.recomputed_nodes} recomputed in backward)",
            f"  Reduction: {self.node_reduction_pct:.1f}%",
            "",
        ]
        lines += self._memory_lines()
        t0, t1 = self.time_original, self.time_optimized
        overhead = self.time_overhead_pct
        lines += [
            "",
            f"TIME (train step fwd+bwd, median over {t0.runs} runs):",
            f"  Original: {t0.median_ms:.2f} ms ± {t0.std_ms:.2f} ms",
            f"  Optimized: {t1.median_ms:.2f} ms ± {t1.std_ms:.2f} ms",
            f"  Overhead: {overhead:+.1f}%{self._verdict(overhead)}",
        ]
        return "\n".join(lines)

    def _memory_lines(self) -> list[str]:
        mark = " ✅" if self.memory_reduction_pct >= 30 else ""
        lines = [
            "MEMORY (activations saved for backward):",
            f"  Original: {self.saved_bytes_original / _MB:.2f} MB",
            f"  Optimized: {self.saved_bytes_optimized / _MB:.2f} MB",
            f"  Reduction: {self.memory_reduction_pct:.1f}%{mark}",
            *self._budget_lines(),
        ]
        before, after = self.cuda_peak_original, self.cuda_peak_optimized
        if before is not None and after is not None:
            lines += [
                "MEMORY (CUDA peak over fwd+bwd):",
                f"  Original: {before / _MB:.2f} MB",
                f"  Optimized: {after / _MB:.2f} MB",
                f"  Reduction: {_pct(before, after):.1f}%",
            ]
        return lines

    def _budget_lines(self) -> list[str]:
        budgets = [p.stats for p in self.passes if p.stats.get("budget_fraction") is not None]
        if not budgets:
            return []
        stats = budgets[-1]
        fraction = float(stats["budget_fraction"])
        limit = fraction * self.saved_bytes_original
        line = f"  Budget: {fraction * 100:g}% of original ({limit / _MB:.2f} MB): "
        if self.saved_bytes_optimized <= limit:
            return [line + "met"]
        before = stats.get("saved_bytes_before") or 0
        least = stats.get("least_saved_bytes")
        if before and least is not None and least > fraction * before:
            # The pass's own measurement says no choice of layers reaches it.
            return [
                line + "not met, out of reach: checkpointing every recomputable layer "
                f"leaves {least / before:.0%}"
            ]
        return [line + "not met"]

    def _verdict(self, overhead: float) -> str:
        saved = self.memory_reduction_pct
        if saved >= 1 and overhead > 0:
            return f" (for {saved:.0f}% less activation memory)"
        return ""


def _pass_note(record: PassRecord) -> str:
    stats = record.stats
    if record.name == "recompute":
        return (
            f"checkpointed {stats.get('checkpointed', 0)} of {stats.get('layers', 0)} layers"
            f" ({stats.get('eligible', 0)} recomputable); {record.verification}"
        )
    if record.name == "redundant_ops":
        return f"removed {stats.get('redundant', 0)} redundant ops; {record.verification}"
    return record.verification


def _pct(before: float, after: float) -> float:
    return (before - after) / before * 100 if before else 0.0


def run_benchmark(
    model_name: str,
    original: fx.GraphModule,
    optimized: fx.GraphModule,
    inputs: tuple[Any, ...],
    device: torch.device,
    state: frozenset[int],
    runs: int,
    warmup: int,
    passes: Sequence[PassRecord],
    trace_method: str,
) -> BenchmarkReport:
    times = time_train_steps([original, optimized], inputs, device, runs, warmup)
    peaks: list[int | None] = [None, None]
    if device.type == "cuda":
        peaks = [cuda_peak_bytes(m, inputs, device) for m in (original, optimized)]
    return BenchmarkReport(
        model=model_name,
        input_shapes=[list(t.shape) for t in tensor_leaves(inputs)],
        device=str(device),
        trace_method=trace_method,
        passes=list(passes),
        graph_original=_graph_metrics(original),
        graph_optimized=_graph_metrics(optimized),
        saved_bytes_original=saved_activations(original, inputs, state).total_bytes,
        saved_bytes_optimized=saved_activations(optimized, inputs, state).total_bytes,
        time_original=times[0],
        time_optimized=times[1],
        cuda_peak_original=peaks[0],
        cuda_peak_optimized=peaks[1],
    )
