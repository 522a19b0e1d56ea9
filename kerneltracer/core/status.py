"""``_TRACE_STATUS.json``: the versioned record of how a job ended, and the bypass check.

The file is written last and atomically (worker first, then sealed by the orchestrator).
A job is complete only if its status says ok, matches the current request, and every
output it lists still exists with the recorded size and content hash. Hashing every output
of a large run on each plan would be slow, so, like git's index, a file whose size and
mtime_ns are unchanged is trusted; a changed mtime re-hashes it, and ``verify=True``
re-hashes everything.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import JOB, JobPaths
from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import SMALL_FILE, read_input
from kerneltracer.jsonio import atomic_write_bytes, sha256_file


class JobStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    OOM = "oom"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    UNSUPPORTED = "unsupported"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"


# Ends that mean the job did not do its work and the run should report failure.
FAILURE_STATUSES = frozenset(
    {JobStatus.FAILED, JobStatus.OOM, JobStatus.TIMEOUT, JobStatus.CRASHED, JobStatus.INTERRUPTED}
)


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    message: str
    root_cause: str  # the one line a user reads first
    location: str | None = None  # file:line in function, innermost frame
    phase: str | None = None


class OutputFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    path: str  # relative to the job dir
    size: int
    sha256: str
    mtime_ns: int
    # An ArtefactKind value (kerneltracer.core.artefacts); None: not recorded (older
    # workers), readers derive it from the path.
    kind: str | None = None


class TraceStatus(BaseModel):
    # Unknown fields are kept so a newer writer's additions survive an older reader.
    model_config = ConfigDict(extra="allow")

    schema_version: Literal[1] = 1
    status: JobStatus
    job_key: str
    attempt: str
    request: dict[str, Any]
    request_hash: str
    tracer: str
    tracer_version: str
    model: dict[str, Any]
    framework: str
    device: str
    resolved_device: str | None = None
    mode: str
    phase: str = "prefill"
    dtype: str
    # "fake": the model was built from its config on fake tensors; nothing it timed is a
    # measurement of the model.
    weights: str = "real"
    options_hash: str
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    phases: dict[str, float] = {}
    peak_rss_bytes: int | None = None
    tree_peak_rss_bytes: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    reason: str | None = None  # one line: why this status (root cause, skip reason, ...)
    error: ErrorInfo | None = None
    log_path: str = str(JOB.worker_log)
    versions: dict[str, str | None] = {}
    host: str = ""
    pid: int | None = None
    outputs: list[OutputFile] = []
    summary: dict[str, Any] = {}
    # The example inputs the worker built: name, kind, shape, dtype (+ cache details).
    inputs: list[dict[str, Any]] = []


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def base_status(job: JobSpec, attempt: str, status: JobStatus, **fields: Any) -> TraceStatus:
    """A status for ``job`` with every request field filled in from the spec."""
    values: dict[str, Any] = {
        "status": status,
        "job_key": job.key,
        "attempt": attempt,
        "request": job.request,
        "request_hash": job.request_hash,
        "tracer": job.tracer,
        "tracer_version": job.tracer_version,
        "model": job.model.model_dump(),
        "framework": job.framework,
        "device": job.device,
        "mode": job.mode,
        "phase": job.phase,
        "dtype": job.dtype,
        "weights": job.model.weights,
        "options_hash": job.options_hash,
        "host": socket.gethostname(),
    }
    values.update(fields)
    return TraceStatus.model_validate(values)


def write_status(job_dir: Path, status: TraceStatus) -> None:
    data = status.model_dump_json(indent=2, exclude_none=False).encode() + b"\n"
    atomic_write_bytes(JobPaths(job_dir).status, data)


def read_status(job_dir: Path) -> TraceStatus | None:
    """The job's status, or None if missing, truncated, corrupt or of another schema."""
    try:
        data = read_input(JobPaths(job_dir).status, SMALL_FILE, what="status file", gzip=False)
    except InputFileError:
        return None
    try:
        return TraceStatus.model_validate_json(data)
    except ValidationError:
        return None


def describe_output(job_dir: Path, rel: str, kind: str | None = None) -> OutputFile:
    path = job_dir / rel
    st = path.stat()
    return OutputFile(
        path=rel, size=st.st_size, sha256=sha256_file(path), mtime_ns=st.st_mtime_ns, kind=kind
    )


def incomplete_reason(
    status: TraceStatus | dict[str, Any] | None,
    job: JobSpec,
    job_dir: str | Path,
    verify: bool = False,
) -> str | None:
    """None if the job is complete for this request, else why it must run again."""
    raw = status.model_dump(mode="json") if isinstance(status, TraceStatus) else status
    if raw is None:
        return "no valid status file"
    try:
        if raw["status"] != JobStatus.OK.value:
            return f"last run ended {raw['status']}"
        if raw["request_hash"] != job.request_hash:
            previous = raw.get("request") or {}
            changed = sorted(k for k, v in job.request.items() if previous.get(k) != v)
            return f"request changed ({', '.join(changed) or 'format'})"
        for out in raw["outputs"]:
            rel = out["path"]
            if rel.startswith("/") or ".." in rel.split("/"):
                return "no valid status file"
            full = os.path.join(job_dir, rel)
            why = _output_changed(full, rel, out["size"], out["sha256"], out["mtime_ns"], verify)
            if why is not None:
                return why
    except (KeyError, TypeError, AttributeError):
        return "no valid status file"
    return None


def _output_changed(
    path: str, rel: str, size: int, sha256: str, mtime_ns: int, verify: bool
) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return f"output {rel} is missing"
    if st.st_size != size:
        return f"output {rel} changed size"
    if (verify or st.st_mtime_ns != mtime_ns) and sha256_file(Path(path)) != sha256:
        return f"output {rel} changed content"
    return None
