"""The per-job ``timeline`` analysis for torch_profiler and vllm_profiler jobs."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis

TRACERS = frozenset({"torch_profiler", "vllm_profiler"})


def is_chrome_trace(output: str) -> bool:
    """``*.json.gz``, or ``*.json`` with "trace" in its name (profiler exports)."""
    name = PurePosixPath(output).name.lower()
    return name.endswith(".json.gz") or (name.endswith(".json") and "trace" in name)


class TimelineAnalysis(JobAnalysis):
    name = "timeline"
    version = "1"
    description = (
        "bottleneck analysis, HTA-style GPU breakdowns and InferScope trace per chrome trace"
    )

    def applies(self, job: AnalysisJob) -> bool:
        return job.tracer in TRACERS and any(is_chrome_trace(o) for o in job.outputs)

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        from kerneltracer.analysis.timeline.writer import run_timeline

        traces = [job.job_dir / o for o in job.outputs if is_chrome_trace(o)]
        return run_timeline([t for t in traces if t.is_file()], out_dir)
