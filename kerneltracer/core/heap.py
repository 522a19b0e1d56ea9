"""The process's heap: free pages handed back to the system (glibc's ``malloc_trim``;
elsewhere nothing), the cycle collector paused while a big input is worked on."""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import cast


def release_free_heap() -> None:
    """Hand the heap's free pages back to the system (glibc; elsewhere nothing happens).

    The batches' short-lived objects are freed around the long-lived column chunks and
    packed texts, so glibc keeps the holes: a 3M-event trace's load left 447 MiB resident
    of which 138 MiB was free heap. Trimming after the load and the op attribution keeps
    the resident size to what is in use, and a forked writer does not start from the holes.
    """
    trim = _malloc_trim()
    if trim is None:
        return
    free = _free_heap_bytes()
    if free is not None and free < TRIM_MIN_FREE:
        return
    trim(0)


# Fewer free heap bytes than this are not worth a trim. The pages handed back are faulted
# in again by the next phase's allocations: a 218k-event `timeline` made ~20 trims of 10-26
# MiB each, ~23k page faults and ~40 ms of its ~1.1 s of CPU, and only the one of 26 MiB
# (after the InferScope writer) lowered its peak. The holes the trims are for, at millions
# of events, are of 100 MiB and more.
TRIM_MIN_FREE = 20 << 20


# Work on fewer rows than this leaves holes too small to be worth the trim's system calls.
TRIM_MIN_ROWS = 1 << 18


def release_after(rows: int) -> None:
    """:func:`release_free_heap` after work on ``rows`` rows, if they were that many.

    glibc's mmap threshold rises to the largest block freed (up to 32 MiB), so a big
    trace's short-lived arrays come from the heap, each in pages an earlier trim handed
    back, and stay resident once freed: a phase of whole-trace temporaries left 20-30 MiB
    behind at 3M events. A trim costs ~2 ms there."""
    if rows >= TRIM_MIN_ROWS:
        release_free_heap()


# Not done: fixing glibc's mmap threshold (mallopt M_MMAP_THRESHOLD, 128 KiB), so that
# every freed whole-trace array is unmapped at once. At 3M events it lowered the peak by
# ~27 MiB (374 -> 347) but each such array then came back as fresh zeroed pages: 1.7M page
# faults instead of 0.4M, +3.2 s of system time on a ~25 s run.


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",  # free bytes in the heap's chunks
            "keepcost",
        )
    ]


def _free_heap_bytes() -> int | None:
    """The heap's free bytes (glibc's ``mallinfo2``); None where it cannot say."""
    info = _mallinfo2()
    return None if info is None else int(info().fordblks)


@cache
def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    try:
        info = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):  # not glibc, or one before 2.33
        return None
    info.restype = _MallInfo2
    info.argtypes = []
    return cast(Callable[[], _MallInfo2], info)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim with
        return None
    return trim


@contextmanager
def no_cyclic_gc(*, freeze: bool = False) -> Iterator[None]:
    """Pause the cycle collector (as it was before, after): a trace's analysis and its
    InferScope events make hundreds of thousands of objects and no cycles that outlive
    them, yet every burst of allocations started a collection re-scanning every live
    object, the CLI's imported modules included (~7% of the CPU at 218k events, ~2 s at
    3M; half the event building on a 100k-event trace). Reference counting still frees all
    of it; cycles made meanwhile wait for the next collection.

    ``freeze``: for a pause that lasts until the process ends (a CLI command's), the
    objects alive at its end are moved out of the collector's reach first (``gc.freeze``):
    the first allocation after it was enabled again started a collection of every object
    made meanwhile, ~13 ms at the end of a 218k-event `timeline`, just before the exit."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()
