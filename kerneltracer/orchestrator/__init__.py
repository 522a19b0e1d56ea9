"""The orchestrator: plans jobs, runs one worker per job, never imports a framework."""

from kerneltracer.orchestrator.facade import RunRequest, RunSession, open_run

__all__ = ["RunRequest", "RunSession", "open_run"]
