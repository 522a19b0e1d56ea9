"""The scheduling loop: start workers, watch them, stop them, and seal every job's status.

Workers are spawned from the main thread only: the worker's parent-death signal fires when
the *thread* that forked it exits, so spawning from a short-lived thread would kill it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from kerneltracer.core.identity import EXCLUSIVE_SKIP
from kerneltracer.core.interrupts import handling_signals
from kerneltracer.core.jobspec import JobFile
from kerneltracer.core.layout import JOB, JobPaths
from kerneltracer.core.oserrors import os_error_status, os_error_text, stops_run
from kerneltracer.core.status import (
    JobStatus,
    TraceStatus,
    base_status,
    now_iso,
    read_status,
    write_status,
)
from kerneltracer.core.stop import StopKind, StopReason
from kerneltracer.jsonio import remove_orphaned_temps
from kerneltracer.orchestrator import environment as envmod
from kerneltracer.orchestrator.classify import classify_exit, interrupted_phase
from kerneltracer.orchestrator.events import NullObserver, RunObserver
from kerneltracer.orchestrator.forkserver import ForkedChild
from kerneltracer.orchestrator.planner import Chain, PlannedJob, RunPlan
from kerneltracer.orchestrator.preload import Preloader
from kerneltracer.process.supervisor import WorkerProcess, describe_process

GiB = 1024**3


@dataclass(frozen=True)
class RunOptions:
    max_parallel: int = 1
    interpreters: Mapping[str, str] = field(default_factory=dict)
    kill_grace_s: float = 5.0
    poll_s: float = 0.05  # exit checks: cheap, and every job's end waits on one
    sample_s: float = 0.25  # tree RSS sampling walks /proc: less often
    share_gpus: bool = False
    preload: bool = True  # fork light jobs from a preloaded server (orchestrator.preload)
    preload_off: frozenset[str] = frozenset()  # frameworks whose config turns it off
    log_tag: str | None = None  # a shard's tag: its own names for the run's shared logs/


@dataclass
class _Active:
    planned: PlannedJob
    chain: Chain
    proc: WorkerProcess
    attempt: str
    started_at: str
    gpus: list[str]
    slots: int = 1  # of -j: a multi-rank job takes one per rank
    stop_reason: StopReason | None = None
    next_sample: float = 0.0


@dataclass
class RunResult:
    statuses: dict[str, TraceStatus]
    interrupted: bool
    wall_s: float
    # Why the run stopped before its end without a signal: the run dir took no more
    # writes (disk full, quota, read-only); one line from core.oserrors.
    stopped_by: str | None = None
    notes: list[str] = field(default_factory=list)  # how workers started (preloading)


class _Stop:
    """Set by SIGINT/SIGTERM, or when the run dir takes no more writes; the loop notices
    and stops every worker cleanly."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.fatal: str | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.signal = signal.Signals(signum).name

    @property
    def stopped(self) -> bool:
        return self.signal is not None or self.fatal is not None

    @property
    def why(self) -> str:
        if self.signal is not None:
            return f"orchestrator received {self.signal}"
        return f"run stopped: {self.fatal}"


def execute(plan: RunPlan, options: RunOptions, observer: RunObserver | None = None) -> RunResult:
    observer = observer or NullObserver()
    t0 = time.monotonic()
    statuses: dict[str, TraceStatus] = {}
    statuses.update(_record_satisfied(plan))
    pending: deque[tuple[Chain, int]] = deque((c, 0) for c in plan.chains)
    active: list[_Active] = []
    gpus = envmod.visible_gpus(os.environ)
    free_gpus = list(gpus)
    stop = _Stop()
    cpus = os.cpu_count() or 1
    threads = max(1, cpus // max(1, options.max_parallel))
    preloader = _preloader(plan, options, threads)
    with handling_signals(stop), _closing(preloader, options, observer):
        while (pending or active) and not stop.stopped:
            while pending and not stop.stopped:
                chain, index = pending[0]
                member = chain.members[index]
                refused = envmod.refusal(member.job, gpus, cpus)
                if refused is not None:  # never runnable here: refused before it starts
                    pending.popleft()
                    status = _refused(member, refused, stop)
                    statuses[member.job.key] = status
                    observer.job_finished(member.job, status)
                    _advance(plan, chain, member, status, pending, statuses, observer)
                    continue
                # A multi-rank job takes one slot per rank; one wider than -j runs alone.
                slots = min(member.job.rank_processes, options.max_parallel)
                if sum(a.slots for a in active) + slots > options.max_parallel:
                    break
                job_gpus: list[str] = []
                if envmod.needs_gpu(member.job, gpus) and not options.share_gpus:
                    picked = envmod.pick_gpus(member.job, gpus, free_gpus)
                    if picked is None:
                        break  # its GPUs are busy: wait, jobs never share a device
                    job_gpus = picked
                    for gpu in job_gpus:
                        free_gpus.remove(gpu)
                pending.popleft()
                try:
                    active.append(
                        _start(
                            chain,
                            member,
                            options,
                            # Each rank's share of the job's slots (its OMP_NUM_THREADS).
                            max(1, threads * slots // member.job.rank_processes),
                            job_gpus,
                            observer,
                            preloader,
                        )
                    )
                    active[-1].slots = slots
                except OSError as exc:  # its job dir cannot be prepared
                    free_gpus += job_gpus
                    status = _unstarted(member, exc, stop)
                    statuses[member.job.key] = status
                    observer.job_finished(member.job, status)
                    _advance(plan, chain, member, status, pending, statuses, observer)
            if preloader is not None:
                preloader.wait(options.poll_s)
            else:
                time.sleep(options.poll_s)
            if stop.signal is not None:
                break  # a job that died of the same signal is interrupted, not crashed
            for act in list(active):
                if _check(act, options) is None:
                    continue
                active.remove(act)
                free_gpus += act.gpus
                status = _finish(act, options, stop)
                statuses[act.planned.job.key] = status
                observer.job_finished(act.planned.job, status)
                _advance(plan, act.chain, act.planned, status, pending, statuses, observer)
        if stop.stopped:
            _interrupt_all(active, stop, options, statuses, observer)
    notes = preloader.notes if preloader is not None else []
    return RunResult(statuses, stop.signal is not None, time.monotonic() - t0, stop.fatal, notes)


def _preloader(plan: RunPlan, options: RunOptions, threads: int) -> Preloader | None:
    if not options.preload:
        return None
    base = envmod.common_env(os.environ, threads)
    preloader = Preloader(
        plan.run_dir, options.interpreters, base, options.preload_off, log_tag=options.log_tag
    )
    preloader.plan(p.job for p in plan.to_run)
    return preloader


@contextlib.contextmanager
def _closing(
    preloader: Preloader | None, options: RunOptions, observer: RunObserver
) -> Iterator[None]:
    """Stop the servers at the end (after every worker was sealed): nothing outlives a run."""
    try:
        yield
    finally:
        if preloader is not None:
            preloader.close(options.kill_grace_s)


def _save(job_dir: Path, status: TraceStatus, stop: _Stop) -> TraceStatus:
    fatal = save_status(job_dir, status)
    stop.fatal = stop.fatal or fatal
    return status


def save_status(job_dir: Path, status: TraceStatus) -> str | None:
    """Write ``status``; return why the run must stop when the run dir takes no more writes.

    If the write is refused, the job ends failed with the reason (in ``status``, shown even
    when it cannot be saved): its outputs, unusable without a status, are removed (which
    may make room for the status; logs and JOB.json stay).
    """
    try:
        write_status(job_dir, status)
        return None
    except OSError as exc:
        error = exc
    text = os_error_text(error, job_dir)
    ended = status.status.value
    if status.status == JobStatus.OK:  # its outputs are not kept: a rerun runs it again
        status.status = os_error_status(error)
    status.reason = f"{text}; its outputs were removed (the job had ended {ended})"
    _drop_outputs(job_dir)
    try:
        write_status(job_dir, status)
    except OSError:
        status.reason += "; status not saved"
    return text if stops_run(error) else None


def _drop_outputs(job_dir: Path) -> None:
    keep = {JOB.job_file.name, JOB.worker_log.name, JOB.phase_log.name}
    with contextlib.suppress(OSError):
        for entry in os.scandir(job_dir):
            if entry.name in keep:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _unstarted(member: PlannedJob, exc: OSError, stop: _Stop) -> TraceStatus:
    """A job whose dir could not be prepared: failed with the OS error, no worker started."""
    status = base_status(
        member.job,
        uuid.uuid4().hex,
        os_error_status(exc),
        reason=os_error_text(exc, member.job_dir),
        finished_at=now_iso(),
    )
    if stops_run(exc):  # no write would succeed: the status lives in memory only
        stop.fatal = stop.fatal or os_error_text(exc, member.job_dir)
        return status
    return _save(member.job_dir, status, stop) if member.job_dir.is_dir() else status


def _refused(member: PlannedJob, reason: str, stop: _Stop) -> TraceStatus:
    """A job this machine can never run (more ranks than GPUs or cores): unsupported, with
    the numbers, and no worker started."""
    status = base_status(
        member.job, uuid.uuid4().hex, JobStatus.UNSUPPORTED, reason=reason, finished_at=now_iso()
    )
    try:
        _prepare_dir(member.job_dir)
    except OSError as exc:
        return _unstarted(member, exc, stop)
    return _save(member.job_dir, status, stop)


def _record_satisfied(plan: RunPlan) -> dict[str, TraceStatus]:
    """Mark members of groups satisfied by an earlier run as skipped, once.

    They are bypassed like complete jobs: no progress event, and no rewrite when the file
    already says so (a large rerun would otherwise fsync thousands of unchanged files).
    """
    by_key = {p.job.key: p for p in plan.jobs}
    written = {}
    for key, winner in plan.satisfied_by.items():
        p = by_key[key]
        reason = f"{EXCLUSIVE_SKIP}{winner}"
        raw = p.status or {}
        if (raw.get("status"), raw.get("reason"), raw.get("request_hash")) == (
            JobStatus.SKIPPED.value,
            reason,
            p.job.request_hash,
        ):
            continue
        p.job_dir.mkdir(parents=True, exist_ok=True)
        written[key] = _skipped(p, reason)
        write_status(p.job_dir, written[key])
    return written


def _skipped(p: PlannedJob, reason: str) -> TraceStatus:
    return base_status(
        p.job, uuid.uuid4().hex, JobStatus.SKIPPED, reason=reason, finished_at=now_iso()
    )


def _skip(
    p: PlannedJob, reason: str, statuses: dict[str, TraceStatus], observer: RunObserver
) -> None:
    status = _skipped(p, reason)
    p.job_dir.mkdir(parents=True, exist_ok=True)
    write_status(p.job_dir, status)
    statuses[p.job.key] = status
    observer.job_finished(p.job, status)


def _advance(
    plan: RunPlan,
    chain: Chain,
    member: PlannedJob,
    status: TraceStatus,
    pending: deque[tuple[Chain, int]],
    statuses: dict[str, TraceStatus],
    observer: RunObserver,
) -> None:
    index = chain.members.index(member)
    rest = chain.members[index + 1 :]
    if not rest:
        return
    if status.status == JobStatus.OK:
        for other in rest:
            _skip(other, f"{EXCLUSIVE_SKIP}{member.job.key}", statuses, observer)
    elif status.status == JobStatus.INTERRUPTED:
        return
    else:
        pending.appendleft((chain, index + 1))


def _prepare_dir(job_dir: Path) -> None:
    """Start from an empty job dir: a rerun must not mix outputs of two attempts."""
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)


def _start(
    chain: Chain,
    member: PlannedJob,
    options: RunOptions,
    threads: int,
    gpus: list[str],
    observer: RunObserver,
    preloader: Preloader | None,
) -> _Active:
    job, job_dir = member.job, member.job_dir
    _prepare_dir(job_dir)
    attempt = uuid.uuid4().hex
    job_file = JobPaths(job_dir).job_file
    JobFile(attempt=attempt, job=job).write(job_file)
    env = envmod.worker_env(job, job_dir, os.environ, threads, ",".join(gpus) or None)
    argv = envmod.worker_argv(envmod.python_for(job.framework, options.interpreters), job_file)
    observer.job_started(job)
    child = None
    if preloader is not None:
        said = len(preloader.notes)
        child = preloader.spawn(job, job_file, env, job_dir, JobPaths(job_dir).worker_log)
        for note in preloader.notes[said:]:
            observer.notice(note)
    if child is not None:
        proc = WorkerProcess.watch(child)
    else:
        proc = WorkerProcess.spawn(argv, env, job_dir, JobPaths(job_dir).worker_log)
    return _Active(member, chain, proc, attempt, now_iso(), gpus)


def _check(act: _Active, options: RunOptions) -> int | None:
    """Return the exit code once the worker has ended (or was stopped), else None."""
    rc = act.proc.poll()
    if rc is not None:
        return rc
    job = act.planned.job
    now = time.monotonic()
    if now - act.proc.started > job.timeout_s:
        act.stop_reason = StopReason(StopKind.TIMEOUT, f"no result after {job.timeout_s:g} s")
    elif now >= act.next_sample:
        act.next_sample = now + options.sample_s
        sample = act.proc.sample()
        rss = sample.rss_bytes
        if job.max_rss_gb is not None and rss > job.max_rss_gb * GiB:
            limit = f"max_rss_gb {job.max_rss_gb:g}"
            why = f"worker tree RSS {rss / GiB:.2f} GiB exceeded {limit}"
            if sample.heaviest is not None and sample.processes > 1:
                who = describe_process(sample.heaviest)
                why += f" (the most: {who}, {sample.heaviest_rss_bytes / GiB:.2f} GiB)"
            act.stop_reason = StopReason(StopKind.MEMORY, why)
    if act.stop_reason is None:
        return None
    return -1  # the caller's _finish stops the tree and reads the real exit code


def _finish(act: _Active, options: RunOptions, stop: _Stop) -> TraceStatus:
    if act.stop_reason is not None:
        act.proc.terminate(options.kill_grace_s)
    else:
        act.proc.kill_leftovers()  # a clean exit may still leave compile workers behind
    rc = act.proc.returncode if act.proc.returncode is not None else -9
    return _seal(act, rc, stop)


def _seal(act: _Active, rc: int, stop: _Stop) -> TraceStatus:
    job, job_dir = act.planned.job, act.planned.job_dir
    reported = read_status(job_dir)
    if reported is not None and reported.attempt != act.attempt:
        reported = None
    phase = interrupted_phase(JobPaths(job_dir).phase_log)
    if reported is not None and (act.stop_reason is None or reported.status == JobStatus.OK):
        status = reported
    else:
        outcome = classify_exit(rc, act.stop_reason, JobPaths(job_dir).worker_log, phase)
        status = base_status(
            job, act.attempt, outcome.status, reason=outcome.reason, signal=outcome.signal
        )
    lost = act.proc.handle.lost if isinstance(act.proc.handle, ForkedChild) else None
    if lost is not None:
        status.reason = f"{status.reason}: {lost}" if status.reason else lost
    status.started_at = status.started_at or act.started_at
    status.finished_at = now_iso()
    status.duration_s = round(time.monotonic() - act.proc.started, 3)
    status.exit_code = rc
    status.tree_peak_rss_bytes = act.proc.peak_rss_bytes or None
    status.log_path = str(JOB.worker_log)
    # Scratch space goes first: on a full disk it is what lets the status be written.
    shutil.rmtree(JobPaths(job_dir).tmp, ignore_errors=True)
    shutil.rmtree(JobPaths(job_dir).rpc, ignore_errors=True)
    # The worker tree is gone: a write it was killed in the middle of will never finish.
    # `analyze` (another process, never the worker) may be writing an earlier attempt's
    # analyses.
    remove_orphaned_temps(job_dir, skip=[JobPaths(job_dir).analyses])
    return _save(job_dir, status, stop)


def _interrupt_all(
    active: list[_Active],
    stop: _Stop,
    options: RunOptions,
    statuses: dict[str, TraceStatus],
    observer: RunObserver,
) -> None:
    for act in active:
        act.stop_reason = StopReason(StopKind.INTERRUPT, stop.why)
        act.proc.sample()
        act.proc.signal_tree(signal.SIGTERM)
    deadline = time.monotonic() + options.kill_grace_s
    while time.monotonic() < deadline and any(a.proc.alive() for a in active):
        time.sleep(0.05)
    for act in active:
        act.proc.kill_leftovers()
        rc = act.proc.returncode if act.proc.returncode is not None else -9
        status = _seal(act, rc, stop)
        statuses[act.planned.job.key] = status
        observer.job_finished(act.planned.job, status)
