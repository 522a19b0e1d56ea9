"""Single source of truth for the per-job analyses ``kerneltracer analyze`` runs.

Adding an analysis = its package with a ``job.py`` implementing :class:`JobAnalysis` (the
adapter from a job to the analysis: every analysis names it so) + one line here.
"""

from __future__ import annotations

from kerneltracer.analysis.base import JobAnalysis
from kerneltracer.analysis.fx_redundancy.job import FxRedundancyAnalysis
from kerneltracer.analysis.records.job import RecordsAnalysis
from kerneltracer.analysis.structured_logs.job import StructuredLogsAnalysis
from kerneltracer.analysis.timeline.job import TimelineAnalysis

ANALYSES: dict[str, type[JobAnalysis]] = {
    "records": RecordsAnalysis,
    "fx_redundancy": FxRedundancyAnalysis,
    "structured_logs": StructuredLogsAnalysis,
    "timeline": TimelineAnalysis,
}
