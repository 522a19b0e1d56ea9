"""The process's heap: free pages handed back to the system (glibc's ``malloc_trim``;
elsewhere nothing), the cycle collector paused while a big input is worked on."""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache


def release_free_heap() -> None:
    """Hand the heap's free pages back to the system (glibc; elsewhere nothing happens).

    The batches' short-lived objects are freed around the long-lived column chunks and
    packed texts, so glibc keeps the holes: a 3M-event trace's load left 447 MiB resident
    of which 138 MiB was free heap. Trimming after the load and the op attribution keeps
    the resident size to what is in use, and a forked writer does not start from the holes.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


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


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim with
        return None
    return trim


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause the cycle collector (as it was before, after): a trace's analysis and its
    InferScope events make hundreds of thousands of objects and no cycles that outlive
    them, yet every burst of allocations started a collection re-scanning every live
    object, the CLI's imported modules included (~7% of the CPU at 218k events, ~2 s at
    3M; half the event building on a 100k-event trace). Reference counting still frees all
    of it; cycles made meanwhile wait for the next collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
