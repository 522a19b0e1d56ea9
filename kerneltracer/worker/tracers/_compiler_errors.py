"""The root cause of a torch.compile / export failure, as one line a human can act on.

Dynamo re-raises the real error as ``TorchRuntimeError``/``Unsupported`` with
``raise ... from None`` style suppression and a generic first line ("RuntimeError when
making fake tensor call"); the operator that could not be traced is in the innermost
exception of the (suppressed) chain. ``BackendCompilerFailed`` keeps it as
``inner_exception``.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from kerneltracer.core.rootcause import Chain, exception_line, innermost

log = logging.getLogger("kerneltracer.worker.tracers")

_MAX_LINE = 400
_MAX_MESSAGE = 240
_TORCH_DIR = "/site-packages/torch/"


class CompilerError(RuntimeError):
    """torch.compile (or a graph capture) failed; the message is the compiler's root cause."""


def root_cause_line(exc: BaseException) -> str:
    """``Type: first line`` of the innermost error, with the user frame Dynamo reports."""
    root = innermost(exc, Chain.ALL)
    line = exception_line(root, _MAX_MESSAGE)
    frame = _user_frame(exc)
    if frame:
        line += f" [at {frame}]"
    return line[:_MAX_LINE]


def _user_frame(exc: BaseException) -> str | None:
    """The innermost frame of the user's code (not torch's) Dynamo was tracing, if known."""
    current: BaseException | None = exc
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames = list(getattr(current, "real_stack", None) or [])
        user = [f for f in frames if _TORCH_DIR not in f.filename]
        if user:
            f = user[-1]
            # The file name only: remote-code modules live under long cache paths, and the
            # status line has room for one line (the full stack is in worker.log).
            return f"{Path(f.filename).name}:{f.lineno} in {f.name}"
        current = current.__cause__ or current.__context__
    return None


def reraise_as_compiler_error(exc: Exception, what: str) -> CompilerError:
    """Log the full chain, then a :class:`CompilerError` whose line is the root cause.

    The chain is cut (``from None``) on purpose: the worker reports the innermost *explicit*
    cause, which for Dynamo errors is the generic wrapper, not the operator at fault.
    """
    log.error("%s failed:\n%s", what, "".join(traceback.format_exception(exc)))
    return CompilerError(f"{what} failed: {root_cause_line(exc)}")


def graph_break_line(reason: str) -> str:
    """A Dynamo break reason in one line: its title and, when given, its explanation."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    explanation = next((x for x in lines if x.startswith("Explanation:")), None)
    text = lines[0] if explanation is None else f"{lines[0]}. {explanation}"
    return text[:_MAX_LINE]
