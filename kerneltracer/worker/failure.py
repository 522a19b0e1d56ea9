"""Turn an exception raised in the worker into a job status and a root-cause line."""

from __future__ import annotations

import re
from pathlib import Path

from kerneltracer.core.oserrors import os_error_status, os_error_text
from kerneltracer.core.rootcause import exception_line, innermost, links, location, message
from kerneltracer.core.status import ErrorInfo, JobStatus
from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.dependencies import missing_dependency

# Allocator failures that surface as RuntimeError rather than MemoryError.
ALLOCATOR_ERROR = re.compile(
    r"DefaultCPUAllocator: can't allocate memory|CUDA out of memory|out of memory|"
    r"OutOfMemoryError|HIP out of memory|Cannot allocate memory|std::bad_alloc",
    re.IGNORECASE,
)


def classify_exception(
    exc: BaseException, phase: str | None, job_dir: Path | None = None
) -> tuple[JobStatus, ErrorInfo]:
    """The job's status and error for ``exc``; OS errors (a full disk...) read as
    :mod:`kerneltracer.core.oserrors` words them, at their file or else the job dir."""
    root = innermost(exc)
    chain = list(links(exc))  # every link a traceback shows: ours may sit mid-chain
    if isinstance(root, OSError) and root.errno is not None:
        text = os_error_text(root, root.filename if root.filename is not None else job_dir)
        info = ErrorInfo(
            type=type(exc).__name__,
            message=message(exc),
            root_cause=f"{type(root).__name__}: {text}",
            location=location(root) or location(exc),
            phase=phase,
        )
        return os_error_status(root), info
    missing = missing_dependency(exc)
    if missing is not None:
        # Not the model's failure: this interpreter lacks a package the step needs.
        return JobStatus.UNSUPPORTED, ErrorInfo(
            type=type(exc).__name__,
            message=message(exc),
            root_cause=missing.reason(_who_needs(root)),
            location=location(root) or location(exc),
            phase=phase,
            missing_dependency=missing.package,
            install=missing.install,
        )
    ours = next((e for e in chain if isinstance(e, UnsupportedError)), None)
    if ours is not None:
        status = JobStatus.UNSUPPORTED
        # Our own refusal is written for people; the library error it wraps (a pydantic
        # ValidationError listing 400 architectures) stays in the message and the log.
        root = ours
    elif any(
        isinstance(e, MemoryError)
        or type(e).__name__ == "OutOfMemoryError"
        or ALLOCATOR_ERROR.search(message(e))
        for e in chain
    ):
        status = JobStatus.OOM
    else:
        status = JobStatus.FAILED
    info = ErrorInfo(
        type=type(exc).__name__,
        message=message(exc),
        root_cause=exception_line(root),
        location=location(root) or location(exc),
        phase=phase,
    )
    return status, info


def _who_needs(root: BaseException) -> str:
    """``HungarianMatcher requires it`` from transformers' text; '' for a bare import."""
    head = message(root).split(" requires the ", 1)
    return f"{head[0]} requires it" if len(head) == 2 and head[0] else ""
