"""Tie the worker's life to the orchestrator's, and take its whole tree down with it.

The orchestrator spawns each worker as the leader of a new process group. If the
orchestrator dies (even by SIGKILL), the kernel sends this worker SIGTERM through the
parent-death signal; on SIGTERM the worker kills every descendant, then its group.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from types import FrameType

import psutil

from kerneltracer.worker import shm

_PR_SET_PDEATHSIG = 1
CHILD_GRACE_S = 3.0


def install(expected_parent: int | None, last_words: Callable[[str], None] | None = None) -> None:
    """Arm the parent-death signal and the SIGTERM handler.

    ``last_words(signal_name)`` runs first on SIGTERM, e.g. to record that the process was
    interrupted: when a whole Slurm job or process tree is signalled, the worker may die
    before the orchestrator learns why, and the file is then the only witness.
    """

    def on_term(signum: int, frame: FrameType | None) -> None:
        if last_words is not None:
            with contextlib.suppress(BaseException):
                last_words(signal.Signals(signum).name)
        _take_tree_down(signum, frame)

    signal.signal(signal.SIGTERM, on_term)
    if not arm_parent_death(signal.SIGTERM, expected_parent):
        on_term(signal.SIGTERM, None)


def arm_parent_death(sig: int, expected_parent: int | None) -> bool:
    """Have the kernel send ``sig`` to this process when its parent dies (even by SIGKILL).

    Returns False when the parent is already gone: it died before the signal was armed, so
    nobody will send it and the caller must act now. Off Linux nothing is armed (the
    parent's own group kill still applies) and this returns True.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    return expected_parent is None or os.getppid() == expected_parent


def _take_tree_down(signum: int, frame: FrameType | None) -> None:
    """SIGTERM the descendants, SIGKILL what outlives a short grace, then the group.

    The grace lets an engine (vLLM's EngineCore) shut its workers down and unlink its
    shared memory; it stays below the orchestrator's own grace before its SIGKILL.
    """
    segments: set[str] = set()
    with contextlib.suppress(psutil.Error):
        me = psutil.Process()
        children = me.children(recursive=True)
        segments = shm.mapped_segments([me, *children])
        stop_processes(children, CHILD_GRACE_S)
    with contextlib.suppress(OSError, psutil.Error):
        shm.remove_orphans(segments, ignore_pids={os.getpid()})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGTERM)


def stop_processes(procs: list[psutil.Process], grace_s: float) -> None:
    """SIGTERM all at once (each may tear itself down cleanly), SIGKILL what outlives grace."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=1.0)
