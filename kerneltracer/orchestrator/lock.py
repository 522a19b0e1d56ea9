"""An exclusive lock on a run dir, so two orchestrators never write the same jobs.

``flock`` is released by the kernel when the holder dies, even by SIGKILL (on a shared
file system, by the lock server when the holder's node is gone), so a stale lock file never
blocks a rerun; the pid/host written inside only serve the error message. The lock is also
how a reader on any host tells a running orchestrator from a killed one
(:func:`kerneltracer.core.runlock.lock_held`): such a probe holds a shared lock for an
instant, so taking the lock retries for a moment before it calls the run dir busy.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from kerneltracer.errors import RunDirLockedError

_PROBE_RETRIES = 20  # x 50 ms: far longer than a reader's probe holds its shared lock


class RunDirLock:
    def __init__(self, path: Path) -> None:
        """``path``: the lock file, ``RunPaths.lock(shard_tag)``."""
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _lock_now(fd):
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown process"
            os.close(fd)
            raise RunDirLockedError(
                f"run dir {self.path.parent} is in use by another kerneltracer ({holder}); "
                "wait for it to finish or choose another output_dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _lock_now(fd: int) -> bool:
    for attempt in range(_PROBE_RETRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < _PROBE_RETRIES:
                time.sleep(0.05)
    return False
