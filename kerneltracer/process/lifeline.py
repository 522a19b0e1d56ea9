"""Tie the worker's life to the orchestrator's, and take its whole tree down with it.

The orchestrator spawns each worker as the leader of a new process group. If the
orchestrator dies (even by SIGKILL), the kernel sends this worker SIGTERM through the
parent-death signal; on SIGTERM the worker kills every descendant, then its group.

The worker is also a child subreaper (Linux): a process its job started that double-forks
and calls setsid (a daemon started by remote code) leaves the worker's group and would
re-parent to init, out of every tree walk; a subreaper receives it instead, so it stays a
descendant, and :func:`end_descendants` ends it when the job ends, ok or not. Elsewhere
(macOS, no subreapers) such a daemon can outlive its job: the group kill and the
supervisor's tree polling see only what stayed attached to the tree.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from types import FrameType

import psutil

from kerneltracer.process import shm

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36
CHILD_GRACE_S = 3.0
# Ending a child re-parents its own children to us (a subreaper): a few rounds take down a
# tree of any depth that does not keep forking while it is being ended.
_END_ROUNDS = 8


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
    _become_subreaper()
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


def set_name(name: str) -> None:
    """This process's name as ``ps -o comm`` and psutil's ``name()`` show it (Linux: up to 15
    bytes); elsewhere nothing changes."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def _become_subreaper() -> bool:
    """Have orphans of this process's descendants re-parent to it rather than to init.

    True when armed; False off Linux (or on a kernel without it, before 3.4), where a
    descendant that double-forks is no longer ours to find.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def end_descendants(grace_s: float) -> list[str]:
    """End every descendant: SIGTERM, then SIGKILL what outlives ``grace_s``; reap them.

    Returns ``name (pid N)`` of each process that was still running. As a subreaper, the
    orphans of a process ended here become our children, so each round looks again.
    """
    ended: list[str] = []
    for round_ in range(_END_ROUNDS):
        try:
            procs = psutil.Process().children(recursive=True)
        except psutil.Error:
            break
        if not procs:
            break
        ended += [d for d in map(_describe, procs) if d is not None]
        # Later rounds find orphans of processes already ended: no second full grace.
        stop_processes(procs, grace_s if round_ == 0 else min(grace_s, 0.5))
    return ended


def _describe(proc: psutil.Process) -> str | None:
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return f"{proc.name()} (pid {proc.pid})"
    except psutil.Error:
        return None


def _take_tree_down(signum: int, frame: FrameType | None) -> None:
    """SIGTERM the descendants, SIGKILL what outlives a short grace, then the group.

    The grace lets an engine (vLLM's EngineCore) shut its workers down and unlink its
    shared memory; it stays below the orchestrator's own grace before its SIGKILL.
    """
    segments: set[str] = set()
    with contextlib.suppress(psutil.Error):
        me = psutil.Process()
        segments = shm.mapped_segments([me, *me.children(recursive=True)])
    end_descendants(CHILD_GRACE_S)
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
