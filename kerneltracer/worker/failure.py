"""Turn an exception raised in the worker into a job status and a root-cause line."""

from __future__ import annotations

import os
import re
import traceback

from kerneltracer.errors import UnsupportedError
from kerneltracer.status import ErrorInfo, JobStatus

# Allocator failures that surface as RuntimeError rather than MemoryError.
_ALLOCATOR = re.compile(
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
        or _ALLOCATOR.search(_first_line(e))
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


# A line vLLM's child processes print: "(EngineCore pid=12) ERROR 11-22 07:49:32 [core.py:1510] msg"
_ENGINE_LINE = re.compile(
    r"^\((?P<proc>[A-Za-z_:-]*(?:EngineCore|Worker)[^)]*?)(?: pid=\d+)?\) "
    r"(?:ERROR|CRITICAL) \S+ \S+ \[[^\]]*\] ?(?P<msg>.*)$"
)
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Fault)\b.*"
)


def engine_root_cause(log_text: str) -> tuple[str, str] | None:
    """The last exception an engine process logged, and which process: vLLM's own error
    in the worker is only "see root cause above", the cause is in the children's stderr."""
    found = None
    for line in log_text.splitlines():
        m = _ENGINE_LINE.match(line)
        if m is None:
            continue
        msg = m.group("msg").strip()
        if _EXCEPTION_LINE.match(msg):
            found = (msg[:400], m.group("proc"))
    return found


def with_engine_cause(
    status: JobStatus, info: ErrorInfo, log_text: str
) -> tuple[JobStatus, ErrorInfo]:
    """Prefer the engine's own exception over the generic one vLLM's client raised.

    Only when the exception was raised inside vLLM: a failure of ours (a tracer's check, a
    missing file) keeps its own cause even if an engine process logged an error earlier.
    """
    if f"{os.sep}vllm{os.sep}" not in (info.location or ""):
        return status, info
    cause = engine_root_cause(log_text)
    if cause is None:
        return status, info
    line, proc = cause
    if status == JobStatus.FAILED and _ALLOCATOR.search(line):
        status = JobStatus.OOM
    return status, info.model_copy(update={"root_cause": f"{line} (in {proc})"})
