"""Single source of truth for the per-job analyses ``kerneltracer analyze`` runs.

Adding an analysis = one module implementing :class:`JobAnalysis` + one line here.
"""

from __future__ import annotations

from kerneltracer.analysis.base import JobAnalysis
from kerneltracer.analysis.records.job import RecordsAnalysis
from kerneltracer.analysis.structured_logs.analysis import StructuredLogsAnalysis
from kerneltracer.analysis.timeline.job import TimelineAnalysis
from kerneltracer.fx.job_analysis import FxRedundancyAnalysis

ANALYSES: dict[str, type[JobAnalysis]] = {
    "records": RecordsAnalysis,
    "fx_redundancy": FxRedundancyAnalysis,
    "structured_logs": StructuredLogsAnalysis,
    "timeline": TimelineAnalysis,
}
