"""Optimisation passes: the :class:`~.base.OptimizationPass` contract and the pass registry.

Its face: ``base``, ``registry``, ``recompute``, ``redundant_ops``.
"""

__all__ = ["base", "recompute", "redundant_ops", "registry"]
