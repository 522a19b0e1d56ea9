"""Run one function in a forked child while the parent goes on; collect its result later.

Writing the InferScope file is pure Python work on columns the parent already holds, and
it takes as long as all the other analyses and reports together. A forked child sees
those columns copy-on-write (no pickling of the trace), so on two or more cores the file
is written while the parent analyses and renders: the result (a small validation report)
comes back pickled through a pipe. Where ``fork`` is missing the call runs inline.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Generic, TypeVar

from kerneltracer.errors import KernelTracerError
from kerneltracer.jsonio import adopt_outputs, child_outputs

T = TypeVar("T")


class ForkedCall(Generic[T]):
    """``ForkedCall(fn).result()``: fn's return value, or its exception re-raised."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._inline: tuple[bool, object] | None = None
        self._pid = 0
        self._fd = -1
        if not hasattr(os, "fork"):
            self._inline = _call(fn)
            return
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            os.close(read)
            try:
                # Files the child writes inside the parent's all-or-none outputs are the
                # parent's to make visible: the child hands their temp files over.
                with child_outputs() as handover:
                    outcome = _call(fn)
                _write_all(write, pickle.dumps((outcome, handover())))
            finally:
                os._exit(0)
        os.close(write)
        self._pid, self._fd = pid, read

    def result(self) -> T:
        if self._inline is None:
            self._inline = self._collect()
        ok, value = self._inline
        if not ok:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]

    def _collect(self) -> tuple[bool, object]:
        chunks = []
        with os.fdopen(self._fd, "rb") as fh:
            while block := fh.read(1 << 16):
                chunks.append(block)
        _, status = os.waitpid(self._pid, 0)
        if not chunks:
            raise KernelTracerError(f"background writer died ({_describe(status)})")
        outcome: tuple[bool, object]
        outcome, handover = pickle.loads(b"".join(chunks))
        adopt_outputs(handover)
        return outcome


def _call(fn: Callable[[], object]) -> tuple[bool, object]:
    try:
        return True, fn()
    except Exception as exc:  # handed to the parent, which re-raises it
        try:
            pickle.dumps(exc)
        except Exception:
            exc = KernelTracerError(f"{type(exc).__name__}: {exc}")
        return False, exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
