"""Single source of truth for the per-job analyses ``kerneltracer analyze`` runs.

Adding an analysis = its package with a ``job.py`` implementing :class:`JobAnalysis` (the
adapter from a job to the analysis: every analysis names it so) + one line here.
"""

from __future__ import annotations

from kerneltracer.analysis.base import JobAnalysis
from kerneltracer.core.registry import Registry

ANALYSES: Registry[type[JobAnalysis]] = Registry(
    "analysis",
    [
        ".records.job:RecordsAnalysis",
        ".fx_redundancy.job:FxRedundancyAnalysis",
        ".structured_logs.job:StructuredLogsAnalysis",
        ".timeline.job:TimelineAnalysis",
    ],
    package=__package__,
)
