"""Worker lifecycle: read JOB.json, load, warm up, trace, write, then the status — last.

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

from kerneltracer.errors import UnsupportedError
from kerneltracer.jobs import ENV_ORCHESTRATOR_PID, PHASE_LOG, WORKER_LOG, JobSpec
from kerneltracer.jsonio import read_json
from kerneltracer.status import (
    JobStatus,
    TraceStatus,
    base_status,
    describe_output,
    now_iso,
    write_status,
)
from kerneltracer.tracers.registry import get_tracer
from kerneltracer.worker import lifeline
from kerneltracer.worker.failure import classify_exception, with_engine_cause
from kerneltracer.worker.phases import PhaseLog

if TYPE_CHECKING:
    from kerneltracer.tracers.base import Tracer
    from kerneltracer.worker.context import ExecutionContext

log = logging.getLogger("kerneltracer.worker")

EXIT_CODES = {JobStatus.OK: 0, JobStatus.FAILED: 1, JobStatus.UNSUPPORTED: 3, JobStatus.OOM: 4}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kerneltracer.worker JOB.json", file=sys.stderr)
        return 2
    job_file = Path(argv[0]).resolve()
    data = read_json(job_file)
    job, attempt, job_dir = JobSpec.model_validate(data["job"]), data["attempt"], job_file.parent
    phases = PhaseLog(job_dir / PHASE_LOG, node=job.tracer)

    def last_words(signame: str) -> None:
        where = f" during {phases.current}" if phases.current else ""
        reason = f"worker received {signame}{where}"
        fields = {"reason": reason, "phases": phases.durations, "pid": os.getpid()}
        write_status(job_dir, base_status(job, attempt, JobStatus.INTERRUPTED, **fields))

    parent = os.environ.get(ENV_ORCHESTRATOR_PID)
    lifeline.install(int(parent) if parent else None, last_words)
    faulthandler.enable()  # a segfault prints the Python stack into worker.log
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    status = run_job(job, attempt, job_dir, phases)
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
    os._exit(EXIT_CODES.get(status.status, 1))


def run_job(job: JobSpec, attempt: str, job_dir: Path, phases: PhaseLog) -> TraceStatus:
    started, t0 = now_iso(), time.monotonic()
    fields: dict[str, Any] = {"started_at": started, "pid": os.getpid()}
    ctx = None
    try:
        cls = get_tracer(job.tracer)
        tracer = cls(cls.Options.model_validate(job.options))
        _check_phase(cls, job)
        from kerneltracer.worker.context import load_context

        with phases.phase("load"):
            ctx = load_context(job, job_dir, tracer.engine_settings(job_dir))
        log.info("loaded %s on %s (%s)", job.model.display, ctx.device, ctx.dtype)
        if ctx.workload is not None:
            from kerneltracer.worker.inputs import describe

            fields["inputs"] = describe(ctx.workload)
        with phases.phase("warmup"):
            tracer.warmup(ctx)
        with phases.phase("trace"):
            traced = tracer.trace(ctx)
        with phases.phase("write"):
            result = tracer.write(ctx, traced, job_dir)
            fields["outputs"] = [
                describe_output(job_dir, rel, cls.kind_of(rel)) for rel in result.outputs
            ]
        fields["summary"] = result.summary
        status = JobStatus.OK
    except BaseException as exc:
        phase = phases.failed or phases.current
        log.exception("job %s failed in phase %s", job.key, phase)
        status, error = classify_exception(exc, phase)
        if job.framework == "vllm":
            status, error = with_engine_cause(status, error, _log_text(job_dir))
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


def _check_phase(cls: type[Tracer], job: JobSpec) -> None:
    if job.phase not in cls.phases:
        raise UnsupportedError(
            f"{cls.name} cannot trace phase {job.phase} (it can: {', '.join(sorted(cls.phases))})"
        )


def _close(ctx: ExecutionContext | None, job: JobSpec, phases: PhaseLog) -> None:
    """Stop what the loader started (a loader that fails cleans up after itself)."""
    if ctx is None or ctx.close is None:
        return
    try:
        with phases.phase("shutdown"):
            ctx.close()
    except Exception:
        log.exception("stopping the engine of %s failed", job.key)


def _log_text(job_dir: Path) -> str:
    try:
        with open(job_dir / WORKER_LOG, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - (4 << 20)))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _peak_rss() -> int:
    # ru_maxrss is in KiB on Linux.
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _versions() -> dict[str, str | None]:
    from kerneltracer import __version__

    out: dict[str, str | None] = {"kerneltracer": __version__, "python": sys.version.split()[0]}
    for name in ("torch", "transformers", "vllm"):
        mod = sys.modules.get(name)
        out[name] = getattr(mod, "__version__", None) if mod else None
    torch = sys.modules.get("torch")
    if torch is not None:
        out["cuda"] = getattr(torch.version, "cuda", None)
    return out
