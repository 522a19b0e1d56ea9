"""The process supervisor: start a worker tree, watch it, end all of it, say how it ended.

Every isolated process of kerneltracer goes through here: the run's trace workers (spawned,
or forked by a preloaded server: :class:`ProcessHandle`), model downloads, replay workers,
and the analysis pool (which forks its own reusable workers but kills and explains them
with :func:`kill_group` and :func:`describe_exit`).

A worker is the leader of a new session/process group, so a signal to the group reaches
everything it spawned (inductor compile workers, vLLM EngineCore/Worker processes).
Descendants that leave the group (setsid) are tracked by polling the tree with psutil and
are killed individually, so nothing the worker started outlives the job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import psutil


class ProcessHandle(Protocol):
    """What the watcher needs of a worker's leader: a Popen, or a forked child whose exit
    code a preloaded server relays (kerneltracer.orchestrator.forkserver.ForkedChild)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def signal_name(returncode: int | None) -> str | None:
    """``SIGSEGV`` for an exit code of -11 (Popen's convention); None for a normal exit."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def describe_exit(returncode: int | None) -> str:
    """How a process ended, in the words every caller uses: ``exited with code 3``,
    ``killed by SIGSEGV (-11)``; a SIGKILL nobody of ours sent is most likely the kernel's
    OOM killer, and says so."""
    name = signal_name(returncode)
    if name is None:
        return (
            "exited without an exit code"
            if returncode is None
            else f"exited with code {returncode}"
        )
    if returncode == -signal.SIGKILL:
        return f"killed by {name} ({returncode}; out of memory? the kernel's OOM killer sends it)"
    return f"killed by {name} ({returncode})"


def kill_group(pid: int, sig: signal.Signals = signal.SIGKILL) -> None:
    """Signal a worker's whole process group; one already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@dataclass
class TreeSample:
    rss_bytes: int
    processes: int
    # The process of the tree with the most RSS, and its RSS: which rank of a multi-rank job
    # (or which engine process) took the memory.
    heaviest: psutil.Process | None = None
    heaviest_rss_bytes: int = 0


_RANK_PREFIX = "kt-rank-"


def rank_process_name(rank: int) -> str:
    """The name a rank of a multi-rank job gives its process (forked ranks share their
    launcher's command line: the name is what tells them apart)."""
    return f"{_RANK_PREFIX}{rank}"


def describe_process(proc: psutil.Process) -> str:
    """``rank 1 (pid 123)`` for a rank of a multi-rank job (its process is named
    ``kt-rank-1``), else ``python3 (pid 123)``."""
    try:
        name = proc.name()
    except psutil.Error:
        return f"pid {proc.pid}"
    rank = name.removeprefix(_RANK_PREFIX)
    if rank != name and rank.isdigit():
        return f"rank {rank} (pid {proc.pid})"
    return f"{name} (pid {proc.pid})"


@dataclass
class WorkerProcess:
    handle: ProcessHandle
    started: float
    known: dict[int, psutil.Process] = field(default_factory=dict)
    peak_rss_bytes: int = 0

    @classmethod
    def spawn(
        cls, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path
    ) -> WorkerProcess:
        with open(log_path, "ab", buffering=0) as log:
            popen = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        return cls.watch(popen)

    @classmethod
    def watch(cls, handle: ProcessHandle) -> WorkerProcess:
        proc = cls(handle=handle, started=time.monotonic())
        with contextlib.suppress(psutil.Error):
            proc.known[handle.pid] = psutil.Process(handle.pid)
        return proc

    @property
    def pid(self) -> int:
        return self.handle.pid

    @property
    def returncode(self) -> int | None:
        return self.handle.returncode

    def poll(self) -> int | None:
        return self.handle.poll()

    def sample(self) -> TreeSample:
        """RSS of the whole tree (worker + every live descendant ever seen)."""
        leader = self.known.get(self.pid)
        if leader is not None:
            with contextlib.suppress(psutil.Error):
                for child in leader.children(recursive=True):
                    self.known.setdefault(child.pid, child)
        rss = 0
        alive = 0
        heaviest: tuple[int, psutil.Process | None] = (0, None)
        for pid, proc in list(self.known.items()):
            try:
                # is_running() compares create times, so a reused pid is not ours.
                if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                own = proc.memory_info().rss
                rss += own
                alive += 1
                if own > heaviest[0]:
                    heaviest = (own, proc)
            except psutil.Error:
                self.known.pop(pid, None)
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        return TreeSample(rss, alive, heaviest[1], heaviest[0])

    def signal_tree(self, sig: signal.Signals) -> None:
        kill_group(self.pid, sig)
        for pid, proc in list(self.known.items()):
            if pid == self.pid:
                continue
            with contextlib.suppress(psutil.Error):
                if proc.is_running():
                    proc.send_signal(sig)

    def terminate(self, grace_s: float) -> None:
        """SIGTERM to the whole tree, SIGKILL whatever is left after ``grace_s``."""
        self.sample()
        self.signal_tree(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.05)
        self.kill_leftovers()

    def kill_leftovers(self) -> None:
        """SIGKILL every process of the tree still alive, and reap the leader."""
        self.sample()
        for _ in range(50):
            self.signal_tree(signal.SIGKILL)
            self.handle.poll()
            if not self.alive():
                break
            time.sleep(0.02)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.handle.wait(timeout=5)

    def alive(self) -> bool:
        """True while any process of the group or any tracked descendant lives."""
        self.handle.poll()
        try:
            os.killpg(self.pid, 0)
            return True
        except ProcessLookupError:
            pass
        except PermissionError:
            return True
        for proc in self.known.values():
            with contextlib.suppress(psutil.Error):
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    return True
        return False
