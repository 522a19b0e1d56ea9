"""Structured-log (TORCH_TRACE) analysis: tlparse's two-stage architecture.

Stage 1 (:func:`parse`) streams a log into an intermediate directory of JSON files;
stage 2 (:func:`render`) turns that directory into reports through pluggable modules;
:func:`run` does both. Imported lazily so that registering the per-job analysis stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltracer.analysis.structured_logs.api import (
        ParseResult,
        RenderResult,
        parse,
        render,
        run,
    )

_LAZY = ("ParseResult", "RenderResult", "parse", "render", "run")
# Its face: the names above and ``api`` / ``stats`` (the Python API reads parse statistics).
__all__ = ["ParseResult", "RenderResult", "api", "parse", "render", "run", "stats"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from kerneltracer.analysis.structured_logs import api

        return getattr(api, name)
    raise AttributeError(name)
