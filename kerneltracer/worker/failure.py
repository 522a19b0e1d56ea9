"""Turn an exception raised in the worker into a job status and a root-cause line."""

from __future__ import annotations

import re
import traceback

from kerneltracer.errors import UnsupportedError
from kerneltracer.status import ErrorInfo, JobStatus

# Allocator failures that surface as RuntimeError rather than MemoryError.
ALLOCATOR_ERROR = re.compile(
    r"DefaultCPUAllocator: can't allocate memory|CUDA out of memory|out of memory|"
    r"OutOfMemoryError|HIP out of memory|Cannot allocate memory|std::bad_alloc",
    re.IGNORECASE,
)


def root_of(exc: BaseException) -> BaseException:
    """The innermost exception of a chain: explicit causes first, then implicit context."""
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else ""


def _location(exc: BaseException) -> str | None:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    f = frames[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def classify_exception(exc: BaseException, phase: str | None) -> tuple[JobStatus, ErrorInfo]:
    root = root_of(exc)
    chain = [exc, root]
    if any(isinstance(e, UnsupportedError) for e in chain):
        status = JobStatus.UNSUPPORTED
    elif any(
        isinstance(e, MemoryError)
        or type(e).__name__ == "OutOfMemoryError"
        or ALLOCATOR_ERROR.search(_first_line(e))
        for e in chain
    ):
        status = JobStatus.OOM
    else:
        status = JobStatus.FAILED
    line = f"{type(root).__name__}: {_first_line(root)}".rstrip(": ")
    info = ErrorInfo(
        type=type(exc).__name__,
        message=_first_line(exc),
        root_cause=line,
        location=_location(root) or _location(exc),
        phase=phase,
    )
    return status, info
