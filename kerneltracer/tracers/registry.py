"""Single source of truth: tracer name → Tracer class.

Used by config validation, the orchestrator's planner and the worker's dispatch.
Adding a tracer = one module + one line here; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kerneltracer.errors import UsageError, choices
from kerneltracer.tracers.base import Tracer
from kerneltracer.tracers.print_aten import (
    PrintAtenExportTracer,
    PrintAtenMakeFxTracer,
    PrintAtenTracer,
)
from kerneltracer.tracers.print_fx import PrintFxTracer
from kerneltracer.tracers.torch_compile import TorchCompileTracer
from kerneltracer.tracers.torch_dispatch import TorchDispatchTracer
from kerneltracer.tracers.torch_profiler import TorchProfilerTracer
from kerneltracer.tracers.vllm_compile import VllmCompileTracer
from kerneltracer.tracers.vllm_profiler import VllmProfilerTracer

TRACERS: Mapping[str, type[Tracer]] = {
    cls.name: cls
    for cls in (
        TorchDispatchTracer,
        TorchProfilerTracer,
        TorchCompileTracer,
        PrintFxTracer,
        PrintAtenTracer,
        PrintAtenExportTracer,
        PrintAtenMakeFxTracer,
        VllmProfilerTracer,
        VllmCompileTracer,
    )
}

FRAMEWORKS = ("huggingface", "vllm")


def get_tracer(name: str, registry: Mapping[str, type[Tracer]] = TRACERS) -> type[Tracer]:
    try:
        return registry[name]
    except KeyError:
        raise UsageError(f"unknown tracer {name!r} (valid: {choices(registry)})") from None


def tracers_for(framework: str, registry: Mapping[str, type[Tracer]] = TRACERS) -> list[str]:
    return [name for name, cls in registry.items() if framework in cls.frameworks]


def tracers_writing(
    kinds: Iterable[str], registry: Mapping[str, type[Tracer]] = TRACERS
) -> frozenset[str]:
    """The tracers that declare an output of one of ``kinds`` (``Tracer.artefacts``)."""
    wanted = set(kinds)
    return frozenset(n for n, cls in registry.items() if wanted & set(cls.artefacts.values()))
