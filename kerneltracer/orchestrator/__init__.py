"""The orchestrator: plans jobs, runs one worker per job, never imports a framework."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltracer.orchestrator.facade import RunRequest, RunSession, open_run

__all__ = ["RunRequest", "RunSession", "open_run"]


def __getattr__(name: str) -> Any:
    # Lazy: download children and workers import sub-modules without the whole facade.
    if name in __all__:
        from kerneltracer.orchestrator import facade

        return getattr(facade, name)
    raise AttributeError(name)
