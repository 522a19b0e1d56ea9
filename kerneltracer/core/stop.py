"""Why the orchestrator stopped a worker: a kind the status follows from, and a detail line."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kerneltracer.core.status import JobStatus


class StopKind(StrEnum):
    TIMEOUT = "timeout"  # no result within the job's timeout_s
    MEMORY = "memory"  # the worker tree went over max_rss_gb
    INTERRUPT = "interrupt"  # the orchestrator itself was told to stop

    @property
    def status(self) -> JobStatus:
        return _STATUS[self]


_STATUS = {
    StopKind.TIMEOUT: JobStatus.TIMEOUT,
    StopKind.MEMORY: JobStatus.OOM,
    StopKind.INTERRUPT: JobStatus.INTERRUPTED,
}


@dataclass(frozen=True)
class StopReason:
    kind: StopKind
    detail: str  # one line, e.g. "no result after 900 s"

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.detail}"
