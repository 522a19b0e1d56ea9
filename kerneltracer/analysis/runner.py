"""Run every applicable per-job analysis over a run dir, skipping unchanged ones.

Each analysis writes into its own folder of the job dir and a record
(:mod:`kerneltracer.core.analysis_record`) of the analysis version, the job status it read
and how it ended; a rerun skips it while it is ``done`` and both are unchanged. Every
(job, analysis) runs in a worker process with a timeout and a memory ceiling (see
:mod:`kerneltracer.analysis.isolation`): one that raises, runs out of memory, hangs or
crashes is recorded ``failed``, ``timeout`` or ``crashed`` with the reason and its log,
and the others go on.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis, analysis_job
from kerneltracer.analysis.isolation import (
    NO_LIMITS,
    Died,
    Limits,
    Raised,
    output_to,
    run_isolated,
)
from kerneltracer.core.analysis_record import (
    AnalysisRecord,
    AnalysisState,
    read_analysis_record,
    write_analysis_record,
)
from kerneltracer.core.layout import AnalysisPaths, JobPaths
from kerneltracer.core.rundir import RunDir
from kerneltracer.jsonio import sha256_file

# An outcome only: the analysis was not run, so its record is the one already there.
UNCHANGED: Literal["unchanged"] = "unchanged"


@dataclass(frozen=True)
class AnalysisOutcome:
    job_key: str
    analysis: str
    state: AnalysisState | Literal["unchanged"]
    detail: str = ""
    log: Path | None = None  # the analysis's log, when it wrote one

    @property
    def failed(self) -> bool:
        return self.state != UNCHANGED and AnalysisState(self.state).failed


def _iter_jobs(run_dir: Path) -> list[tuple[str, AnalysisJob]]:
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
    def paths(self) -> AnalysisPaths:
        return JobPaths(self.job.job_dir).analysis(self.name)


def _plan(
    run_dir: Path,
    analyses: Mapping[str, type[JobAnalysis]],
    force: bool,
    emit: Callable[[AnalysisOutcome], None],
) -> list[_Task]:
    """The (job, analysis) pairs to run; unchanged ones are reported right away."""
    todo = []
    for key, job in _iter_jobs(run_dir):
        status_sha = sha256_file(JobPaths(job.job_dir).status)
        for name, cls in analyses.items():
            analysis = cls()
            if not analysis.applies(job):
                continue
            if not force and _unchanged(job, name, analysis, status_sha):
                emit(AnalysisOutcome(key, name, UNCHANGED))
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
    out_dir = task.paths.dir
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    with output_to(task.paths.log):
        files = task.analysis().run(task.job, out_dir)
    return [_relative_to(out_dir, f) for f in files]


def _settle(task: _Task, result: list[str] | Raised | Died, limits: Limits) -> AnalysisOutcome:
    """In the caller: write the record of an analysis that ended; its outcome."""
    if isinstance(result, list):
        detail = f"{len(result)} file(s)"
        record = _record(task, AnalysisState.DONE, files=result)
    elif isinstance(result, Raised):
        detail = _failure(result, limits)
        record = _record(task, AnalysisState.FAILED, error=detail, traceback=result.traceback)
    else:
        detail = result.reason
        record = _record(task, AnalysisState(result.state), error=detail)
    written = write_analysis_record(task.paths, record)
    log = task.paths.log if written.log is not None else None
    return AnalysisOutcome(task.key, task.name, written.state, detail, log)


def _record(
    task: _Task,
    state: AnalysisState,
    files: list[str] | None = None,
    error: str | None = None,
    traceback: str | None = None,
) -> AnalysisRecord:
    return AnalysisRecord(
        state=state,
        analysis=task.name,
        version=task.analysis.version,
        status_sha256=task.status_sha,
        files=files or [],
        error=error,
        traceback=traceback,
    )


def _failure(raised: Raised, limits: Limits) -> str:
    if not raised.out_of_memory:
        return raised.summary
    ceiling = limits.max_memory_bytes
    where = f"the memory ceiling of {_format_bytes(ceiling)}" if ceiling else "memory"
    return f"out of memory: allocation beyond {where} ({raised.summary})"


def _format_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"


def _unchanged(job: AnalysisJob, name: str, analysis: JobAnalysis, status_sha: str) -> bool:
    previous = read_analysis_record(JobPaths(job.job_dir).analysis(name))
    return isinstance(previous, AnalysisRecord) and previous.same_inputs(
        name, analysis.version, status_sha
    )


def _relative_to(out_dir: Path, written: str | Path) -> str:
    """A written file as a path inside ``out_dir``, so the record survives copying the run.

    Analyses return paths built on ``out_dir``, which may itself be relative to the cwd.
    """
    try:
        return str(Path(written).resolve().relative_to(out_dir.resolve()))
    except ValueError:
        return str(written)
