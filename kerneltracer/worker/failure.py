"""Turn an exception raised in the worker into a job status and a root-cause line."""

from __future__ import annotations

import re
from pathlib import Path

import psutil

from kerneltracer.core.oserrors import os_error_status, os_error_text
from kerneltracer.core.rootcause import exception_line, innermost, links, location, message
from kerneltracer.core.status import ErrorInfo, JobStatus
from kerneltracer.errors import LibraryError, UnsupportedError
from kerneltracer.worker.dependencies import missing_dependency

# Allocator failures that surface as RuntimeError rather than MemoryError.
ALLOCATOR_ERROR = re.compile(
    r"DefaultCPUAllocator: can't allocate memory|CUDA out of memory|out of memory|"
    r"OutOfMemoryError|HIP out of memory|Cannot allocate memory|std::bad_alloc",
    re.IGNORECASE,
)

# The size of the request an allocator refused: CPU (bytes) and CUDA (with units), and the
# device's capacity when CUDA says it.
_REQUEST = re.compile(
    r"you tried to allocate (\d+) bytes|Tried to allocate ([\d.]+) ?([KMGTPE]i?B)", re.IGNORECASE
)
_CAPACITY = re.compile(r"total capacity of ([\d.]+) ?([KMGTPE]i?B)", re.IGNORECASE)
_UNITS = {u: 1024**i for i, u in enumerate("BKMGTPE")}


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
    too_large = None if ours is not None else _beyond_capacity(chain)
    if too_large is not None:
        # Not out of memory: no amount of free memory would have served it.
        return JobStatus.FAILED, ErrorInfo(
            type=type(exc).__name__,
            message=message(exc),
            root_cause=too_large,
            location=location(root) or location(exc),
            phase=phase,
        )
    library = next((e for e in chain if isinstance(e, LibraryError)), None)
    if ours is not None:
        status = JobStatus.UNSUPPORTED
        # Our own refusal is written for people; the library error it wraps (a pydantic
        # ValidationError listing 400 architectures) stays in the message and the log.
        root = ours
    elif library is not None:
        # Still a failure, but the reason says whose: the library's, at its frame.
        status, root = JobStatus.FAILED, library
    elif any(
        isinstance(e, MemoryError)
        or type(e).__name__ == "OutOfMemoryError"
        or ALLOCATOR_ERROR.search(message(e))
        for e in chain
    ):
        status = JobStatus.OOM
    else:
        status = JobStatus.FAILED
    # The library's error is located where it was raised (the frame its reason names).
    where = chain[-1] if library is not None and ours is None else root
    info = ErrorInfo(
        type=type(exc).__name__,
        message=message(exc),
        root_cause=exception_line(root),
        location=location(where) or location(exc),
        phase=phase,
    )
    return status, info


def _who_needs(root: BaseException) -> str:
    """``HungarianMatcher requires it`` from transformers' text; '' for a bare import."""
    head = message(root).split(" requires the ", 1)
    return f"{head[0]} requires it" if len(head) == 2 and head[0] else ""


def _beyond_capacity(chain: list[BaseException]) -> str | None:
    """Why an allocation was refused when it asked for more than the device has at all
    (a config with ``vocab_size: 10**9``): the request's size against the capacity, CUDA's
    from its message, the CPU's physical memory plus swap. None: it could have fit, so
    memory ran out (``oom``)."""
    for exc in chain:
        text = message(exc)
        found = _REQUEST.search(text)
        if found is None:
            continue
        if found.group(1) is not None:
            request = int(found.group(1))
        else:
            request = int(float(found.group(2)) * _UNITS[found.group(3)[0].upper()])
        cap = _CAPACITY.search(text)
        if cap is not None:
            capacity = int(float(cap.group(1)) * _UNITS[cap.group(2)[0].upper()])
            where = "the GPU's total memory"
        else:
            capacity = psutil.virtual_memory().total + psutil.swap_memory().total
            where = "this machine's memory and swap"
        if request <= capacity:
            return None
        return (
            f"one allocation of {_size(request)} ({request:,} bytes) was refused: more than "
            f"{where} ({_size(capacity)}), so no memory ran out: the model asks for a tensor "
            "that large (from its config: a huge vocab_size, hidden_size or seq_len?)"
        )
    return None


def _size(n: int) -> str:
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
