"""vLLM's failures: its engine processes log the real cause, the client raises a generic one."""

from __future__ import annotations

import os
import re

from kerneltracer.core.rootcause import is_exception_line
from kerneltracer.core.status import ErrorInfo, JobStatus
from kerneltracer.worker.failure import ALLOCATOR_ERROR

# A line vLLM's child processes print: "(EngineCore pid=12) ERROR 11-22 07:49:32 [core.py:1510] msg"
_ENGINE_LINE = re.compile(
    r"^\((?P<proc>[A-Za-z_:-]*(?:EngineCore|Worker)[^)]*?)(?: pid=\d+)?\) "
    r"(?:ERROR|CRITICAL) \S+ \S+ \[[^\]]*\] ?(?P<msg>.*)$"
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
        if is_exception_line(msg):
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
    if status == JobStatus.FAILED and ALLOCATOR_ERROR.search(line):
        status = JobStatus.OOM
    return status, info.model_copy(update={"root_cause": f"{line} (in {proc})"})
