"""Per-op GPU time from a job's op attribution (the timeline analysis' ``ops.csv``).

When a job's chrome trace had kernels, the time coverage shows per op is the GPU time of the
kernels attributed to it (its own launches, summed over traces and shapes), not the
profiler's self time: kernels launched inside another op's call, graph replays and
asynchronous launches are where they ran, counted once. Ops that launched nothing get 0.
"""

from __future__ import annotations

from pathlib import Path

from kerneltracer.core.layout import JobPaths
from kerneltracer.core.ops_csv import OPS_CSV, TIMELINE_ANALYSIS, read_ops_csv
from kerneltracer.errors import InputFileError


def attributed_gpu_time(job_dir: Path) -> dict[str, float] | None:
    """Op name -> attributed GPU µs over the job's traces; None when the job has no
    attribution with GPU work (no timeline analysis yet, CPU-only traces, unreadable files)."""
    found: dict[str, float] = {}
    gpu_total = 0.0
    timeline = JobPaths(job_dir).analysis(TIMELINE_ANALYSIS).dir
    for path in sorted(timeline.glob(f"*/{OPS_CSV}")):
        try:
            rows = read_ops_csv(path)
        except (InputFileError, OSError, ValueError, KeyError):
            return None  # a damaged file: the profiler's own time is the safer figure
        for row in rows:
            t = row.get("gpu_time_us") or 0.0
            gpu_total += t
            if row.get("kind") == "op":
                found[row["op"]] = found.get(row["op"], 0.0) + t
    return found if gpu_total > 0 else None
