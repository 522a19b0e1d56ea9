"""The interface every per-job analysis implements for ``kerneltracer analyze RUN_DIR``.

An analysis is stateless: it is given a read-only view of one finished job and an output
directory of its own (``JOB_DIR/analysis/<name>/``) and writes its reports there. It must not
modify anything under the job dir outside that output directory, and it must work on job
dirs copied from another machine (so: relative paths only, no absolute paths from the run).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from kerneltracer.core.artefacts import ArtefactKind, output_kinds, select
from kerneltracer.core.rundir import JobRecord


@dataclass(frozen=True)
class AnalysisJob:
    """What an analysis may know about a job: its directory and its status file's summary."""

    job_dir: Path
    tracer: str
    model: str
    status: str  # ok, failed, oom, timeout, crashed, unsupported, skipped, interrupted
    outputs: tuple[str, ...]  # paths relative to job_dir, as listed in _TRACE_STATUS.json
    # The kind each output's status entry records, parallel to outputs (None: not recorded);
    # empty when none is known. Select on kinds (``artefacts``), not on the tracer's name.
    recorded_kinds: tuple[str | None, ...] = ()

    def output_paths(self, suffix: str = "") -> list[Path]:
        return [self.job_dir / o for o in self.outputs if o.endswith(suffix)]

    @property
    def output_kinds(self) -> tuple[ArtefactKind | None, ...]:
        """The kind of every output: recorded, else derived from its name."""
        return output_kinds(self.outputs, self.recorded_kinds)

    @property
    def kinds(self) -> frozenset[ArtefactKind]:
        return frozenset(k for k in self.output_kinds if k is not None)

    def artefact_names(self, kind: ArtefactKind) -> list[str]:
        """The outputs of ``kind``, relative to the job dir, in listed order."""
        return select(self.outputs, self.output_kinds, (kind,))

    def artefacts(self, kind: ArtefactKind) -> list[Path]:
        return [self.job_dir / rel for rel in self.artefact_names(kind)]


class JobAnalysis(ABC):
    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""

    @abstractmethod
    def applies(self, job: AnalysisJob) -> bool:
        """Static decision from the job's artefact kinds/status; must not read big files."""

    @abstractmethod
    def run(self, job: AnalysisJob, out_dir: Path) -> list[Path]:
        """Write reports into ``out_dir`` (created by the caller); return the files written."""


def analysis_job(record: JobRecord) -> AnalysisJob | None:
    """The analyses' view of a job record; None without a valid status (nothing to analyse)."""
    st = record.status
    if st is None:
        return None
    return AnalysisJob(
        job_dir=record.job_dir,
        tracer=st.tracer,
        model=str(st.model.get("display", "")),
        status=st.status.value,
        outputs=tuple(o.path for o in st.outputs),
        recorded_kinds=tuple(o.kind for o in st.outputs),
    )
