"""How the orchestrator reports progress without printing: an observer the CLI implements."""

from __future__ import annotations

from typing import Protocol

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.status import TraceStatus


class RunObserver(Protocol):
    def planned(self, total: int, to_run: int) -> None: ...

    def job_started(self, job: JobSpec) -> None: ...

    def job_finished(self, job: JobSpec, status: TraceStatus) -> None: ...

    def notice(self, text: str) -> None:
        """One line about the run itself (e.g. how its workers start), said once."""


class NullObserver:
    def planned(self, total: int, to_run: int) -> None:
        pass

    def job_started(self, job: JobSpec) -> None:
        pass

    def job_finished(self, job: JobSpec, status: TraceStatus) -> None:
        pass

    def notice(self, text: str) -> None:
        pass
