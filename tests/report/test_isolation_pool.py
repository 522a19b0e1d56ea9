"""The worker pool under ``analyze``: results, raised errors, timeouts, crashes, memory."""

from __future__ import annotations

import os
import signal
import time

import psutil

from kerneltracer.analysis.isolation import Died, Limits, Raised, run_isolated


def _task(index: int) -> object:
    if index == 1:
        time.sleep(600)
    if index == 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    if index == 3:
        raise ValueError("bad input")
    if index == 4:
        return lambda: None  # does not pickle
    if index == 5:
        return bytearray(4 << 30)  # above the ceiling: MemoryError
    return os.getpid()


def test_each_task_ends_in_exactly_one_way_and_the_rest_go_on() -> None:
    results: dict[int, object] = {}
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    started = time.monotonic()
    run_isolated(8, _task, results.__setitem__, 2, Limits(timeout_s=3, max_memory_bytes=256 << 20))
    assert time.monotonic() - started < 60
    assert sorted(results) == list(range(8))
    left = {c.pid for c in psutil.Process().children(recursive=True)} - before
    assert not left, "workers outlived run_isolated"
    assert results[1] == Died("timeout", "no result after 3 s, killed")
    assert results[2] == Died("crashed", "killed by SIGSEGV (-11)")
    raised = results[3]
    assert isinstance(raised, Raised) and raised.summary == "ValueError: bad input"
    assert "bad input" in raised.traceback and not raised.out_of_memory
    assert isinstance(results[4], Raised) and "pickle" in results[4].summary.lower()
    assert isinstance(results[5], Raised) and results[5].out_of_memory
    pids = {results[i] for i in (0, 6, 7)}
    assert all(isinstance(p, int) and p != os.getpid() for p in pids)
