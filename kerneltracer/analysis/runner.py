"""Run every applicable per-job analysis over a run dir, skipping unchanged ones.

Each analysis writes into ``JOB_DIR/analysis/<name>/`` and a marker ``_ANALYSIS.json``
recording the analysis version, the job status it read and how it ended; a rerun skips it
while it is ``done`` and both are unchanged. Every (job, analysis) runs in a worker process
with a timeout and a memory ceiling (see :mod:`kerneltracer.analysis.isolation`): one that
raises, runs out of memory, hangs or crashes is recorded ``failed``, ``timeout`` or
``crashed`` with the reason and its log, and the others go on.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis, analysis_job
from kerneltracer.analysis.isolation import (
    NO_LIMITS,
    Died,
    Limits,
    Raised,
    output_to,
    run_isolated,
)
from kerneltracer.core.layout import ANALYSIS_MARKER, JobPaths
from kerneltracer.core.rundir import RunDir
from kerneltracer.jsonio import atomic_write_json, read_json, sha256_file

MARKER = ANALYSIS_MARKER
LOG = "_ANALYSIS.log"  # the analysis's stdout/stderr, its traceback or crash dump
FAILED_STATES = ("failed", "timeout", "crashed")


@dataclass(frozen=True)
class AnalysisOutcome:
    job_key: str
    analysis: str
    state: str  # done, unchanged, failed, timeout, crashed, interrupted
    detail: str = ""
    log: Path | None = None  # the analysis's log, when it wrote one


def iter_jobs(run_dir: Path) -> list[tuple[str, AnalysisJob]]:
    run = RunDir(run_dir)
    found = ((key, analysis_job(run.record(key))) for key in run.job_dirs())
    return [(key, job) for key, job in found if job is not None]


def analyze_run(
    run_dir: Path,
    analyses: Mapping[str, type[JobAnalysis]],
    force: bool = False,
    on_outcome: Callable[[AnalysisOutcome], None] | None = None,
    workers: int = 1,
    min_parallel_bytes: int = 0,
    limits: Limits = NO_LIMITS,
) -> list[AnalysisOutcome]:
    """Run every applicable analysis of every job; up to ``workers`` at once.

    Unchanged analyses are settled here without starting anything. The others run in
    worker processes: ``workers`` of them only when there are at least two analyses to run
    and the jobs' outputs add up to ``min_parallel_bytes`` (each worker pays the framework
    imports of the analyses again, which small inputs do not win back), else one. Outcomes
    reach ``on_outcome`` as each analysis ends.
    """
    outcomes: list[AnalysisOutcome] = []

    def emit(outcome: AnalysisOutcome) -> None:
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    todo = _plan(run_dir, analyses, force, emit)
    jobs = {task.key: task.job for task in todo}
    small = sum(_input_bytes(job) for job in jobs.values()) < min_parallel_bytes
    size = 1 if small or len(todo) < 2 else workers

    def settle(index: int, result: list[str] | Raised | Died) -> None:
        emit(_settle(todo[index], result, limits))

    run_isolated(len(todo), lambda index: _execute(todo[index]), settle, size, limits)
    return outcomes


@dataclass(frozen=True)
class _Task:
    key: str
    job: AnalysisJob
    name: str
    analysis: type[JobAnalysis]
    status_sha: str

    @property
    def out_dir(self) -> Path:
        return JobPaths(self.job.job_dir).analysis(self.name)


def _plan(
    run_dir: Path,
    analyses: Mapping[str, type[JobAnalysis]],
    force: bool,
    emit: Callable[[AnalysisOutcome], None],
) -> list[_Task]:
    """The (job, analysis) pairs to run; unchanged ones are reported right away."""
    todo = []
    for key, job in iter_jobs(run_dir):
        status_sha = sha256_file(JobPaths(job.job_dir).status)
        for name, cls in analyses.items():
            analysis = cls()
            if not analysis.applies(job):
                continue
            if not force and _unchanged(job, name, analysis, status_sha):
                emit(AnalysisOutcome(key, name, "unchanged"))
            else:
                todo.append(_Task(key, job, name, cls, status_sha))
    return todo


def _input_bytes(job: AnalysisJob) -> int:
    total = 0
    for path in job.output_paths():
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


def _execute(task: _Task) -> list[str]:
    """In a worker process: run the analysis into a fresh output dir; the files it wrote."""
    out_dir = task.out_dir
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    with output_to(out_dir / LOG):
        files = task.analysis().run(task.job, out_dir)
    return [_relative_to(out_dir, f) for f in files]


def _settle(task: _Task, result: list[str] | Raised | Died, limits: Limits) -> AnalysisOutcome:
    """In the caller: write the marker of an analysis that ended; its outcome."""
    out_dir = task.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)  # a worker may die before making it
    log = out_dir / LOG
    marker: dict[str, Any] = _stamp(task.name, task.analysis(), task.status_sha)
    if isinstance(result, list):
        if log.is_file() and log.stat().st_size == 0:
            log.unlink()
        state, detail = "done", f"{len(result)} file(s)"
        marker["files"] = result
    elif isinstance(result, Raised):
        state, detail = "failed", _failure(result, limits)
        marker["traceback"] = result.traceback
    else:
        state, detail = result.state, result.reason
    marker["state"] = state
    if state != "done":
        marker["error"] = detail
    has_log = log.is_file()
    if has_log:
        marker["log"] = LOG
    atomic_write_json(out_dir / MARKER, marker)
    return AnalysisOutcome(task.key, task.name, state, detail, log if has_log else None)


def _failure(raised: Raised, limits: Limits) -> str:
    if not raised.out_of_memory:
        return raised.summary
    ceiling = limits.max_memory_bytes
    where = f"the memory ceiling of {format_bytes(ceiling)}" if ceiling else "memory"
    return f"out of memory: allocation beyond {where} ({raised.summary})"


def format_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"


def _stamp(name: str, analysis: JobAnalysis, status_sha: str) -> dict[str, str]:
    return {"analysis": name, "version": analysis.version, "status_sha256": status_sha}


def _unchanged(job: AnalysisJob, name: str, analysis: JobAnalysis, status_sha: str) -> bool:
    stamp = _stamp(name, analysis, status_sha)
    try:
        previous = read_json(JobPaths(job.job_dir).analysis(name) / MARKER)
        return {k: previous.get(k) for k in stamp} == stamp and previous.get("state") == "done"
    except (OSError, ValueError, AttributeError):
        return False


def _relative_to(out_dir: Path, written: str | Path) -> str:
    """A written file as a path inside ``out_dir``, so the marker survives copying the run.

    Analyses return paths built on ``out_dir``, which may itself be relative to the cwd.
    """
    try:
        return str(Path(written).resolve().relative_to(out_dir.resolve()))
    except ValueError:
        return str(written)
