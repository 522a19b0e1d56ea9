"""Progress of a long read on a terminal: bytes and lines read, rate, time left.

Shown only when stderr is a terminal and only once the read has gone on for
:data:`SHOW_AFTER_S` (a quick command prints nothing); the readers report through
:func:`kerneltracer.inputguard.note_read`, this draws it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from kerneltracer.inputguard import observing_reads

SHOW_AFTER_S = 2.0


class _Bar:
    def __init__(self, console: Console, what: str, total: int | None) -> None:
        self.console = console
        self.what = what
        self.total = total
        self.started = time.monotonic()
        self.bytes = 0
        self.lines = 0
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, nbytes: int, nlines: int) -> None:
        self.bytes += nbytes
        self.lines += nlines
        if self.progress is None:
            if time.monotonic() - self.started < SHOW_AFTER_S:
                return
            self.progress = Progress(
                TextColumn(f"[bold]{self.what}"),
                BarColumn(),
                DownloadColumn(),
                TextColumn("{task.fields[lines]:,} lines"),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("", total=self.total, lines=0)
        if self.task is not None:
            self.progress.update(self.task, completed=self.bytes, lines=self.lines)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.refresh()
            self.progress.stop()


@contextmanager
def read_progress(what: str, total: int | None = None) -> Iterator[None]:
    """A bar for the reads inside the block (``total``: bytes expected, when known)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    bar = _Bar(console, what, total or None)
    try:
        with observing_reads(bar):
            yield
    finally:
        bar.close()


def input_bytes(paths: Iterable[Path]) -> int | None:
    """Bytes of the logs under ``paths`` (files, or the ``*.log`` files of directories);
    None when that cannot be known cheaply."""
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
