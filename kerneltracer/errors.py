"""Every user-facing error kerneltracer raises.

The CLI prints ``str(error)`` as one line (tracebacks only with ``--debug``), so messages
must stand on their own: say what is wrong, where, and what the valid choices are. The exit
code is the class's ``exit_code`` (1 unless it says otherwise).

Exceptions that never reach a user stay beside the code that raises and catches them:
parse failures a parser counts and moves on from (``corpus.operator_inp.ParseError``,
``coverage.sources.SourceError``, the ``_RowError`` of ``coverage.sources`` and
``corpus.build``, ``costmodel.call.BadCall``, ``config._DuplicateKey`` → ConfigError), the
preload server's ``ServerGone`` (the job then runs in a plain worker), and worker-side
failures that become a job's status and root cause, never a CLI message
(``worker.tracers._compiler_errors.CompilerError``, ``worker.tracers._graphs.GraphCaptureError``,
``worker.replay.tensors.InputError``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

# C0 controls (newlines included) and DEL: a hostile name must not break an error's one line.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def one_line(text: str) -> str:
    """``text`` with control characters escaped (``\\n``), so it prints as one line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class KernelTracerError(Exception):
    """Base class: an expected failure with a message meant for the user."""

    exit_code = 1


class UsageError(KernelTracerError):
    """Bad input from the user (arguments, config); exit code 2 like click's usage errors."""

    exit_code = 2


class ConfigError(UsageError):
    """A run config that cannot be used; names the file, the line or field, and the choices."""

    def __init__(self, message: str, path: Path | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(one_line(f"{where}{message}"))


class InvalidModelIdError(UsageError):
    """A model id that could escape the run dir or is not a hub id."""


class RunDirLockedError(KernelTracerError):
    """Another orchestrator already writes into this run dir."""


class RunDirError(KernelTracerError):
    """A run dir that does not exist or does not look like one."""


class TracerError(KernelTracerError):
    """A tracer failed inside the worker; carries the worker log path when known."""

    def __init__(self, message: str, log_path: Path | None = None) -> None:
        self.log_path = log_path
        suffix = f" (log: {log_path})" if log_path else ""
        super().__init__(f"{message}{suffix}")


class InputFileError(KernelTracerError):
    """A user file that cannot be read: missing, not a regular file, not the format asked."""


class InputTooLargeError(InputFileError):
    """A user file above the input limits (decompressed size, events); names the flag."""


class TruncatedInputError(InputFileError):
    """A compressed user file cut short (an interrupted copy or download): no limit to raise."""


class UnsupportedError(KernelTracerError):
    """The tracer or the model does not apply; the job ends ``unsupported``, not ``failed``."""


class LibraryError(KernelTracerError):
    """An error raised inside a framework library on code that reads none of the inputs (its
    own bug): the job still ends ``failed``, but the reason says whose it is, with the frame."""


class ModelFilesError(KernelTracerError):
    """The model dir cannot be loaded: missing config, missing or truncated weights."""


class SlurmError(KernelTracerError):
    """A Slurm command is missing or refused the request."""


class TraceLoadError(InputFileError):
    """A chrome trace that cannot be read (missing, not JSON, no events)."""


class _ParseCounts(Protocol):
    lines: int
    fail_glog: int
    fail_json: int
    fail_too_large: int


class NoRecordsError(KernelTracerError):
    """The input has no TORCH_TRACE record at all: not a structured log (exit 1)."""

    def __init__(self, source: Path, stats: _ParseCounts) -> None:
        self.stats = stats
        large = stats.fail_too_large
        skipped = f", {large} record(s) over the size limit skipped" if large else ""
        super().__init__(
            f"{source}: no TORCH_TRACE records ({stats.lines} lines read, "
            f"{stats.fail_glog} glog failures, {stats.fail_json} JSON envelope failures"
            f"{skipped}); is this a TORCH_TRACE log (TORCH_TRACE=dir or TORCH_LOGS=+structured)?"
        )


class ParseFailuresError(KernelTracerError):
    """``logs --strict`` and some log lines failed to parse."""


class MissingIntermediateError(KernelTracerError):
    """A render module needs an intermediate file that is not there."""


def choices(values: object) -> str:
    """Format valid choices for an error message: ``a, b, c``."""
    return ", ".join(sorted(str(v) for v in values))  # type: ignore[attr-defined]


class VerificationError(KernelTracerError):
    """An FX optimisation pass changed a model's outputs or gradients; it was rolled back."""

    def __init__(self, pass_name: str, detail: str) -> None:
        self.pass_name = pass_name
        super().__init__(f"pass {pass_name!r} failed verification and was rolled back: {detail}")
