"""The Tracer description and the small result types its worker-side methods return."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from kerneltracer.core.artefacts import ArtefactKind, ArtefactPatterns, kind_from_name, match_kind


class Steppable(Protocol):
    """What a tracer needs of any framework's context; the worker's RunContext is one.

    A protocol, not the worker's class: the catalog sits below the worker and imports
    nothing of it."""

    def step(self) -> Any: ...


# The context type of the framework a tracer runs under (HFContext, VLLMContext).
Ctx = TypeVar("Ctx", bound=Steppable)


class TracerOptions(BaseModel):
    """Base for a tracer's options (config ``tracer_options: {name: {...}}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass
class TraceResult:
    """What a tracer wrote: output paths relative to the job dir, and a small summary."""

    outputs: list[str]
    summary: dict[str, Any] = field(default_factory=dict)


class Tracer(ABC, Generic[Ctx]):
    """One way of looking at a model. Class attributes are the static description.

    ``Ctx`` is the context its framework's loader gives it; ``frameworks`` names them.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    frameworks: ClassVar[frozenset[str]]
    exclusive_group: ClassVar[str | None] = None
    # Phases (config `phase`) this tracer can look at; others end the job `unsupported`.
    phases: ClassVar[frozenset[str]] = frozenset({"prefill", "decode", "generate"})
    # Why it cannot trace a model with weights fake (built on fake tensors: shapes, no
    # values); None when it can. Shown as the job's `unsupported` reason.
    fake_weights_refusal: ClassVar[str | None] = "it has not been made to run on fake tensors"
    # Why it cannot trace the rank roles of a simulated parallel layout (a model sharded into
    # DTensors on a fake process group); None when it can.
    parallel_refusal: ClassVar[str | None] = "it has not been made to trace simulated ranks"
    # Why it cannot run on each rank of a real multi-rank job (one process per rank); None
    # when it can.
    real_ranks_refusal: ClassVar[str | None] = "it has not been made to run on real ranks yet"
    # True when its worker must start a fresh interpreter, never a fork of a preloaded one:
    # what it sets in worker_env (TORCH_TRACE, TORCH_LOGS, compile caches) is read once, at
    # `import torch`, and cannot be re-initialised in a forked child.
    fresh_interpreter: ClassVar[bool] = False
    # Modules its worker imports only when it traces or writes: a preloaded server imports
    # them before it forks, so each forked job does not pay them again.
    preload_modules: ClassVar[tuple[str, ...]] = ()
    summary: ClassVar[str] = ""
    outputs_doc: ClassVar[str] = ""
    Options: ClassVar[type[TracerOptions]] = TracerOptions
    # What each output is (pattern on its path relative to the job dir -> kind); an output
    # no pattern matches gets the kind its conventional name implies, if any.
    artefacts: ClassVar[ArtefactPatterns] = {}

    def __init__(self, options: TracerOptions) -> None:
        self.options = options

    @classmethod
    def worker_env(cls, job_dir: Path, options: TracerOptions) -> dict[str, str]:
        """Environment the worker needs before any framework import (e.g. TORCH_TRACE)."""
        return {}

    @classmethod
    def kind_of(cls, output: str) -> ArtefactKind | None:
        """The kind the worker records for ``output`` (a path relative to the job dir)."""
        return match_kind(output, cls.artefacts) or kind_from_name(output)

    def warmup(self, ctx: Ctx) -> None:
        """Run untraced steps so lazy initialisation does not pollute the trace."""
        ctx.step()

    @abstractmethod
    def trace(self, ctx: Ctx) -> Any:
        """Run the model under this tracer; keep what was seen in memory and return it."""

    @abstractmethod
    def write(self, ctx: Ctx, traced: Any, job_dir: Path) -> TraceResult:
        """Serialise what ``trace`` returned into files under ``job_dir``."""
