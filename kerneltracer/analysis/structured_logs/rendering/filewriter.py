"""Write a render's many small output files from a few threads.

A render writes thousands of pages (one per graph, code dump, metrics record). Creating a
file costs far more time in the kernel than producing its bytes, and ``open``/``write``
release the GIL, so a few writer threads let the next pages be rendered while earlier ones
are created. Bytes in flight are bounded; the first write error is re-raised by
``close()``, which waits for every write (the staged output dir is renamed only after).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

_WORKERS = 4
_MAX_IN_FLIGHT = 64 << 20
_FILE_MODE = 0o644


class FileWriter:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="render-write")
        self._budget = threading.BoundedSemaphore(_MAX_IN_FLIGHT >> 16)  # 64 KiB units
        self._pending: list[Future[None]] = []

    def write(self, path: Path, data: bytes) -> None:
        units = min(max(1, len(data) >> 16), _MAX_IN_FLIGHT >> 16)
        for _ in range(units):
            self._budget.acquire()
        self._pending.append(self._pool.submit(self._write, path, data, units))
        if len(self._pending) >= 4096:
            self._reap()

    def _write(self, path: Path, data: bytes, units: int) -> None:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        finally:
            for _ in range(units):
                self._budget.release()

    def _reap(self) -> None:
        done = [f for f in self._pending if f.done()]
        self._pending = [f for f in self._pending if not f.done()]
        for f in done:
            f.result()

    def close(self) -> None:
        """Wait for every write; raise the first failure."""
        try:
            for f in self._pending:
                f.result()
        finally:
            self._pending = []
            self._pool.shutdown(wait=True)
