"""ForkedCall: the child's value, its exception, or one clear error when it dies."""

from __future__ import annotations

import os
import signal

import pytest

from kerneltracer.analysis.timeline.render.forked import ForkedCall
from kerneltracer.errors import KernelTracerError, UsageError


def test_value_comes_back() -> None:
    assert ForkedCall(lambda: {"n": 3, "pid": os.getpid()}).result()["n"] == 3


def test_child_runs_in_another_process() -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform: the call runs inline")
    assert ForkedCall(os.getpid).result() != os.getpid()


def test_exception_is_reraised_in_the_parent() -> None:
    def fail() -> None:
        raise UsageError("bad input")

    with pytest.raises(UsageError, match="bad input"):
        ForkedCall(fail).result()


def test_a_killed_child_is_one_clear_error() -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(KernelTracerError, match="killed by signal 9"):
        ForkedCall(die).result()
