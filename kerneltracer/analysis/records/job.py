"""The per-job ``records`` analysis: where did the worker's time go (load/warmup/trace/write)?

The worker writes ``phases.log`` in the job dir, one record per phase boundary::

    <timestamp_ns> <tid> [<tracer_name>] [<phase>] Start|End

It applies whatever the job's status: a job that crashed or timed out mid-phase is exactly
the one whose phase log (with its unmatched Start) says where.
"""

from __future__ import annotations

import csv
from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis
from kerneltracer.analysis.records.analyser import Analysis, analyse
from kerneltracer.analysis.records.files import atomic_text_writer
from kerneltracer.analysis.records.reporters import run_reporters
from kerneltracer.core.layout import JOB, JobPaths

PREFIX = "phases"


class RecordsAnalysis(JobAnalysis):
    name = "records"
    version = "1"
    description = f"worker phase timing (load/warmup/trace/write) from {JOB.phase_log}"

    def applies(self, job: AnalysisJob) -> bool:
        return JobPaths(job.job_dir).phase_log.is_file()

    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        analysis = analyse(JobPaths(job.job_dir).phase_log)
        written = run_reporters(analysis.pds, out_dir / PREFIX)
        if analysis.bad_count:
            written.append(_write_bad_lines(analysis, out_dir / f"{PREFIX}_bad_lines.csv"))
        return written


def _write_bad_lines(analysis: Analysis, path: Path) -> Path:
    with atomic_text_writer(path) as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(("line", "reason", "text", "kind"))
        for bad in analysis.bad_lines:
            out.writerow((bad.line, bad.reason, bad.text, bad.kind))
        listed = len(analysis.bad_lines)
        if analysis.bad_count > listed:
            out.writerow(("", f"{analysis.bad_count - listed} more not listed", "", ""))
    return path
