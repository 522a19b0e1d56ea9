"""What every framework loader gives the worker: a context to step, and how to end it.

The worker knows frameworks only through this interface: it picks the loader by the job's
``framework``, loads once, hands the context to the tracer and closes it last. What a step
is, which inputs exist and what must be stopped afterwards belong to each framework.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from kerneltracer.core.jobspec import JobSpec
    from kerneltracer.core.status import ErrorInfo, JobStatus


@dataclass
class RunContext(ABC):
    """The loaded model as one framework runs it; lives only inside the worker."""

    # Whether close() stops anything (the worker then times it as the phase "shutdown").
    needs_shutdown: ClassVar[bool] = False

    job: JobSpec
    job_dir: Path
    device: str  # resolved: "cpu", "cuda:0", ...
    dtype: str  # resolved, torch's spelling without the prefix: "float32", ...
    # What a reader of the status must know about how the model was run (e.g. fake weights).
    notes: list[str] = field(default_factory=list, kw_only=True)

    @property
    def mode(self) -> str:
        return self.job.mode

    @property
    def phase(self) -> str:
        return self.job.phase

    @abstractmethod
    def step(self) -> Any:
        """Run the model once the way this framework runs it (see the subclass)."""

    def describe_inputs(self) -> list[dict[str, Any]] | None:
        """The inputs a step feeds, for _TRACE_STATUS.json; None when there is nothing to say."""
        return None

    def close(self) -> None:
        """Stop what the loader started (engine processes); the worker calls it last."""
        return None


class FrameworkLoader(ABC):
    """Loads a job's model for one framework. Class attributes are the static description."""

    name: ClassVar[str]
    context_type: ClassVar[type[RunContext]]
    # Distributions of which the worker's interpreter must have one; () checks nothing.
    distributions: ClassVar[tuple[str, ...]] = ()
    # How to get an interpreter that has them, for the error line that says it lacks them.
    install_hint: ClassVar[str] = ""
    # Modules whose versions go into _TRACE_STATUS.json when the worker has imported them.
    version_modules: ClassVar[tuple[str, ...]] = ()
    # Why this framework's workers cannot be forked from a preloaded server; None: they can.
    preload_refusal: ClassVar[str | None] = "no preload has been written for this framework"
    # Why a job of this framework with `parallel:` and real weights cannot be launched as one
    # process per rank (worker/parallel/launch.py); None: it can.
    ranks_refusal: ClassVar[str | None] = "no rank launcher has been written for this framework"
    # The framework starts its own rank processes from ``load`` (vLLM's executor): such a job
    # is one worker like any other, never launched per rank.
    own_ranks: ClassVar[bool] = False

    @classmethod
    def layout_refusal(cls, parallel: dict[str, Any]) -> str | None:
        """What of a ``parallel`` layout this framework's ranks cannot run, whatever the
        model (the orchestrator refuses it before the machine's own limits); None: nothing."""
        return None

    @classmethod
    def preload(cls, hints: list[str]) -> list[str]:
        """Import what jobs of this framework need (``hints``: e.g. the run's model types)
        without running an op or starting a thread pool; returns the modules that failed."""
        return []

    @abstractmethod
    def load(self, job: JobSpec, job_dir: Path, tracer: object) -> RunContext:
        """The job's model, ready to step; raises UnsupportedError for what cannot run.

        ``tracer`` is the job's tracer instance: an engine loader asks it for its settings.
        A loader that fails cleans up what it started before raising.
        """

    def refine_failure(
        self, status: JobStatus, error: ErrorInfo, job_dir: Path
    ) -> tuple[JobStatus, ErrorInfo]:
        """A better root cause than the worker's exception, when the framework logged one."""
        return status, error
