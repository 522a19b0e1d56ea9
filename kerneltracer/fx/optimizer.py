"""``GraphOptimizer``: trace a model, apply passes with mandatory verification, benchmark.

Every pass runs on a copy of the current graph module (sharing the model's parameters and
buffers); the copy replaces the current module only once its outputs and gradients match
the original model. A failing pass leaves the optimizer exactly as before and raises
:class:`~kerneltracer.errors.VerificationError` naming the pass.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import fx

from kerneltracer.errors import UsageError, VerificationError
from kerneltracer.fx.measure import state_storages
from kerneltracer.fx.passes.base import OptimizationPass, PassContext, count_ops
from kerneltracer.fx.passes.recompute import MemoryBudget, RecomputationPass
from kerneltracer.fx.passes.registry import resolve
from kerneltracer.fx.report import BenchmarkReport, PassRecord, run_benchmark
from kerneltracer.fx.tracing import trace
from kerneltracer.fx.verify import compare


def _move(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple | list):
        return type(value)(_move(v, device) for v in value)
    return value


def clone_module(gm: fx.GraphModule) -> fx.GraphModule:
    """Deep copy of the graph and module tree that still shares parameters and buffers."""
    memo: dict[int, Any] = {id(t): t for t in (*gm.parameters(), *gm.buffers())}
    with warnings.catch_warnings():
        # Exported modules carry pytree specs whose copy trips a torch-internal deprecation.
        warnings.simplefilter("ignore", FutureWarning)
        return copy.deepcopy(gm, memo)


class GraphOptimizer:
    """Main entry point: ``GraphOptimizer(model, example_inputs=...).optimize([...])``."""

    def __init__(
        self,
        model: torch.nn.Module,
        device: str = "cpu",
        example_inputs: Sequence[Any] | None = None,
        rtol: float = 1e-5,
        atol: float = 1e-6,
    ) -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.example_inputs: tuple[Any, ...] | None = (
            None if example_inputs is None else _move(tuple(example_inputs), self.device)
        )
        self.rtol, self.atol = rtol, atol
        self.trace_method = ""
        self._original: fx.GraphModule | None = None
        self._current: fx.GraphModule | None = None
        self.history: list[PassRecord] = []

    def _inputs(self, override: Sequence[Any] | None = None) -> tuple[Any, ...]:
        if override is not None:
            return _move(tuple(override), self.device)
        if self.example_inputs is None:
            raise UsageError("verification needs example inputs: pass example_inputs=(...)")
        return self.example_inputs

    @property
    def original(self) -> fx.GraphModule:
        if self._original is None:
            traced = trace(self.model, self._inputs())
            self._original, self.trace_method = traced.module, traced.method
        return self._original

    @property
    def optimized(self) -> fx.GraphModule:
        if self._current is None:
            self._current = clone_module(self.original)
        return self._current

    def optimize(self, passes: Sequence[str | OptimizationPass]) -> fx.GraphModule:
        """Apply ``passes`` in order; each one is verified before the next starts."""
        resolved = [resolve(p) for p in passes]
        inputs = self._inputs()
        context = PassContext(inputs, self.device, state_storages(self.model))
        for opt_pass in resolved:
            self._apply(opt_pass, context, inputs)
        return self.optimized

    def _apply(
        self, opt_pass: OptimizationPass, context: PassContext, inputs: tuple[Any, ...]
    ) -> None:
        before = self.optimized
        candidate = clone_module(before)
        opt_pass.bind(context)
        analysis = opt_pass.analyze(candidate.graph)
        if not analysis.get("safe", False):
            raise VerificationError(opt_pass.name, "its analysis reports the graph unsafe")
        try:
            opt_pass.transform(candidate.graph)
            candidate.recompile()
        except Exception as exc:
            raise VerificationError(opt_pass.name, f"transform failed: {exc}") from exc
        if not opt_pass.verify(candidate.graph):
            raise VerificationError(opt_pass.name, "the transformed graph fails its own check")
        try:
            result = compare(self.model, candidate, inputs, self.rtol, self.atol)
        except Exception as exc:
            raise VerificationError(
                opt_pass.name, f"the optimised module fails to run: {type(exc).__name__}: {exc}"
            ) from exc
        if not result.ok:
            raise VerificationError(opt_pass.name, result.detail)
        self._current = candidate
        self.history.append(
            PassRecord(
                opt_pass.name,
                len(before.graph.nodes),
                len(candidate.graph.nodes),
                count_ops(before.graph),
                count_ops(candidate.graph),
                dict(analysis.get("stats", {})),
                result.detail,
            )
        )

    def optimize_for_memory(self, budget: float = 0.5) -> fx.GraphModule:
        return self.optimize(["redundant_ops", RecomputationPass(MemoryBudget(budget))])

    def optimize_for_speed(self) -> fx.GraphModule:
        # No fusion pass exists yet; redundant-op elimination is the speed pass we have.
        return self.optimize(["redundant_ops"])

    def verify_correctness(
        self, test_inputs: Sequence[Any] | None = None, rtol: float = 1e-5, atol: float = 1e-6
    ) -> bool:
        """Outputs and gradients of the optimised module match the original model."""
        return compare(self.model, self.optimized, self._inputs(test_inputs), rtol, atol).ok

    def benchmark(
        self,
        test_inputs: Sequence[Any] | None = None,
        num_runs: int = 20,
        warmup: int = 3,
        name: str | None = None,
    ) -> BenchmarkReport:
        """Graph size, activation memory and train-step time: original vs optimised."""
        return run_benchmark(
            name or type(self.model).__name__,
            self.original,
            self.optimized,
            self._inputs(test_inputs),
            self.device,
            state_storages(self.model),
            num_runs,
            warmup,
            self.history,
            self.trace_method,
        )
