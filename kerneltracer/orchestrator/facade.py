"""One entry point for a run: config → jobs → models resolved → plan → workers.

``open_run`` takes the run-dir lock first, so the plan it reads cannot race another
orchestrator; the session releases it when closed.
"""

from __future__ import annotations

import fnmatch
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kerneltracer._version import __version__
from kerneltracer.config import RunConfig
from kerneltracer.core import layout
from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.manifest import ManifestJob, OrchestratorInfo, RunManifest, write_manifest
from kerneltracer.core.oserrors import os_error_text
from kerneltracer.core.rundir import run_dir_problem
from kerneltracer.core.status import JobStatus, TraceStatus, base_status, now_iso
from kerneltracer.errors import RunDirError, UsageError, choices
from kerneltracer.orchestrator.download import DownloadObserver
from kerneltracer.orchestrator.events import NullObserver, RunObserver
from kerneltracer.orchestrator.expand import plan_jobs
from kerneltracer.orchestrator.interpreters import worker_interpreters
from kerneltracer.orchestrator.lock import RunDirLock
from kerneltracer.orchestrator.models import resolve_models
from kerneltracer.orchestrator.planner import RunPlan, plan_run
from kerneltracer.orchestrator.planning import load_config
from kerneltracer.orchestrator.runner import RunOptions, RunResult, execute, save_status
from kerneltracer.orchestrator.shard import Shard, select_shard
from kerneltracer.tracers.registry import TRACERS


@dataclass(frozen=True)
class RunRequest:
    config_path: Path
    output_dir: Path | None = None
    only: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    force: bool = False
    verify: bool = False
    jobs: int = 1
    kill_grace_s: float = 5.0
    share_gpus: bool = False
    preload: bool = True  # False: every worker starts a fresh interpreter (--no-preload)
    shard: Shard | None = None  # run only this slice of the jobs (see orchestrator.shard)


@dataclass
class RunSession:
    request: RunRequest
    config: RunConfig
    base_dir: Path
    run_dir: Path
    jobs: list[JobSpec]
    plan: RunPlan
    model_failures: dict[str, str] = field(default_factory=dict)
    lock: RunDirLock | None = None
    # framework → worker interpreter, checked by open_run (absent: the orchestrator's own).
    interpreters: dict[str, str] = field(default_factory=dict)
    stopped_by: str | None = None  # the run dir took no more writes (core.oserrors' words)

    def execute(self, observer: RunObserver | None = None) -> RunResult:
        observer = observer or NullObserver()
        started = now_iso()
        try:
            self._write_manifest(started, None, None)
        except OSError as exc:
            raise RunDirError(f"cannot start the run: {os_error_text(exc, self.run_dir)}") from None
        unresolved = self._fail_unresolved()
        options = RunOptions(
            max_parallel=max(1, self.request.jobs),
            interpreters=self.interpreters,
            kill_grace_s=self.request.kill_grace_s,
            share_gpus=self.request.share_gpus,
            preload=self.request.preload,
            preload_off=frozenset(
                str(name) for name, fw in self.config.frameworks.items() if not fw.preload
            ),
            log_tag=self.request.shard.tag if self.request.shard else None,
        )
        # The plan first, then each early failure: every counted line knows the total.
        observer.planned(len(self.jobs), len(self.plan.to_run) + len(unresolved))
        for job, status in unresolved:
            observer.job_finished(job, status)
        if self.stopped_by is None:
            result = execute(self.plan, options, observer)
        else:  # the run dir took no more writes already
            result = RunResult({}, False, 0.0, self.stopped_by)
        result.statuses.update((job.key, status) for job, status in unresolved)
        try:
            self._write_manifest(started, now_iso(), result)
        except OSError as exc:  # the run's end cannot be recorded: say why, do not crash
            result.stopped_by = result.stopped_by or os_error_text(exc, self.run_dir)
        return result

    def _fail_unresolved(self) -> list[tuple[JobSpec, TraceStatus]]:
        out: list[tuple[JobSpec, TraceStatus]] = []
        for job in self.jobs:
            reason = self.model_failures.get(job.model.slug)
            if reason is None:
                continue
            status = base_status(job, "-", JobStatus.FAILED, reason=reason, finished_at=now_iso())
            job_dir = layout.RunPaths(self.run_dir).job(job.key).dir
            try:
                job_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                status.reason = f"{reason}; status not saved: {os_error_text(exc, job_dir)}"
                self.stopped_by = self.stopped_by or os_error_text(exc, job_dir)
            else:
                self.stopped_by = self.stopped_by or save_status(job_dir, status)
            out.append((job, status))
        return out

    def _write_manifest(self, started: str, finished: str | None, result: RunResult | None) -> None:
        shard = self.request.shard
        manifest = RunManifest(
            kerneltracer_version=__version__,
            shard=str(shard) if shard else None,
            config=str(self.request.config_path.resolve()),
            argv=sys.argv,
            orchestrator=OrchestratorInfo(pid=os.getpid(), host=socket.gethostname()),
            started_at=started,
            finished_at=finished,
            interrupted=result.interrupted if result else None,
            wall_s=round(result.wall_s, 3) if result else None,
            jobs=[
                ManifestJob(
                    key=j.key, model=j.model.display, tracer=j.tracer, mode=j.mode, phase=j.phase
                )
                for j in self.jobs
            ],
        )
        write_manifest(self.run_dir, manifest, shard.tag if shard else None)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> RunSession:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def run_dir_for(cfg: RunConfig, base_dir: Path, config_path: Path, override: Path | None) -> Path:
    """The run dir a run writes into; UsageError if it cannot be one (see run_dir_problem)."""
    if override is not None:
        run_dir = override.resolve()
    elif cfg.output_dir is not None:
        run_dir = (base_dir / cfg.output_dir).resolve()
    else:
        run_dir = (Path.cwd() / "runs" / config_path.stem).resolve()
    problem = run_dir_problem(run_dir)
    if problem is not None:
        raise UsageError(f"run dir {run_dir}: {problem}")
    return run_dir


def select_jobs(
    jobs: list[JobSpec], only: tuple[str, ...], models: tuple[str, ...]
) -> list[JobSpec]:
    for name in only:
        if name not in TRACERS:
            raise UsageError(f"--only: unknown tracer {name!r} (valid: {choices(TRACERS)})")
    if only:
        jobs = [j for j in jobs if j.tracer in only]
    if models:

        def matches(j: JobSpec) -> bool:
            names = {j.model.display, j.model.slug, j.model.id or "", j.model.path or ""}
            return any(fnmatch.fnmatchcase(n, pat) for n in names for pat in models)

        picked = [j for j in jobs if matches(j)]
        if not picked:
            known = sorted({j.model.display for j in jobs})
            raise UsageError(
                f"--models {' '.join(models)} matches no model (models: {', '.join(known)})"
            )
        jobs = picked
    return jobs


def open_run(request: RunRequest, downloads: DownloadObserver | None = None) -> RunSession:
    """Load and validate the config, lock the run dir, get the models ready, plan every job.

    Models are downloaded here, before any worker exists: download time never counts
    toward a job's timeout, and the resolved commits are part of each job's request.
    """
    cfg, base_dir = load_config(request.config_path, request.output_dir is None)
    run_dir = run_dir_for(cfg, base_dir, request.config_path, request.output_dir)
    jobs = select_jobs(plan_jobs(cfg, base_dir), request.only, request.models)
    jobs = select_shard(jobs, request.shard)
    # Before the lock and any download: a wrong interpreter is a one-line fix for the user.
    interpreters = worker_interpreters(
        cfg, request.config_path, base_dir, {j.framework for j in jobs}
    )
    paths = layout.RunPaths(run_dir)
    lock = RunDirLock(paths.lock(request.shard.tag if request.shard else None))
    lock.acquire()
    try:
        jobs, failures = resolve_models(
            jobs, cfg.download, log_dir=paths.downloads, observer=downloads
        )
        runnable = [j for j in jobs if j.model.slug not in failures]
        plan = plan_run(run_dir, runnable, force=request.force, verify=request.verify)
    except BaseException:
        lock.release()
        raise
    return RunSession(request, cfg, base_dir, run_dir, jobs, plan, failures, lock, interpreters)
