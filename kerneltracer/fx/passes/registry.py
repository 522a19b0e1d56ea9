"""Explicit registry of the optimisation passes ``optimize(passes=[...])`` accepts by name."""

from __future__ import annotations

from collections.abc import Callable

from kerneltracer.errors import UsageError, choices
from kerneltracer.fx.passes.base import OptimizationPass
from kerneltracer.fx.passes.recompute import RecomputationPass
from kerneltracer.fx.passes.redundant_ops import RedundantOpElimination

PASSES: dict[str, Callable[[], OptimizationPass]] = {
    "redundant_ops": RedundantOpElimination,
    "recompute": RecomputationPass,
}


def resolve(spec: str | OptimizationPass) -> OptimizationPass:
    """A pass instance as is, or a new instance of the registered pass of that name."""
    if isinstance(spec, OptimizationPass):
        return spec
    factory = PASSES.get(spec)
    if factory is None:
        raise UsageError(f"unknown pass {spec!r}; valid passes: {choices(PASSES)}")
    return factory()
