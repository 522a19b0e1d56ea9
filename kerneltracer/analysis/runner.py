"""Run every applicable per-job analysis over a run dir, skipping unchanged ones.

Each analysis writes into ``JOB_DIR/analysis/<name>/`` and a marker ``_ANALYSIS.json``
recording the analysis version and the job status it read; a rerun skips it while both
are unchanged. Failures of one analysis are recorded and do not stop the others.
"""

from __future__ import annotations

import multiprocessing
import shutil
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from kerneltracer.analysis.base import AnalysisJob, JobAnalysis, analysis_job
from kerneltracer.core.layout import ANALYSIS_MARKER, STATUS_FILE
from kerneltracer.core.rundir import RunDir
from kerneltracer.jsonio import atomic_write_json, read_json, sha256_file

MARKER = ANALYSIS_MARKER


@dataclass(frozen=True)
class AnalysisOutcome:
    job_key: str
    analysis: str
    state: str  # done, unchanged, failed
    detail: str = ""


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
) -> list[AnalysisOutcome]:
    """Run every applicable analysis of every job; up to ``workers`` jobs at once.

    Unchanged analyses are settled here without starting anything; the jobs left to do go
    to a process pool only when ``workers > 1``, there are at least two of them and their
    outputs add up to ``min_parallel_bytes`` (an analysis holds the GIL, so threads would
    not help; and each worker process pays the framework imports again, which small inputs
    do not win back). Outcomes reach ``on_outcome`` as each job finishes.
    """
    outcomes: list[AnalysisOutcome] = []

    def emit(batch: list[AnalysisOutcome]) -> None:
        outcomes.extend(batch)
        if on_outcome is not None:
            for outcome in batch:
                on_outcome(outcome)

    todo = _plan(run_dir, analyses, force, emit)
    small = sum(_input_bytes(item.job) for item in todo) < min_parallel_bytes
    if workers <= 1 or len(todo) < 2 or small:
        for item in todo:
            emit(_analyze_job(item))
    else:
        _run_parallel(todo, workers, emit)
    return outcomes


@dataclass(frozen=True)
class _JobWork:
    key: str
    job: AnalysisJob
    status_sha: str
    analyses: dict[str, type[JobAnalysis]]  # the ones to (re)run


def _plan(
    run_dir: Path,
    analyses: Mapping[str, type[JobAnalysis]],
    force: bool,
    emit: Callable[[list[AnalysisOutcome]], None],
) -> list[_JobWork]:
    """The jobs with analyses to run; unchanged ones are reported right away."""
    todo = []
    for key, job in iter_jobs(run_dir):
        status_sha = sha256_file(job.job_dir / STATUS_FILE)
        selected: dict[str, type[JobAnalysis]] = {}
        for name, cls in analyses.items():
            analysis = cls()
            if not analysis.applies(job):
                continue
            if not force and _unchanged(job, name, analysis, status_sha):
                emit([AnalysisOutcome(key, name, "unchanged")])
            else:
                selected[name] = cls
        if selected:
            todo.append(_JobWork(key, job, status_sha, selected))
    return todo


def _run_parallel(
    todo: list[_JobWork], workers: int, emit: Callable[[list[AnalysisOutcome]], None]
) -> None:
    # fork: workers reuse the modules the parent already imported, and the CLI process
    # that forks runs no threads (analyses import frameworks only inside run()).
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(min(workers, len(todo)), mp_context=context) as pool:
        futures = {pool.submit(_analyze_job, item): item for item in todo}
        for future in as_completed(futures):
            item = futures[future]
            try:
                emit(future.result())
            except Exception as exc:  # the worker process died (OOM-killed, segfault, ...)
                detail = f"analysis process failed: {type(exc).__name__}: {exc}"
                emit([AnalysisOutcome(item.key, n, "failed", detail) for n in item.analyses])


def _input_bytes(job: AnalysisJob) -> int:
    total = 0
    for path in job.output_paths():
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


def _analyze_job(item: _JobWork) -> list[AnalysisOutcome]:
    return [
        _run_one(item.key, item.job, name, cls(), item.status_sha)
        for name, cls in item.analyses.items()
    ]


def _stamp(name: str, analysis: JobAnalysis, status_sha: str) -> dict[str, str]:
    return {"analysis": name, "version": analysis.version, "status_sha256": status_sha}


def _unchanged(job: AnalysisJob, name: str, analysis: JobAnalysis, status_sha: str) -> bool:
    stamp = _stamp(name, analysis, status_sha)
    try:
        previous = read_json(job.job_dir / "analysis" / name / MARKER)
        return {k: previous.get(k) for k in stamp} == stamp and previous.get("state") == "done"
    except (OSError, ValueError, AttributeError):
        return False


def _run_one(
    key: str, job: AnalysisJob, name: str, analysis: JobAnalysis, status_sha: str
) -> AnalysisOutcome:
    out_dir = job.job_dir / "analysis" / name
    stamp = _stamp(name, analysis, status_sha)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    try:
        files = analysis.run(job, out_dir)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        atomic_write_json(
            out_dir / MARKER,
            {**stamp, "state": "failed", "error": detail, "traceback": traceback.format_exc()},
        )
        return AnalysisOutcome(key, name, "failed", detail)
    rel = [_relative_to(out_dir, f) for f in files]
    atomic_write_json(out_dir / MARKER, {**stamp, "state": "done", "files": rel})
    return AnalysisOutcome(key, name, "done", f"{len(rel)} file(s)")


def _relative_to(out_dir: Path, written: str | Path) -> str:
    """A written file as a path inside ``out_dir``, so the marker survives copying the run.

    Analyses return paths built on ``out_dir``, which may itself be relative to the cwd.
    """
    try:
        return str(Path(written).resolve().relative_to(out_dir.resolve()))
    except ValueError:
        return str(written)
