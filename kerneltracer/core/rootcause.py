"""Root causes: the one place that walks exception chains and finds the exception line in a log.

Every end a user reads (a job's ``reason``, a download failure, a compile error, a worker that
died without a status) is reduced to one line ``Type: message``. Callers differ only in which
links of a chain they trust, so that is a parameter here, not a copy of the walk:

- ``Chain.CAUSES``: explicit ``raise ... from`` links only. huggingface_hub wraps the HTTP or
  network failure that way; its implicit contexts are retry noise.
- ``Chain.VISIBLE``: what a printed traceback shows — causes, then contexts unless suppressed.
- ``Chain.ALL``: suppressed contexts and ``inner_exception`` too. Dynamo re-raises the real
  operator failure behind ``from None`` wrappers and ``BackendCompilerFailed.inner_exception``.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterator
from enum import StrEnum

MAX_LINE = 400

# A Python exception line as printed at the end of a traceback: "pkg.Error: message".
EXCEPTION_LINE = re.compile(
    r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure|Fault))\b:?(.*)$"
)


class Chain(StrEnum):
    CAUSES = "causes"
    VISIBLE = "visible"
    ALL = "all"


def _next(exc: BaseException, chain: Chain) -> BaseException | None:
    if chain is Chain.CAUSES:
        return exc.__cause__
    if chain is Chain.VISIBLE:
        return exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    inner = getattr(exc, "inner_exception", None)
    return inner if isinstance(inner, BaseException) else exc.__cause__ or exc.__context__


def links(exc: BaseException, chain: Chain = Chain.VISIBLE) -> Iterator[BaseException]:
    """``exc``, then each exception it chains along ``chain``, innermost last (cycles cut)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = _next(current, chain)


def innermost(exc: BaseException, chain: Chain = Chain.VISIBLE) -> BaseException:
    """The first error raised along ``chain`` (cycles are cut)."""
    *_, last = links(exc, chain)
    return last


def clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def message(exc: BaseException, max_chars: int = MAX_LINE, lines: int = 1) -> str:
    """The first ``lines`` non-empty lines of the exception's text, joined and clipped."""
    parts = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return clip(" ".join(parts[:lines]), max_chars)


def exception_line(exc: BaseException, max_chars: int = MAX_LINE, lines: int = 1) -> str:
    """``Type: message`` (just ``Type`` when the exception has no text)."""
    text = message(exc, max_chars, lines)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def root_cause(
    exc: BaseException, chain: Chain = Chain.VISIBLE, max_chars: int = MAX_LINE, lines: int = 1
) -> str:
    """The line of the innermost exception along ``chain``."""
    return exception_line(innermost(exc, chain), max_chars, lines)


def location(exc: BaseException) -> str | None:
    """``file:line in function`` of the exception's innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    f = frames[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def is_exception_line(text: str) -> bool:
    return EXCEPTION_LINE.match(text.strip()) is not None


def last_exception_line(lines: list[str], max_chars: int = 500) -> str | None:
    """The last exception line of a log's tail, else its last non-empty line."""
    for line in reversed(lines):
        if is_exception_line(line):
            return line.strip()[:max_chars]
    for line in reversed(lines):
        if line.strip():
            return line.strip()[:max_chars]
    return None
