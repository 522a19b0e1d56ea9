"""Interrupts: SIGINT and SIGTERM end a command through its cleanups, never around them.

Kept free of heavy imports: the CLI installs it around every command.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM reached a command: raised where it ran, so that every cleanup runs
    (worker process groups killed, in-flight work recorded ``interrupted``)."""

    def __init__(self, signame: str = "SIGINT") -> None:
        super().__init__(signame)
        self.signame = signame


def signal_of(exc: BaseException) -> str:
    """The signal behind an interrupt: SIGINT for a plain KeyboardInterrupt (Ctrl-C)."""
    return exc.signame if isinstance(exc, Interrupted) else "SIGINT"


@contextlib.contextmanager
def handling_signals(handler: Callable[[int, FrameType | None], Any]) -> Iterator[None]:
    """``handler`` gets SIGINT and SIGTERM inside the block, the previous handlers after it.
    Only the main thread may install handlers: elsewhere the block runs without."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def interrupt_on_signals() -> contextlib.AbstractContextManager[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread (a batch system or
    ``kill`` sends SIGTERM, whose default would end the process with no cleanup at all)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    return handling_signals(handler)


def default_signals() -> None:
    """In a forked worker: SIGINT and SIGTERM back to their defaults (the parent's handler
    would raise inside the work instead of ending the process)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
