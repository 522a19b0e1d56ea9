"""Progress of a long read on a terminal: events read, their rate and the time left.

The readers (the timeline's trace loader) call back with how far they are; this is what
the CLI passes them. Nothing shows for reads shorter than ``DELAY_S`` (most traces) nor
when stderr is not a terminal (logs, pipes, CI), and rich is imported only when a bar is
actually drawn, so short commands pay nothing for it.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

DELAY_S = 2.0


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
        bar, task = self._open_bar()
        rate = position.events / elapsed if elapsed > 0 else 0.0
        bar.update(
            task,
            completed=position.done_bytes,
            total=max(position.total_bytes, 1),
            events=f"{position.events:,}",
            rate=f"{rate:,.0f}",
        )
        bar.refresh()

    def _open_bar(self) -> tuple[Progress, TaskID]:
        if self._bar is not None and self._task is not None:
            return self._bar, self._task
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn(f"reading {escape(self._label)}"),
            BarColumn(),
            TextColumn("{task.fields[events]} events, {task.fields[rate]} events/s"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            auto_refresh=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("", total=1, events="0", rate="0")
        return self._bar, self._task

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar, self._task = None, None

    def __enter__(self) -> ReadProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._close_bar()
