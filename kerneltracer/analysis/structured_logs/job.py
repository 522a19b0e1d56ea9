"""Per-job analysis: a job's TORCH_TRACE logs (torch_trace_log artefacts) → tlparse reports."""

from __future__ import annotations

from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis
from kerneltracer.core.artefacts import ArtefactKind


def _trace_logs(job: AnalysisJob) -> list[str]:
    return job.artefact_names(ArtefactKind.TORCH_TRACE_LOG)


class StructuredLogsAnalysis(JobAnalysis):
    name = "structured_logs"
    version = "1"
    description = (
        "TORCH_TRACE logs → compile directory, graphs, code, metrics, failures (tlparse two-stage)"
    )

    def applies(self, job: AnalysisJob) -> bool:
        return ArtefactKind.TORCH_TRACE_LOG in job.kinds

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        from kerneltracer.analysis.structured_logs.api import NoRecordsError, run

        logs = sorted(_trace_logs(job))
        written: list[Path] = []
        empty: list[NoRecordsError] = []
        for rel in logs:
            target = out_dir if len(logs) == 1 else out_dir / Path(rel).stem
            try:
                _, rendered = run(job.job_dir / rel, target, overwrite=True)
            except NoRecordsError as exc:  # e.g. a rank that compiled nothing
                empty.append(exc)
                continue
            written.extend(target / f for f in (rendered.files if rendered else []))
        if empty and not written:
            raise empty[0]
        return written
