"""vllm_profiler: vLLM's own torch profiler around generate, in vLLM's interpreter.

vLLM owns its execution loop and runs the model in its own processes, so the model cannot
be wrapped like an eager module: the engine is built with its profiler configured and
``start_profile()`` / ``stop_profile()`` bracket the traced requests. Each engine worker
(rank) writes its own chrome trace.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from kerneltracer.core import op_table
from kerneltracer.core.artefacts import OP_TABLE_FILE, ArtefactKind, ArtefactPatterns
from kerneltracer.core.layout import JobPaths
from kerneltracer.jsonio import atomic_write_bytes
from kerneltracer.tracers.base import Tracer, TraceResult, TracerOptions

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.vllm import EngineSettings, VLLMContext

_PROFILE_DIR = "profile"
OP_TABLE = OP_TABLE_FILE
# profiler_config arrived in vLLM 0.13; the VLLM_TORCH_PROFILER_* variables left in 0.16.
_PROFILER_CONFIG_SINCE = (0, 13)


class VllmEngineOptions(TracerOptions):
    """Engine knobs shared by the vLLM tracers."""

    kv_cache_gb: float = Field(
        0.25, gt=0, description="KV cache size (kv_cache_memory_bytes; on CPU the RAM it takes)"
    )
    max_tokens: int = Field(8, ge=1, le=4096, description="Tokens generated per prompt")
    max_model_len: int | None = Field(
        None,
        ge=16,
        description="Context length (default: max(256, seq_len + max_tokens), at most the "
        "model's limit)",
    )
    enforce_eager: bool = Field(True, description="No torch.compile / CUDA graphs in the engine")
    warmup_requests: int = Field(1, ge=0, le=100, description="Untraced generate calls first")

    def engine(self, **extra: Any) -> EngineSettings:
        """What the worker builds the engine with; ``extra`` goes to ``vllm.LLM`` as is."""
        from kerneltracer.worker.frameworks.vllm.context import EngineSettings

        return EngineSettings(
            kv_cache_bytes=int(self.kv_cache_gb * (1 << 30)),
            max_tokens=self.max_tokens,
            max_model_len=self.max_model_len,
            enforce_eager=self.enforce_eager,
            extra=extra,
        )


class VllmProfilerOptions(VllmEngineOptions):
    steps: int = Field(1, ge=1, le=100, description="Traced generate calls")
    record_shapes: bool = True
    with_stack: bool = False
    with_memory: bool = False
    with_flops: bool = False
    gzip: bool = True
    delay_iterations: int = Field(0, ge=0, description="Engine steps skipped after start_profile")
    max_iterations: int = Field(0, ge=0, description="Engine steps profiled at most (0: all)")


def profiler_setup(
    version: tuple[int, ...], out_dir: Path, opts: VllmProfilerOptions
) -> tuple[dict[str, Any], dict[str, str]]:
    """Engine kwargs and environment that turn vLLM's torch profiler on, for this version."""
    if version >= _PROFILER_CONFIG_SINCE:
        config = {
            "profiler": "torch",
            "torch_profiler_dir": str(out_dir),
            "torch_profiler_record_shapes": opts.record_shapes,
            "torch_profiler_with_stack": opts.with_stack,
            "torch_profiler_with_memory": opts.with_memory,
            "torch_profiler_with_flops": opts.with_flops,
            "torch_profiler_use_gzip": opts.gzip,
            "delay_iterations": opts.delay_iterations,
            "max_iterations": opts.max_iterations,
        }
        return {"profiler_config": config}, {}

    def flag(value: bool) -> str:
        return "1" if value else "0"

    env = {
        "VLLM_TORCH_PROFILER_DIR": str(out_dir),
        "VLLM_TORCH_PROFILER_RECORD_SHAPES": flag(opts.record_shapes),
        "VLLM_TORCH_PROFILER_WITH_STACK": flag(opts.with_stack),
        "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": flag(opts.with_memory),
        "VLLM_TORCH_PROFILER_WITH_FLOPS": flag(opts.with_flops),
        "VLLM_PROFILER_DELAY_ITERS": str(opts.delay_iterations),
        "VLLM_PROFILER_MAX_ITERS": str(opts.max_iterations),
    }
    return {}, env


class VllmEngineTracer(Tracer["VLLMContext"]):
    """What the tracers that drive a vLLM engine share; their options are
    :class:`VllmEngineOptions`."""

    frameworks: ClassVar[frozenset[str]] = frozenset({"vllm"})
    # vLLM reads its environment (TORCH_TRACE, VLLM_CACHE_ROOT, its profiler's) at import.
    fresh_interpreter: ClassVar[bool] = True
    fake_weights_refusal: ClassVar[str | None] = (
        "vLLM's engine loads and runs real weights (trace the model with framework huggingface)"
    )
    # The engine's step is generate() (prefill + decode); there is no single-phase step.
    phases: ClassVar[frozenset[str]] = frozenset({"prefill", "generate"})

    # With parallel tp, the engine's own ranks (tensor_parallel_size): see the vllm loader.
    real_ranks_refusal: ClassVar[str | None] = None

    def warmup(self, ctx: VLLMContext) -> None:
        assert isinstance(self.options, VllmEngineOptions)  # the registry validated it
        for _ in range(self.options.warmup_requests):
            ctx.step()


class VllmProfilerTracer(VllmEngineTracer):
    name: ClassVar[str] = "vllm_profiler"
    version: ClassVar[str] = "1"
    summary: ClassVar[str] = "vLLM's torch profiler around generate: chrome trace(s) + op table"
    outputs_doc: ClassVar[str] = (
        f"{_PROFILE_DIR}/*.pt.trace.json.gz (one per rank), {_PROFILE_DIR}/*profiler_out*.txt, "
        f"{OP_TABLE}"
    )
    artefacts: ClassVar[ArtefactPatterns] = {
        f"{_PROFILE_DIR}/*.json*": ArtefactKind.CHROME_TRACE,
        f"{_PROFILE_DIR}/*profiler_out*.txt": ArtefactKind.PROFILER_TEXT,
        OP_TABLE: ArtefactKind.OP_TABLE,
    }
    Options: ClassVar[type[TracerOptions]] = VllmProfilerOptions

    @property
    def opts(self) -> VllmProfilerOptions:
        assert isinstance(self.options, VllmProfilerOptions)  # the registry validated it
        return self.options

    def engine_settings(self, job_dir: Path) -> EngineSettings:
        import os

        from kerneltracer.worker.frameworks.vllm.engine import require_vllm, version_tuple

        version = require_vllm()
        kwargs, env = profiler_setup(version_tuple(version), job_dir / _PROFILE_DIR, self.opts)
        os.environ.update(env)  # before vllm is imported: it reads them at import
        return self.opts.engine(**kwargs)

    def trace(self, ctx: VLLMContext) -> Any:
        engine = ctx.llm
        engine.start_profile()
        try:
            outputs = [ctx.step() for _ in range(self.opts.steps)]
        finally:
            engine.stop_profile()
        return sum(len(o.outputs[0].token_ids) for batch in outputs for o in batch)

    def write(self, ctx: VLLMContext, traced: Any, job_dir: Path) -> TraceResult:
        from kerneltracer.errors import TracerError

        folder = job_dir / _PROFILE_DIR
        traces = sorted(folder.glob("*.json*")) if folder.is_dir() else []
        if not traces:
            raise TracerError(f"vLLM's profiler wrote no chrome trace into {folder}")
        outputs: list[str] = []
        per_rank: dict[str, Any] = {}
        if ctx.job.parallel:
            # Each engine rank's files into rank_<r>/, as every multi-rank job keeps them.
            for rank, files in sorted(_by_rank(folder).items()):
                rank_dir = JobPaths(job_dir).rank(rank)
                moved = _move_into(files, rank_dir / _PROFILE_DIR)
                per_rank[str(rank)] = _tables(moved, rank_dir)
                outputs += [str(p.relative_to(job_dir)) for p in moved]
                outputs.append(str((rank_dir / OP_TABLE).relative_to(job_dir)))
            traces = sorted(job_dir.glob(f"rank_*/{_PROFILE_DIR}/*.json*"))
            traces += sorted(folder.glob("*.json*"))  # any file of no rank stays
        # The job's op table: every rank's events.
        summary = _tables(traces, job_dir)
        outputs += [str(p.relative_to(job_dir)) for p in sorted(folder.iterdir()) if p.is_file()]
        summary["generated_tokens"] = traced
        if per_rank:
            from kerneltracer.core.parallelspec import ParallelSpec

            label = ParallelSpec.from_json(ctx.job.parallel or {}).label()
            summary.update(layout=label, world_size=len(per_rank), real_ranks=True, ranks=per_rank)
        return TraceResult(outputs=[*outputs, OP_TABLE], summary=summary)


_RANK_FILE = re.compile(r"rank(?P<rank>\d+)\.")  # vLLM names each rank's files rank<r>.*


def _by_rank(folder: Path) -> dict[int, list[Path]]:
    found: dict[int, list[Path]] = {}
    for path in sorted(folder.iterdir()):
        m = _RANK_FILE.match(path.name)
        if m is not None and path.is_file():
            found.setdefault(int(m["rank"]), []).append(path)
    return found


def _move_into(files: list[Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [p.replace(folder / p.name) for p in files]


def _tables(files: list[Path], out_dir: Path) -> dict[str, Any]:
    """The op table of these traces, written into ``out_dir``, and its figures."""
    traces = [p for p in files if ".json" in p.name]
    events = [e for path in traces for e in op_table.load_events(path)]
    rows = op_table.op_table(events)
    atomic_write_bytes(out_dir / OP_TABLE, op_table.to_csv(rows))
    summary = {
        "traces": len(traces),
        "trace_bytes": sum(p.stat().st_size for p in traces),
        "events": len(events),
        "distinct_ops": len({r.name for r in rows if r.kind == "cpu_op"}),
        "distinct_kernels": len({r.name for r in rows if r.kind == "kernel"}),
    }
    return summary
