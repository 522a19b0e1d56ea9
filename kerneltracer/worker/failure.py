"""Turn an exception raised in the worker into a job status and a root-cause line."""

from __future__ import annotations

import re

from kerneltracer.core.rootcause import exception_line, innermost, location, message
from kerneltracer.errors import UnsupportedError
from kerneltracer.status import ErrorInfo, JobStatus

# Allocator failures that surface as RuntimeError rather than MemoryError.
ALLOCATOR_ERROR = re.compile(
    r"DefaultCPUAllocator: can't allocate memory|CUDA out of memory|out of memory|"
    r"OutOfMemoryError|HIP out of memory|Cannot allocate memory|std::bad_alloc",
    re.IGNORECASE,
)


def classify_exception(exc: BaseException, phase: str | None) -> tuple[JobStatus, ErrorInfo]:
    root = innermost(exc)
    chain = [exc, root]
    if any(isinstance(e, UnsupportedError) for e in chain):
        status = JobStatus.UNSUPPORTED
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
