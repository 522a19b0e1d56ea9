"""Progress of a long read on a terminal: how far, the rate and the time left.

Two kinds of reader report here. The timeline's trace loader calls back with its position
(events read, bytes of the file): :class:`ReadProgress`. The log readers (``logs``,
``compile-health``) report bytes and lines through :func:`kerneltracer.inputguard.note_read`:
:func:`read_progress`. Either way nothing shows for reads shorter than ``DELAY_S`` (most
inputs) nor when stderr is not a terminal (logs, pipes, CI), and rich is imported only when
a bar is actually drawn, so short commands pay nothing for it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kerneltracer.inputguard import observing_reads

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn, TaskID

DELAY_S = 2.0


def _open(label: str, columns: list[ProgressColumn], **fields: Any) -> tuple[Progress, TaskID]:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress, TextColumn

    bar = Progress(
        TextColumn(f"reading {escape(label)}"),
        *columns,
        console=Console(stderr=True),
        transient=True,
        auto_refresh=False,
    )
    bar.start()
    return bar, bar.add_task("", total=fields.pop("total", None), **fields)


class ReadPosition(Protocol):
    """What a reader reports (e.g. the timeline's ``LoadProgress``)."""

    @property
    def events(self) -> int: ...
    @property
    def done_bytes(self) -> int: ...
    @property
    def total_bytes(self) -> int: ...
    @property
    def done(self) -> bool: ...


class ReadProgress:
    """A callback for readers (``progress(position)``) and a context manager that clears
    the bar if the command ends mid-read; :meth:`start` names each input as it begins."""

    def __init__(self, *, delay_s: float | None = None) -> None:
        self._live = sys.stderr.isatty()
        self._delay_s = DELAY_S if delay_s is None else delay_s
        self._label = ""
        self._started = time.monotonic()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def start(self, label: str) -> None:
        """A new input begins (its bar, if one shows, restarts)."""
        self._label = label
        self._started = time.monotonic()
        self._close_bar()

    def __call__(self, position: ReadPosition) -> None:
        if not self._live:
            return
        if position.done:  # the read is over: the bar goes (the work after it has its own lines)
            self._close_bar()
            return
        elapsed = time.monotonic() - self._started
        if self._bar is None and elapsed < self._delay_s:
            return
        if self._bar is None or self._task is None:
            from rich.progress import BarColumn, TextColumn, TimeRemainingColumn

            self._bar, self._task = _open(
                self._label,
                [
                    BarColumn(),
                    TextColumn("{task.fields[events]} events, {task.fields[rate]} events/s"),
                    TextColumn("ETA"),
                    TimeRemainingColumn(),
                ],
                total=1,
                events="0",
                rate="0",
            )
        rate = position.events / elapsed if elapsed > 0 else 0.0
        self._bar.update(
            self._task,
            completed=position.done_bytes,
            total=max(position.total_bytes, 1),
            events=f"{position.events:,}",
            rate=f"{rate:,.0f}",
        )
        self._bar.refresh()

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar, self._task = None, None

    def __enter__(self) -> ReadProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._close_bar()


class _BytesBar:
    """The observer :func:`read_progress` installs: bytes and lines as readers note them."""

    def __init__(self, what: str, total: int | None, delay_s: float) -> None:
        self.what = what
        self.total = total
        self.delay_s = delay_s
        self.started = time.monotonic()
        self.bytes = 0
        self.lines = 0
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, nbytes: int, nlines: int) -> None:
        self.bytes += nbytes
        self.lines += nlines
        if self.bar is None or self.task is None:
            if time.monotonic() - self.started < self.delay_s:
                return
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self.bar, self.task = _open(
                self.what,
                [
                    BarColumn(),
                    DownloadColumn(),
                    TextColumn("{task.fields[lines]:,} lines"),
                    TransferSpeedColumn(),
                    TimeRemainingColumn(),
                ],
                total=self.total,
                lines=0,
            )
        self.bar.update(self.task, completed=self.bytes, lines=self.lines)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@contextmanager
def read_progress(what: str, total: int | None = None) -> Iterator[None]:
    """A bar for the reads inside the block that report through ``note_read`` (``total``:
    bytes expected, when known)."""
    if not sys.stderr.isatty():
        yield
        return
    bar = _BytesBar(what, total or None, DELAY_S)
    try:
        with observing_reads(bar):
            yield
    finally:
        bar.close()


def input_bytes(paths: Iterable[Path]) -> int | None:
    """Bytes of the logs under ``paths`` (files, or the ``*.log`` / ``*.txt`` files of
    directories); None when that cannot be known cheaply."""
    total = 0
    for p in paths:
        try:
            if p.is_file():
                total += p.stat().st_size
            elif p.is_dir():
                total += sum(f.stat().st_size for f in p.iterdir() if f.suffix in (".log", ".txt"))
        except OSError:
            return None
    return total or None
