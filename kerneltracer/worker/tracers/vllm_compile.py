"""vllm_compile: vLLM's own torch.compile of the model, seen through TORCH_TRACE.

The engine is built without ``enforce_eager``, so vLLM compiles the model with its own
backend (piecewise graphs, inductor) while it starts. ``TORCH_TRACE`` is in the worker's
environment before anything imports torch, and vLLM's EngineCore and Worker processes
inherit it, so every rank's compile lands in ``torch_trace/`` (readable by tlparse and by
the structured_logs analysis). vLLM's compile cache goes to the job's tmp dir (cold, never
shared) and the code it generated is copied out.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from kerneltracer.core.artefacts import (
    COMPILE_SUMMARY_FILE,
    TORCH_TRACE_DIR,
    ArtefactPatterns,
    compile_artefacts,
)
from kerneltracer.core.layout import JobPaths
from kerneltracer.jsonio import atomic_write_json
from kerneltracer.tracers.base import TraceResult, TracerOptions
from kerneltracer.worker.tracers.vllm_profiler import VllmEngineOptions, VllmEngineTracer

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.vllm import EngineSettings, VLLMContext

CODE_DIR = "vllm_compile_code"


class VllmCompileOptions(VllmEngineOptions):
    enforce_eager: bool = Field(False, description="Must stay false: the point is the compile")
    steps: int = Field(1, ge=1, le=100, description="Timed generate calls after start-up")


def _cache_root(job_dir: Path) -> Path:
    return JobPaths(job_dir).vllm_cache


class VllmCompileTracer(VllmEngineTracer):
    name: ClassVar[str] = "vllm_compile"
    version: ClassVar[str] = "1"
    summary: ClassVar[str] = "vLLM's torch.compile at engine start: TORCH_TRACE logs + its code"
    outputs_doc: ClassVar[str] = (
        f"{TORCH_TRACE_DIR}/*.log, {CODE_DIR}/**/*.py, {COMPILE_SUMMARY_FILE}"
    )
    artefacts: ClassVar[ArtefactPatterns] = compile_artefacts(CODE_DIR)
    Options: ClassVar[type[TracerOptions]] = VllmCompileOptions
    real_ranks_refusal: ClassVar[str | None] = (
        "vLLM's compile on its tensor-parallel ranks has not been run (vllm_profiler has)"
    )

    @property
    def opts(self) -> VllmCompileOptions:
        assert isinstance(self.options, VllmCompileOptions)  # the registry validated it
        return self.options

    @classmethod
    def worker_env(cls, job_dir: Path, options: TracerOptions) -> dict[str, str]:
        return {
            "TORCH_TRACE": str(job_dir / TORCH_TRACE_DIR),
            "VLLM_CACHE_ROOT": str(_cache_root(job_dir)),
        }

    def engine_settings(self, job_dir: Path) -> EngineSettings:
        from kerneltracer.worker.frameworks.vllm.engine import require_vllm

        require_vllm()
        return self.opts.engine()

    def trace(self, ctx: VLLMContext) -> Any:
        times = []
        for _ in range(self.opts.steps):
            t0 = time.perf_counter()
            ctx.step()
            times.append(time.perf_counter() - t0)
        return times

    def write(self, ctx: VLLMContext, traced: Any, job_dir: Path) -> TraceResult:
        from kerneltracer.errors import TracerError

        logs = sorted((job_dir / TORCH_TRACE_DIR).glob("*.log"))
        if not logs:
            raise TracerError(
                f"no TORCH_TRACE log in {job_dir / TORCH_TRACE_DIR}: nothing was compiled"
            )
        code = _copy_code(_cache_root(job_dir), job_dir / CODE_DIR)
        texts = [p.read_text(errors="replace") for p in logs]
        summary = {
            "trace_logs": len(logs),
            "trace_bytes": sum(p.stat().st_size for p in logs),
            "frame_compiles": sum(t.count('{"compilation_metrics"') for t in texts),
            "graphs": sum(t.count('{"dynamo_output_graph"') for t in texts),
            "inductor_outputs": sum(t.count('{"inductor_output_code"') for t in texts),
            "code_files": len(code),
            "generate_s": [round(t, 4) for t in traced],
        }
        atomic_write_json(job_dir / COMPILE_SUMMARY_FILE, summary)
        outputs = [str(p.relative_to(job_dir)) for p in [*logs, *code]]
        return TraceResult(outputs=[*outputs, COMPILE_SUMMARY_FILE], summary=summary)


def _copy_code(cache: Path, out: Path) -> list[Path]:
    """The Python vLLM's compile wrote (graphs, transformed code, inductor output)."""
    copied = []
    for src in sorted(cache.rglob("*.py")) if cache.is_dir() else []:
        dst = out / src.relative_to(cache)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        copied.append(dst)
    return copied
