"""Run tasks in reusable worker processes, each task bounded in time and memory.

An analysis is third-party-grade code on untrusted inputs: it can hang on a pathological
trace, exhaust memory or crash the interpreter in a C extension. Each task therefore runs in
a worker process forked from the caller, which is

- its own process group, killed as a whole (with whatever the task spawned) when the task
  runs past its timeout or when the caller stops (KeyboardInterrupt, error);
- bounded in memory by ``RLIMIT_DATA`` (heap and private writable mappings: what a task can
  fill; unlike ``RLIMIT_AS`` it does not count shared libraries or reserved address space),
  so an allocation above the ceiling raises MemoryError inside the task;
- killed by the kernel if the caller dies (``PR_SET_PDEATHSIG``), so nothing outlives it.

Workers are reused from task to task (forking per task would re-import every framework an
analysis loads lazily); a worker that crashed or timed out is replaced, and so is one whose
task ran out of memory (its heap may be left fragmented). The caller's process must not run
threads when it forks: ``fork`` copies only the calling thread.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
import os
import resource
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Generic, Literal, TypeVar

from kerneltracer.core.interrupts import default_signals, signal_of
from kerneltracer.process.lifeline import arm_parent_death
from kerneltracer.process.supervisor import describe_exit, kill_group

R = TypeVar("R")

# A timed-out task is sent this first so that faulthandler writes where it hangs into the
# task's log, then its process group is killed.
_DUMP_SIGNAL = signal.SIGUSR1
_DUMP_GRACE_S = 0.3


@dataclass(frozen=True)
class Limits:
    timeout_s: float | None = None  # per task, from the moment a worker receives it
    max_memory_bytes: int | None = None  # RLIMIT_DATA of each worker


NO_LIMITS = Limits()


@dataclass(frozen=True)
class Raised:
    """The task raised; the exception as text (exception objects do not always pickle)."""

    type_name: str
    message: str
    traceback: str
    out_of_memory: bool

    @property
    def summary(self) -> str:
        return f"{self.type_name}: {self.message}" if self.message else self.type_name


@dataclass(frozen=True)
class Died:
    """The task's worker ended without a result: killed at its timeout, crashed, or killed
    because the caller was interrupted (SIGINT / SIGTERM) while the task ran."""

    state: Literal["timeout", "crashed", "interrupted"]
    reason: str


def run_isolated(
    count: int,
    task: Callable[[int], R],
    on_result: Callable[[int, R | Raised | Died], None],
    workers: int = 1,
    limits: Limits = NO_LIMITS,
) -> None:
    """Run ``task(i)`` for ``i`` in ``range(count)`` on up to ``workers`` worker processes.

    ``task`` runs in a forked child, so it may be a closure over anything the caller holds;
    its return value must pickle. Results reach ``on_result`` in the caller's process, as
    each task ends, in completion order. If the caller is interrupted, every worker's group
    is killed first, then each task that was running gets ``Died("interrupted")``, and the
    interrupt goes on.
    """
    pool = _Pool(task, limits, max(1, min(workers, count)))
    try:
        pool.run(deque(range(count)), on_result)
    except KeyboardInterrupt as exc:
        running = pool.running()
        pool.close()
        why = f"interrupted by {signal_of(exc)}, killed"
        for index in running:
            on_result(index, Died("interrupted", why))
        raise
    finally:
        pool.close()


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Inside a task: send the process's stdout and stderr (file descriptors 1 and 2, so C
    code and child processes too) to ``log``; a traceback that escapes is written there.

    A crash or a timeout dump also lands in ``log``: faulthandler writes to descriptor 2.
    """
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        with open(log, "ab") as file:
            os.dup2(file.fileno(), 1)
            os.dup2(file.fileno(), 2)
        try:
            yield
        except BaseException:
            traceback.print_exc()
            raise
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    task: int | None = None
    deadline: float = float("inf")


class _Pool(Generic[R]):
    def __init__(self, task: Callable[[int], R], limits: Limits, size: int) -> None:
        self._task = task
        self._limits = limits
        self._size = size
        self._workers: list[_Worker] = []

    def run(self, pending: deque[int], on_result: Callable[[int, R | Raised | Died], None]) -> None:
        while True:
            self._dispatch(pending)
            busy = [w for w in self._workers if w.task is not None]
            if not busy:
                return
            self._wait(busy)
            for worker in busy:
                settled = self._settle(worker)
                if settled is not None:
                    on_result(*settled)

    def running(self) -> list[int]:
        return [w.task for w in self._workers if w.task is not None]

    def close(self) -> None:
        """Stop every worker: idle ones are told to exit, then every group is killed (a
        task may have left processes behind; an interrupted run leaves tasks in flight)."""
        for worker in self._workers:
            if worker.task is None:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
        for worker in self._workers:
            if worker.task is None:
                worker.process.join(1.0)
            _kill_group(worker)
        self._workers.clear()

    def _dispatch(self, pending: deque[int]) -> None:
        self._workers = [w for w in self._workers if w.task is not None or w.process.is_alive()]
        while pending:
            worker = next((w for w in self._workers if w.task is None), None)
            if worker is None:
                if len(self._workers) >= self._size:
                    return
                worker = _spawn(self._task, self._limits)
                self._workers.append(worker)
            worker.task = pending.popleft()
            timeout = self._limits.timeout_s
            worker.deadline = time.monotonic() + timeout if timeout else float("inf")
            with contextlib.suppress(OSError):  # died idle: _settle reports the crash
                worker.conn.send(worker.task)

    def _wait(self, busy: list[_Worker]) -> None:
        deadline = min(w.deadline for w in busy)
        timeout = None if deadline == float("inf") else max(0.0, deadline - time.monotonic())
        wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout)

    def _settle(self, worker: _Worker) -> tuple[int, R | Raised | Died] | None:
        """The busy worker's task's result if it has one now; retires the worker if needed."""
        index = worker.task
        assert index is not None  # only busy workers are settled
        if worker.conn.poll():
            try:
                ok, value = worker.conn.recv()
            except (EOFError, OSError):
                pass  # died mid-reply: a crash, told below
            else:
                worker.task = None
                if not ok and value.out_of_memory:
                    self._retire(worker)
                return index, value
        if not worker.process.is_alive():
            self._retire(worker)
            return index, Died("crashed", _death_reason(worker.process.exitcode))
        if time.monotonic() >= worker.deadline:
            with contextlib.suppress(OSError):
                os.kill(_pid(worker), _DUMP_SIGNAL)
            worker.process.join(_DUMP_GRACE_S)
            self._retire(worker)
            return index, Died("timeout", f"no result after {self._limits.timeout_s:g} s, killed")
        return None

    def _retire(self, worker: _Worker) -> None:
        _kill_group(worker)
        self._workers.remove(worker)


def _spawn(task: Callable[[int], R], limits: Limits) -> _Worker:
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    args = (theirs, task, limits, os.getpid())
    process = context.Process(target=_serve, args=args, name="kt-analysis")
    process.start()
    theirs.close()
    with contextlib.suppress(OSError):  # the child does it too; whoever runs first wins
        os.setpgid(_pid_of(process), _pid_of(process))
    return _Worker(process, ours)


def _serve(conn: Connection, task: Callable[[int], object], limits: Limits, parent: int) -> None:
    """The worker's loop: receive a task index, reply (True, result) or (False, Raised)."""
    os.setpgid(0, 0)
    default_signals()
    if not arm_parent_death(signal.SIGKILL, parent):
        os._exit(1)
    if limits.max_memory_bytes:
        ceiling = limits.max_memory_bytes
        resource.setrlimit(resource.RLIMIT_DATA, (ceiling, ceiling))
    # Descriptor 2, not sys.stderr: output_to() points it at the running task's log.
    faulthandler.enable(file=2, all_threads=True)
    faulthandler.register(_DUMP_SIGNAL, file=2, all_threads=True)
    while True:
        try:
            index = conn.recv()
        except (EOFError, OSError):
            return
        if index is None:
            return
        reply: tuple[bool, object]
        try:
            reply = (True, task(index))
        except BaseException as exc:  # whatever escapes is the task's failure
            reply = (False, _raised(exc))
        try:
            conn.send(reply)
        except Exception as exc:  # the result does not pickle
            conn.send((False, _raised(exc)))
        if not reply[0] and isinstance(reply[1], Raised) and reply[1].out_of_memory:
            return


def _raised(exc: BaseException) -> Raised:
    return Raised(
        type(exc).__name__,
        str(exc),
        "".join(traceback.format_exception(exc)),
        isinstance(exc, MemoryError),
    )


def _death_reason(exitcode: int | None) -> str:
    if exitcode is None or exitcode >= 0:
        return f"worker {describe_exit(exitcode)} without a result"
    return describe_exit(exitcode)


def _kill_group(worker: _Worker) -> None:
    kill_group(_pid(worker))
    worker.process.join(5.0)
    worker.conn.close()


def _pid(worker: _Worker) -> int:
    return _pid_of(worker.process)


def _pid_of(process: BaseProcess) -> int:
    pid = process.pid
    if pid is None:  # cannot happen after start(); keeps the types honest
        raise RuntimeError("worker process not started")
    return pid
