"""The vllm loader: an engine built as the job's tracer asks, with its prompts ready."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from kerneltracer.core.jobspec import JobSpec
from kerneltracer.core.layout import JobPaths
from kerneltracer.core.status import ErrorInfo, JobStatus
from kerneltracer.errors import UnsupportedError
from kerneltracer.worker.frameworks.base import FrameworkLoader
from kerneltracer.worker.frameworks.vllm.context import (
    DISTRIBUTIONS,
    EngineTracer,
    VLLMContext,
    tp_only_refusal,
)

# The tail of worker.log searched for the engine processes' own error.
_LOG_TAIL_BYTES = 4 << 20


class VLLMLoader(FrameworkLoader):
    name: ClassVar[str] = "vllm"
    context_type: ClassVar[type[VLLMContext]] = VLLMContext
    distributions: ClassVar[tuple[str, ...]] = DISTRIBUTIONS
    install_hint: ClassVar[str] = "`make vllm` builds .venv-vllm"
    version_modules: ClassVar[tuple[str, ...]] = ("torch", "transformers", "vllm")
    preload_refusal: ClassVar[str | None] = (
        "vLLM starts its own engine processes and reads its environment at import"
    )
    ranks_refusal: ClassVar[str | None] = (
        "vLLM starts its own rank processes (tensor_parallel_size, its multiproc executor)"
    )
    own_ranks: ClassVar[bool] = True

    @classmethod
    def layout_refusal(cls, parallel: dict[str, Any]) -> str | None:
        return tp_only_refusal(parallel)

    def load(self, job: JobSpec, job_dir: Path, tracer: object) -> VLLMContext:
        if not isinstance(tracer, EngineTracer):
            raise UnsupportedError(f"tracer {job.tracer} does not drive a vLLM engine")
        from kerneltracer.worker.frameworks.vllm import engine

        engine.require_vllm()
        # Before vllm is imported: the tracer may set variables vLLM reads at import.
        settings = tracer.engine_settings(job_dir)
        return engine.load_vllm(job, job_dir, settings)

    def refine_failure(
        self, status: JobStatus, error: ErrorInfo, job_dir: Path
    ) -> tuple[JobStatus, ErrorInfo]:
        from kerneltracer.worker.frameworks.vllm.failure import with_engine_cause

        return with_engine_cause(status, error, _log_tail(JobPaths(job_dir).worker_log))


def _log_tail(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - _LOG_TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
