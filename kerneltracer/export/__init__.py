"""Exports of a run's records to other tools' formats: per-rank Chakra execution traces
(:mod:`.chakra`), from the rank dirs a parallel job writes (:mod:`kerneltracer.core.ranks`
reads them).

Its face: ``chakra``.
"""

__all__ = ["chakra"]
