"""Optimisation passes: the :class:`~.base.OptimizationPass` contract and the pass registry."""
