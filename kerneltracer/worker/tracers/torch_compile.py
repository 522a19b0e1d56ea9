"""torch_compile: the model under ``torch.compile`` (inductor), with what the compiler did.

``TORCH_TRACE`` is set for the worker before torch is imported, so the job dir gets the
structured trace log (``torch_trace/*.log``, readable by tlparse). Besides it: the inductor
output code (the generated kernels: C++ on CPU, Triton on GPU) copied out of the job's own
inductor cache, and ``compile_summary.json`` with graph count, graph breaks with reasons,
recompiles and the compile-time metrics of every frame compile.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from kerneltracer.core.artefacts import (
    COMPILE_SUMMARY_FILE,
    TORCH_TRACE_DIR,
    ArtefactPatterns,
    compile_artefacts,
)
from kerneltracer.errors import KernelTracerError
from kerneltracer.jsonio import atomic_write_json
from kerneltracer.tracers.base import Tracer, TraceResult, TracerOptions
from kerneltracer.worker.tracers._compiler_errors import graph_break_line, reraise_as_compiler_error

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.huggingface import HFContext

CODE_DIR = "inductor_code"

_METRIC_FIELDS = (
    "compile_id",
    "co_name",
    "co_filename",
    "co_firstlineno",
    "graph_op_count",
    "graph_node_count",
    "guard_count",
    "entire_frame_compile_time_s",
    "backend_compile_time_s",
    "inductor_compile_time_s",
    "code_gen_time_s",
    "fail_type",
    "fail_reason",
    "restart_reasons",
)


class CompileOptions(TracerOptions):
    backend: str = Field(
        "inductor",
        pattern=r"^[A-Za-z0-9_.:-]{1,100}$",
        description="torch.compile backend (inductor, aot_eager, eager, ...; checked against "
        "torch._dynamo.list_backends() in the worker)",
    )
    mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = (
        "default"
    )
    fullgraph: bool = False
    dynamic: bool | None = None
    steps: int = Field(1, ge=0, le=100, description="Timed steps after the compiling one")
    cache_dir: str | None = Field(
        None,
        description="Share this inductor cache on purpose (warm); default: the job's own, cold",
    )
    recompile_probe: bool = Field(
        False,
        description="After the steps, one more step on inputs of another shape "
        "(probe_batch_size / probe_seq_len): shows recompiles and dynamic shapes",
    )
    probe_batch_size: int | None = Field(
        None, ge=1, le=65536, description="Probe batch size (default: the job's + 1)"
    )
    probe_seq_len: int | None = Field(
        None, ge=1, le=1_048_576, description="Probe sequence length (default: the job's)"
    )

    @model_validator(mode="after")
    def _mode_needs_inductor(self) -> CompileOptions:
        if self.mode != "default" and self.backend != "inductor":
            raise ValueError(
                f"mode {self.mode!r} is an inductor mode; backend {self.backend!r} takes "
                "only mode 'default' (valid: backend inductor with any mode)"
            )
        return self


class TorchCompileTracer(Tracer["HFContext"]):
    real_ranks_refusal: ClassVar[str | None] = None  # one TORCH_TRACE per rank
    name: ClassVar[str] = "torch_compile"
    version: ClassVar[str] = "1"
    frameworks: ClassVar[frozenset[str]] = frozenset({"huggingface"})
    # Graphs are of one forward; generate() is a Python loop of prefill + decode forwards.
    phases: ClassVar[frozenset[str]] = frozenset({"prefill", "decode"})
    # Weights fake: Inductor generates (and builds) the code of the full-size graphs but it is
    # never run, the step goes on eagerly on fake tensors; no step is timed.
    fake_weights_refusal: ClassVar[str | None] = None
    parallel_refusal: ClassVar[str | None] = (
        "compiling a rank of a simulated layout is not checked for faithfulness yet (inductor "
        "lowers the fake process group's collectives; print_fx / print_aten give its graphs)"
    )
    fresh_interpreter: ClassVar[bool] = True  # TORCH_TRACE and inductor's cache, at import
    summary: ClassVar[str] = (
        "torch.compile (inductor): TORCH_TRACE log, output code, graph breaks, compile times"
    )
    outputs_doc: ClassVar[str] = f"{TORCH_TRACE_DIR}/*.log, {CODE_DIR}/*.py, {COMPILE_SUMMARY_FILE}"
    artefacts: ClassVar[ArtefactPatterns] = compile_artefacts(CODE_DIR)
    Options: ClassVar[type[TracerOptions]] = CompileOptions

    @classmethod
    def worker_env(cls, job_dir: Path, options: TracerOptions) -> dict[str, str]:
        assert isinstance(options, CompileOptions)
        env = {"TORCH_TRACE": str(job_dir / TORCH_TRACE_DIR)}
        if options.cache_dir is not None:
            env["TORCHINDUCTOR_CACHE_DIR"] = str(Path(options.cache_dir).expanduser().resolve())
        return env

    def trace(self, ctx: HFContext) -> dict[str, Any]:
        import torch
        from torch._dynamo.utils import counters

        opts = self.options
        assert isinstance(opts, CompileOptions)
        _check_backend(opts.backend)
        torch._dynamo.reset()
        counters.clear()
        eager = ctx.model
        fake = ctx.fake_session is not None
        if fake and opts.backend == "inductor":
            backend = _codegen_only(opts.mode, opts.dynamic)
            ctx.model = torch.compile(
                eager, backend=backend, fullgraph=opts.fullgraph, dynamic=opts.dynamic
            )
        elif opts.backend == "inductor":
            ctx.model = torch.compile(
                eager, mode=opts.mode, fullgraph=opts.fullgraph, dynamic=opts.dynamic
            )
        else:
            ctx.model = torch.compile(
                eager, backend=opts.backend, fullgraph=opts.fullgraph, dynamic=opts.dynamic
            )
        probe: dict[str, Any] | None = None
        try:
            t0 = time.perf_counter()
            try:
                ctx.step()
            except (MemoryError, KeyboardInterrupt, KernelTracerError):
                raise
            except Exception as exc:
                raise reraise_as_compiler_error(exc, "torch.compile") from None
            _sync(ctx)
            first = time.perf_counter() - t0
            times = []
            for _ in range(opts.steps):
                t0 = time.perf_counter()
                ctx.step()
                _sync(ctx)
                times.append(time.perf_counter() - t0)
            if opts.recompile_probe:
                probe = _probe_step(ctx, opts)
        finally:
            ctx.model = eager
        return {
            # Under fake weights a step runs no kernel: its time measures nothing.
            "first_step_s": None if fake else round(first, 4),
            "step_s": [] if fake else [round(t, 6) for t in times],
            "codegen_only": fake,
            "backend": opts.backend,
            "probe": probe,
            "counters": {k: dict(v) for k, v in counters.items()},
            "frames": [_metrics_row(m) for m in torch._dynamo.utils.get_compilation_metrics()],
            "code_files": _output_code_files(),
        }

    def write(self, ctx: HFContext, traced: Any, job_dir: Path) -> TraceResult:
        code = _copy_code(traced["code_files"], job_dir / CODE_DIR)
        logs = sorted(p for p in (job_dir / TORCH_TRACE_DIR).glob("*.log") if p.stat().st_size > 0)
        counters = traced["counters"]
        frames = traced["frames"]
        breaks = counters.get("graph_break", {})
        recompiles = [f for f in frames if _is_recompile(f.get("compile_id"))]
        summary: dict[str, Any] = {
            "graphs": int(counters.get("stats", {}).get("unique_graphs", 0)),
            "frame_compiles": len(frames),
            "graph_break_count": int(sum(breaks.values())),
            "graph_breaks": [
                {"reason": graph_break_line(r), "count": int(n)} for r, n in breaks.items()
            ],
            "recompiles": len(recompiles),
            "failed_frame_compiles": sum(1 for f in frames if f.get("fail_type")),
            "compile_time_s": round(
                sum(f.get("entire_frame_compile_time_s") or 0.0 for f in frames), 3
            ),
            "first_step_s": traced["first_step_s"],
            "step_s": traced["step_s"],
            "codegen_only": traced["codegen_only"],
            "backend": traced["backend"],
            "probe": traced["probe"],
            "kernel_files": len(code),
            "trace_logs": len(logs),
        }
        atomic_write_json(
            job_dir / COMPILE_SUMMARY_FILE,
            {
                **summary,
                "graph_break_details": [{"reason": r, "count": int(n)} for r, n in breaks.items()],
                "frames": frames,
                "counters": counters,
                "recompile_frames": recompiles,
            },
        )
        outputs = [str(p.relative_to(job_dir)) for p in logs] + code + [COMPILE_SUMMARY_FILE]
        return TraceResult(outputs=outputs, summary=summary)


def _codegen_only(mode: str, dynamic: bool | None) -> Any:
    """A backend that has Inductor generate and build the code of each graph, then runs the
    graph eagerly: the code of a full-size model on fake tensors, which compiled kernels could
    not run (they would read storage fake tensors do not have)."""
    import torch
    from torch._inductor.compile_fx import compile_fx

    patches = {
        k: v
        for k, v in torch._inductor.list_mode_options(mode, dynamic).items()
        if k != "triton.cudagraphs"  # no graph is replayed
    }

    def backend(gm: Any, example_inputs: Any) -> Any:
        # The backward is compiled when it first runs, which it never does here: lower it now.
        with torch._functorch.config.patch(force_non_lazy_backward_lowering=True):
            compile_fx(gm, example_inputs, config_patches=patches)
        return gm.forward

    return backend


def _check_backend(name: str) -> None:
    import torch

    from kerneltracer.errors import UsageError

    valid = torch._dynamo.list_backends(exclude_tags=())
    if name not in valid:
        raise UsageError(f"unknown torch.compile backend {name!r} (valid: {', '.join(valid)})")


def _probe_step(ctx: HFContext, opts: CompileOptions) -> dict[str, Any]:
    """One more step on inputs of another shape, through the same compiled model: a
    static-shape compile recompiles (its guard fails: the reason names the size), an
    automatic-dynamic one compiles a dynamic graph, ``dynamic=True`` does neither."""
    import torch

    from kerneltracer.worker.frameworks.huggingface.loader import example_workload

    job = ctx.job
    batch = opts.probe_batch_size or job.batch_size + 1
    seq_len = opts.probe_seq_len or job.seq_len
    probe_job = job.model_copy(update={"batch_size": batch, "seq_len": seq_len})
    dtype = getattr(torch, ctx.dtype)
    eager = getattr(ctx.model, "_orig_mod", ctx.model)
    config = getattr(eager, "config", None)
    workload = example_workload(eager, config, ctx.tokenizer, probe_job, ctx.device, dtype)
    saved, ctx.workload = ctx.workload, workload
    try:
        t0 = time.perf_counter()
        ctx.step()
        _sync(ctx)
        seconds = time.perf_counter() - t0
    finally:
        ctx.workload = saved
    return {
        "batch_size": batch,
        "seq_len": seq_len,
        "step_s": None if ctx.fake_session is not None else round(seconds, 4),
    }


def _sync(ctx: HFContext) -> None:
    if ctx.device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _metrics_row(metrics: Any) -> dict[str, Any]:
    row: dict[str, Any] = {name: getattr(metrics, name, None) for name in _METRIC_FIELDS}
    reasons = row["restart_reasons"]
    if isinstance(reasons, set | frozenset | tuple | list):
        row["restart_reasons"] = sorted(str(r) for r in reasons)
    if isinstance(row["fail_reason"], str):
        row["fail_reason"] = row["fail_reason"][:1000]
    return row


def _is_recompile(compile_id: Any) -> bool:
    # compile ids read "frame/attempt" ("0/1": the first frame compiled a second time).
    try:
        return int(str(compile_id).split("/")[1].split("_")[0]) > 0
    except (IndexError, ValueError):
        return False


def _output_code_files() -> list[str]:
    """Files of every module inductor generated and loaded: output code and its kernels."""
    from torch._inductor.codecache import PyCodeCache

    modules: Any = PyCodeCache.modules
    loaded = list(modules.values()) if isinstance(modules, dict) else list(modules)
    return sorted({f for m in loaded if (f := getattr(m, "__file__", None))})


def _copy_code(files: list[str], dest: Path) -> list[str]:
    # The cache lives under job_dir/tmp, deleted after the job: keep copies in the job dir.
    out: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    for src in files:
        path = Path(src)
        if not path.is_file():
            continue
        target = dest / path.name
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(path, tmp)
        tmp.replace(target)
        out.append(f"{dest.name}/{target.name}")
    return out
