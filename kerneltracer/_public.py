"""The names of :mod:`kerneltracer.api` that ``import kerneltracer`` offers.

A leaf module, so the package root (which must stay light: no pandas at start-up) and
``api`` (which defines them) read one list.
"""

from __future__ import annotations

API_NAMES = (
    "CompileHealth",
    "Diff",
    "LogsResult",
    "ProgressEvent",
    "Run",
    "TimelineResult",
    "compile_health",
    "logs",
    "open_run",
    "timeline",
    "trace",
)
