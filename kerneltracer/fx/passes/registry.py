"""The optimisation passes ``optimize(passes=[...])`` accepts by name."""

from __future__ import annotations

from kerneltracer.core.registry import Registry
from kerneltracer.fx.passes.base import OptimizationPass

PASSES: Registry[type[OptimizationPass]] = Registry(
    "pass",
    [".redundant_ops:RedundantOpElimination", ".recompute:RecomputationPass"],
    package=__package__,
)


def resolve(spec: str | OptimizationPass) -> OptimizationPass:
    """A pass instance as is, or a new instance of the registered pass of that name."""
    if isinstance(spec, OptimizationPass):
        return spec
    return PASSES[spec]()
