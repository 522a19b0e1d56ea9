"""The report's machine-readable side: ``run_summary.json`` and ``jobs.csv``."""

from __future__ import annotations

import csv
import io
from typing import Any

from kerneltracer.report.collect import PHASES, Job, RunData

SUMMARY_SCHEMA_VERSION = 1
JOB_COLUMNS = (
    "key",
    "model",
    "slug",
    "tracer",
    "mode",
    "status",
    "duration_s",
    "peak_rss_bytes",
    *(f"{p}_s" for p in PHASES),
    "started_at",
    "finished_at",
    "device",
    "reason",
    "analyses",
    # after the older columns, so scripts reading them by position keep working
    "phase",
    "weights",
)


def run_summary(run: RunData, coverage_note: str | None) -> dict[str, Any]:
    by_tracer: dict[str, dict[str, int]] = {}
    for job in run.jobs:
        counts = by_tracer.setdefault(job.column, {})
        counts[job.status] = counts.get(job.status, 0) + 1
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_dir": run.name,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "in_progress": run.in_progress,
        "abandoned": run.abandoned,
        "interrupted": run.interrupted,
        "wall_s": run.wall_s,  # the last invocation's (a no-op rerun's is ~0)
        # What the jobs' own status files recorded, whatever invocation ran them.
        "jobs_span_s": run.job_times.span_s,
        "jobs_duration_s": run.job_times.duration_s,
        "jobs_from_earlier_invocations": run.job_times.earlier,
        "kerneltracer_version": run.kerneltracer_version,
        "models": len(run.models),  # distinct models
        "model_variants": run.variants,  # (model, mode, phase)
        "tracers": run.columns,
        "jobs": len(run.jobs),
        "counts": run.counts,
        "counts_by_tracer": by_tracer,
        "versions": run.versions,
        "untested_versions": [
            {"library": u.library, "version": u.version, "tested": u.tested} for u in run.untested
        ],
        "coverage_note": coverage_note,
        "problems": [
            {"key": j.key, "status": j.status, "reason": j.reason}
            for j in run.jobs
            if j.failed or j.status == "unreadable"
        ],
    }


def jobs_csv(jobs: list[Job]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(JOB_COLUMNS)
    for j in jobs:
        writer.writerow(
            (
                j.key,
                j.model,
                j.slug,
                j.tracer,
                j.mode,
                j.status,
                _num(j.duration_s),
                _num(j.peak_rss_bytes),
                *(_num(j.phases.get(p)) for p in PHASES),
                j.started_at or "",
                j.finished_at or "",
                j.device or "",
                j.reason or "",
                ";".join(f"{a.name}:{a.state}" for a in j.analyses),
                j.phase,
                j.weights,
            )
        )
    return buf.getvalue()


def _num(value: float | int | None) -> str:
    return "" if value is None else str(value)
