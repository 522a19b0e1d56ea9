"""The worker's phase log, in the Start/End record format the records analysis reads.

One line per record: ``<timestamp_ns> <tid> [<tracer>] [<phase>] Start|End``. Lines are
appended and flushed as they happen, so a killed worker's log still shows the open phase.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path


class PhaseLog:
    def __init__(self, path: Path, node: str) -> None:
        self.path = path
        self.node = node
        self.durations: dict[str, float] = {}
        self.current: str | None = None
        self.failed: str | None = None  # the phase an exception escaped from

    def _record(self, phase: str, et: str) -> int:
        ts = time.time_ns()
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{ts} {threading.get_native_id()} [{self.node}] [{phase}] {et}\n")
        return ts

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous = self.current
        self.current = name
        start = self._record(name, "Start")
        try:
            yield
        except BaseException:
            self.failed = self.failed or name
            raise
        finally:
            end = self._record(name, "End")
            self.durations[name] = round((end - start) / 1e9, 6)
            self.current = previous
