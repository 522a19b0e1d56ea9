"""Write a render's many small output files from a background thread, in batches.

A render writes thousands of pages (one per graph, code dump, metrics record). Creating a
file costs far more time in the kernel than producing its bytes, and ``open``/``write``
release the GIL, so a writer thread lets the next pages be rendered while earlier ones
are created. Pages go to the thread in batches rather than one task per file: handing over
each file woke a thread per page, and on a loaded machine that GIL and futex traffic cost
more CPU than it saved (bench/bench_structured_logs.py: about 13% of a 65 MB log's CPU).
Bytes in flight are bounded; the first write error is re-raised by ``close()``, which waits
for every write (the staged output dir is renamed only after).
"""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path

_BATCH_FILES = 128
_BATCH_BYTES = 4 << 20
# Batches queued beyond the one being written: with _BATCH_BYTES, at most ~36 MiB in flight.
_QUEUED_BATCHES = 8
_FILE_MODE = 0o644

_Batch = list[tuple[Path, bytes]]


class FileWriter:
    def __init__(self) -> None:
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=_QUEUED_BATCHES)
        self._batch: _Batch = []
        self._bytes = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="render-write", daemon=True)
        self._thread.start()

    def write(self, path: Path, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        self._batch.append((path, data))
        self._bytes += len(data)
        if len(self._batch) >= _BATCH_FILES or self._bytes >= _BATCH_BYTES:
            self._hand_over()

    def _hand_over(self) -> None:
        batch, self._batch, self._bytes = self._batch, [], 0
        self._queue.put(batch)

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self._error is not None:
                continue  # drain: the producer sees the error on its next write or close
            try:
                for path, data in batch:
                    _write_file(path, data)
            except BaseException as exc:  # re-raised in the producer's thread
                self._error = exc

    def close(self) -> None:
        """Wait for every write; raise the first failure."""
        if self._batch:
            self._hand_over()
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error


def _write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
