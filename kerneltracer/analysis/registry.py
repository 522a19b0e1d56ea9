"""Single source of truth for the per-job analyses ``kerneltracer analyze`` runs.

Adding an analysis = one module implementing :class:`JobAnalysis` + one line here.
"""

from __future__ import annotations

from kerneltracer.analysis.base import JobAnalysis

ANALYSES: dict[str, type[JobAnalysis]] = {}
