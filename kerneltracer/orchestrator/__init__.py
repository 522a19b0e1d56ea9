"""The orchestrator: plans jobs, runs one worker per job, never imports a framework."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltracer.orchestrator.facade import (
        RunRequest,
        RunSession,
        open_run,
        run_dir_for,
        select_jobs,
    )

_FACADE = ("RunRequest", "RunSession", "open_run", "run_dir_for", "select_jobs")
# The face (contract `faces`): the run facade's names above, and the submodules the CLI, the
# Python API and the Slurm driver plan and download with; every other module is internal.
__all__ = [
    "RunRequest",
    "RunSession",
    "download",
    "events",
    "expand",
    "interpreters",
    "models",
    "open_run",
    "planning",
    "run_dir_for",
    "select_jobs",
    "shard",
]


def __getattr__(name: str) -> Any:
    # Lazy: download children and workers import sub-modules without the whole facade.
    if name in _FACADE:
        from kerneltracer.orchestrator import facade

        return getattr(facade, name)
    raise AttributeError(name)
