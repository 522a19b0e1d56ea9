"""Worker lifecycle: read JOB.json, load, warm up (real weights), trace, write, then the
status — last.

Exit codes: 0 ok, 1 failed, 3 unsupported, 4 oom. The orchestrator trusts the status file,
not the code; the code only helps a human reading ``ps`` or a shell.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import resource
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.core.jobspec import JobFile, JobSpec
from kerneltracer.core.layout import JOB, JobPaths
from kerneltracer.core.status import (
    JobStatus,
    TraceStatus,
    base_status,
    describe_output,
    now_iso,
    write_status,
)
from kerneltracer.environ import KtEnv
from kerneltracer.errors import InputFileError, UnsupportedError
from kerneltracer.jsonio import remove_orphaned_temps
from kerneltracer.process import lifeline
from kerneltracer.tracers.registry import TRACERS
from kerneltracer.worker.failure import classify_exception
from kerneltracer.worker.frameworks.registry import get_loader, version_modules
from kerneltracer.worker.parallel.launch import RanksFailed
from kerneltracer.worker.phases import Heartbeat, PhaseLog

if TYPE_CHECKING:
    from kerneltracer.tracers.base import Tracer
    from kerneltracer.worker.frameworks.base import FrameworkLoader, RunContext

log = logging.getLogger("kerneltracer.worker")

_HEARTBEAT_S = 30.0  # a long phase says it is still running, in worker.log, this often
_EXIT_CODES = {JobStatus.OK: 0, JobStatus.FAILED: 1, JobStatus.UNSUPPORTED: 3, JobStatus.OOM: 4}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: python -m kerneltracer.worker {JOB.job_file}", file=sys.stderr)
        return 2
    job_file = Path(argv[0]).resolve()
    try:
        envelope = JobFile.read(job_file)
    except InputFileError as exc:  # no job to write a status for: say why, exit
        print(f"kerneltracer worker: {exc}", file=sys.stderr)
        return 2
    job, attempt, job_dir = envelope.job, envelope.attempt, job_file.parent
    phases = PhaseLog(JobPaths(job_dir).phase_log, node=job.tracer)

    def last_words(signame: str) -> None:
        where = f" during {phases.current}" if phases.current else ""
        reason = f"worker received {signame}{where}"
        fields = {"reason": reason, "phases": phases.durations, "pid": os.getpid()}
        write_status(job_dir, base_status(job, attempt, JobStatus.INTERRUPTED, **fields))
        # The handler interrupted this thread, perhaps mid-write, and the process ends here:
        # when Slurm signals the whole task, no orchestrator may live to sweep after us.
        remove_orphaned_temps(job_dir, skip=[JobPaths(job_dir).analyses])

    lifeline.install(KtEnv.read().orchestrator_pid, last_words)
    faulthandler.enable()  # a segfault prints the Python stack into worker.log
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    with Heartbeat(phases, log.info, _HEARTBEAT_S):
        status = _run_job(job, attempt, job_dir, phases)
    # Nothing the job started outlives it, a daemon of its remote code included (the worker
    # is its subreaper, see lifeline); before the status, which says the job is over.
    left = lifeline.end_descendants(lifeline.CHILD_GRACE_S)
    if left:
        log.warning("ended %d process(es) the job left running: %s", len(left), ", ".join(left))
    write_status(job_dir, status)
    log.info(
        "job %s ended %s%s",
        job.key,
        status.status.value,
        f": {status.reason}" if status.reason else "",
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: framework atexit hooks can crash or hang after the work is
    # done and the status is safely on disk.
    os._exit(_EXIT_CODES.get(status.status, 1))


def _run_job(job: JobSpec, attempt: str, job_dir: Path, phases: PhaseLog) -> TraceStatus:
    started, t0 = now_iso(), time.monotonic()
    fields: dict[str, Any] = {"started_at": started, "pid": os.getpid()}
    ctx: RunContext | None = None
    loader: FrameworkLoader | None = None
    try:
        cls = TRACERS[job.tracer]
        tracer = cls(cls.Options.model_validate(job.options))
        _check_tracer(cls, job)
        loader = get_loader(job.framework)
        kind_of = cls.kind_of
        if job.parallel and not job.model.fake_weights and not loader.own_ranks:
            # One process per rank, launched and watched from here (see launch).
            result, fields["notes"], kind_of = _launch_ranks(job, job_dir, tracer, phases)
        elif job.parallel and job.model.fake_weights:
            # Every rank role, each loaded, warmed up, traced and written in turn.
            result, fields["notes"], kind_of = _simulate_ranks(job, job_dir, tracer, phases)
        else:
            if job.parallel and cls.real_ranks_refusal is not None:
                # The framework's own ranks (vLLM's tensor_parallel_size).
                raise UnsupportedError(
                    f"{job.tracer} on real ranks is not built yet: {cls.real_ranks_refusal}"
                )
            if job.parallel:
                from functools import partial

                from kerneltracer.worker.parallel import simulate

                kind_of = partial(simulate.kind_of, cls)  # its ranks' files in rank_<r>/
            with phases.phase("load"):
                ctx = loader.load(job, job_dir, tracer)
            log.info("loaded %s on %s (%s)", job.model.display, ctx.device, ctx.dtype)
            if ctx.notes:
                fields["notes"] = ctx.notes
            inputs = ctx.describe_inputs()
            if inputs is not None:
                fields["inputs"] = inputs
            if not job.model.fake_weights:
                # Weights fake: nothing is timed, and a forward on fake tensors leaves no
                # lazy state behind that changes the next one (tests/fakeweights checks the
                # first traced step against one after a warm-up); the untraced forward was
                # 15-40% of such a job.
                with phases.phase("warmup"):
                    tracer.warmup(ctx)
            with phases.phase("trace"):
                traced = tracer.trace(ctx)
            with phases.phase("write"):
                result = tracer.write(ctx, traced, job_dir)
        fields["outputs"] = [describe_output(job_dir, rel, kind_of(rel)) for rel in result.outputs]
        fields["summary"] = result.summary
        status = JobStatus.OK
    except BaseException as exc:
        phase = phases.failed or phases.current
        log.exception("job %s failed in phase %s", job.key, phase)
        status, error = classify_exception(exc, phase, job_dir)
        if isinstance(exc, RanksFailed):
            status, error = exc.status, exc.error
        elif loader is not None:
            status, error = loader.refine_failure(status, error, job_dir)
        fields["error"] = error
        fields["reason"] = error.root_cause + (f" (during {error.phase})" if error.phase else "")
    _close(ctx, job, phases)
    fields["phases"] = phases.durations
    fields["finished_at"] = now_iso()
    fields["duration_s"] = round(time.monotonic() - t0, 3)
    fields["peak_rss_bytes"] = _peak_rss()
    fields["versions"] = _versions()
    if ctx is not None:
        fields["resolved_device"] = ctx.device
    return base_status(job, attempt, status, **fields)


def _simulate_ranks(job: JobSpec, job_dir: Path, tracer: Tracer[Any], phases: PhaseLog) -> Any:
    """A job with ``parallel``: see :mod:`kerneltracer.worker.parallel.simulate`. Returns
    its result, notes, and the kind of each output (a rank's files under ``rank_<r>/``)."""
    from functools import partial

    from kerneltracer.worker.parallel import simulate

    result, notes = simulate.run(job, job_dir, tracer, phases)
    return result, notes, partial(simulate.kind_of, type(tracer))


def _launch_ranks(job: JobSpec, job_dir: Path, tracer: Tracer[Any], phases: PhaseLog) -> Any:
    """A job with ``parallel`` and real weights: see :mod:`kerneltracer.worker.parallel.launch`."""
    from functools import partial

    from kerneltracer.worker.parallel import launch, simulate

    result, notes = launch.run(job, job_dir, tracer, phases)
    return result, notes, partial(simulate.kind_of, type(tracer))


def _check_tracer(cls: type[Tracer], job: JobSpec) -> None:
    """What the config checks too; a JOB.json written by hand must not get further."""
    if job.framework not in cls.frameworks:
        raise UnsupportedError(
            f"{cls.name} does not trace framework {job.framework} "
            f"(it traces: {', '.join(sorted(cls.frameworks))})"
        )
    if job.phase not in cls.phases:
        raise UnsupportedError(
            f"{cls.name} cannot trace phase {job.phase} (it can: {', '.join(sorted(cls.phases))})"
        )
    if job.model.fake_weights and cls.fake_weights_refusal is not None:
        raise UnsupportedError(f"{cls.name} with weights fake: {cls.fake_weights_refusal}")


def _close(ctx: RunContext | None, job: JobSpec, phases: PhaseLog) -> None:
    """Stop what the loader started (a loader that fails cleans up after itself)."""
    if ctx is None or not ctx.needs_shutdown:
        return
    try:
        with phases.phase("shutdown"):
            ctx.close()
    except Exception:
        log.exception("stopping the engine of %s failed", job.key)


def _peak_rss() -> int:
    # ru_maxrss is in KiB on Linux.
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _versions() -> dict[str, str | None]:
    from kerneltracer._version import __version__

    out: dict[str, str | None] = {"kerneltracer": __version__, "python": sys.version.split()[0]}
    for name in version_modules():
        mod = sys.modules.get(name)
        out[name] = getattr(mod, "__version__", None) if mod else None
    torch = sys.modules.get("torch")
    if torch is not None:
        out["cuda"] = getattr(torch.version, "cuda", None)
    return out
