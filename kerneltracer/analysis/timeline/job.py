"""The per-job ``timeline`` analysis, for every job with a chrome trace artefact."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis
from kerneltracer.core.artefacts import ArtefactKind
from kerneltracer.core.ops_csv import TIMELINE_ANALYSIS


class TimelineAnalysis(JobAnalysis):
    name = TIMELINE_ANALYSIS
    version = "2"
    description = (
        "bottleneck analysis, HTA-style GPU breakdowns, op → kernel attribution with a "
        "per-op roofline, and InferScope trace per chrome trace"
    )

    def applies(self, job: AnalysisJob) -> bool:
        return ArtefactKind.CHROME_TRACE in job.kinds

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        from kerneltracer.analysis.timeline.pipeline import OpsOptions
        from kerneltracer.analysis.timeline.writer import run_timeline

        traces = job.artefacts(ArtefactKind.CHROME_TRACE)
        return run_timeline([t for t in traces if t.is_file()], out_dir, ops=OpsOptions())
