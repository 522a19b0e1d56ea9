"""The one root-cause helper: which links of an exception chain each policy follows."""

from __future__ import annotations

import pytest

from kerneltracer.core.rootcause import (
    Chain,
    exception_line,
    innermost,
    is_exception_line,
    last_exception_line,
    root_cause,
)
from kerneltracer.core.status import JobStatus
from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.failure import classify_exception
from kerneltracer.worker.tracers._compiler_errors import root_cause_line


def _raised(fn: object) -> BaseException:
    try:
        fn()  # type: ignore[operator]
    except BaseException as exc:
        return exc
    raise AssertionError("nothing raised")


def _explicit_then_suppressed() -> None:
    """A hub-like wrapper (explicit cause) around a Dynamo-like ``from None`` re-raise."""
    try:
        try:
            raise KeyError("aten.weird_op has no fake impl")
        except KeyError:
            raise RuntimeError("when making fake tensor call") from None
    except RuntimeError as inner:
        raise ValueError("compile failed\nsecond line") from inner


def test_each_policy_stops_where_it_should() -> None:
    exc = _raised(_explicit_then_suppressed)
    assert type(innermost(exc, Chain.CAUSES)) is RuntimeError
    assert type(innermost(exc, Chain.VISIBLE)) is RuntimeError  # the suppressed link is cut
    assert type(innermost(exc, Chain.ALL)) is KeyError


def test_inner_exception_attribute_is_followed_only_by_all() -> None:
    err = RuntimeError("backend failed")
    err.inner_exception = OSError("nvcc not found")  # type: ignore[attr-defined]
    assert innermost(err, Chain.ALL).args == ("nvcc not found",)
    assert innermost(err, Chain.VISIBLE) is err


def test_cycles_end() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert innermost(a, Chain.CAUSES) is b


def test_lines_are_clipped_and_typed() -> None:
    exc = ValueError("x" * 500 + "\nnext")
    line = exception_line(exc, 50)
    assert line.startswith("ValueError: ") and line.endswith("...")
    assert len(line) == len("ValueError: ") + 50
    assert exception_line(ValueError("a\n\nb"), lines=2) == "ValueError: a b"
    assert exception_line(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert root_cause(_raised(_explicit_then_suppressed), Chain.CAUSES) == (
        "RuntimeError: when making fake tensor call"
    )


def test_callers_keep_their_policies() -> None:
    exc = _raised(_explicit_then_suppressed)
    # The worker reports what a traceback shows; the compiler line digs to the operator.
    _, info = classify_exception(exc, "trace")
    assert info.root_cause == "RuntimeError: when making fake tensor call"
    assert info.message == "compile failed"
    assert root_cause_line(exc).startswith("KeyError: 'aten.weird_op has no fake impl'")


def test_our_refusal_is_the_reason_not_the_library_error_under_it() -> None:
    def refuse() -> None:
        try:
            raise ValueError("1 validation error for ModelConfig\n  architectures [...400 names]")
        except ValueError as exc:
            raise UnsupportedError("vLLM does not support architecture 'RwkvForCausalLM'") from exc

    status, info = classify_exception(_raised(refuse), "load")
    assert status is JobStatus.UNSUPPORTED
    assert info.root_cause == (
        "UnsupportedError: vLLM does not support architecture 'RwkvForCausalLM'"
    )

    def wrapped() -> None:  # a framework re-raising our refusal in its own words
        try:
            refuse()
        except UnsupportedError as exc:
            raise RuntimeError("Engine core initialization failed") from exc

    status, info = classify_exception(_raised(wrapped), "load")
    assert status is JobStatus.UNSUPPORTED
    assert info.root_cause.startswith("UnsupportedError: vLLM does not support")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("RuntimeError: boom", True),
        ("  torch.OutOfMemoryError: CUDA out of memory", True),
        ("KeyboardInterrupt", True),
        ("an Error: in prose", False),
        ("INFO loading", False),
    ],
)
def test_exception_lines_in_logs(line: str, expected: bool) -> None:
    assert is_exception_line(line) is expected


def test_last_exception_line_prefers_the_exception() -> None:
    tail = ["Traceback (most recent call last):", "ValueError: first", "RuntimeError: last", "bye"]
    assert last_exception_line(tail) == "RuntimeError: last"
    assert last_exception_line(["", "only text", "  "]) == "only text"
    assert last_exception_line([]) is None
