"""The worker's phase log, in the Start/End record format the records analysis reads.

One line per record: ``<timestamp_ns> <tid> [<tracer>] [<phase>] Start|End``. Lines are
appended and flushed as they happen, so a killed worker's log still shows the open phase.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path


class PhaseLog:
    def __init__(self, path: Path, node: str) -> None:
        self.path = path
        self.node = node
        self.durations: dict[str, float] = {}
        self.current: str | None = None
        self.since = 0.0  # time.monotonic() when the current phase started
        self.failed: str | None = None  # the phase an exception escaped from

    def _record(self, phase: str, et: str) -> int:
        ts = time.time_ns()
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{ts} {threading.get_native_id()} [{self.node}] [{phase}] {et}\n")
        return ts

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous, previous_since = self.current, self.since
        self.current, self.since = name, time.monotonic()
        start = self._record(name, "Start")
        try:
            yield
        except BaseException:
            self.failed = self.failed or name
            raise
        finally:
            end = self._record(name, "End")
            self.durations[name] = round((end - start) / 1e9, 6)
            self.current, self.since = previous, previous_since


# Held while the heartbeat speaks, and by every fork of this process (os.register_at_fork):
# a child forked from the worker (a rank) never inherits a lock the heartbeat's thread held
# mid-write (a stream's, psutil's), since that thread does not exist in the child to free it.
_speaking = threading.Lock()


def _reset_in_child() -> None:
    global _speaking
    _speaking = threading.Lock()


os.register_at_fork(
    before=lambda: _speaking.acquire(),
    after_in_parent=lambda: _speaking.release(),
    after_in_child=_reset_in_child,
)


class Heartbeat:
    """While a phase runs long, say so in the worker log every ``interval_s``, with the
    worker's RSS: a model that builds for minutes (``num_hidden_layers: 100000``) shows
    progress instead of silence until its timeout or memory ceiling."""

    def __init__(self, phases: PhaseLog, say: Callable[[str], None], interval_s: float) -> None:
        self.phases, self.say, self.interval_s = phases, say, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kt-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(self.interval_s):
            current, since = self.phases.current, self.phases.since
            if current is None:
                continue
            with _speaking, contextlib.suppress(psutil.Error):
                rss = me.memory_info().rss / 1024**3
                took = time.monotonic() - since
                self.say(f"phase {current} still running after {took:.0f} s (RSS {rss:.2f} GiB)")
