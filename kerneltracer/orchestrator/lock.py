"""An exclusive lock on a run dir, so two orchestrators never write the same jobs.

``flock`` is released by the kernel when the holder dies, even by SIGKILL, so a stale lock
file never blocks a rerun; the pid/host written inside only serve the error message.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path
from types import TracebackType

from kerneltracer.core.layout import lock_name
from kerneltracer.errors import RunDirLockedError


class RunDirLock:
    def __init__(self, run_dir: Path, name: str = lock_name()) -> None:
        self.path = run_dir / name
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
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
