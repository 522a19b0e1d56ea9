"""torch_profiler: a torch.profiler chrome trace with shapes, and the key_averages table.

Steps run under a profiler schedule (one profiler warm-up step, then ``steps`` active
ones), so the trace carries ``ProfilerStep#N`` annotations that per-step analyses use.
"""

from __future__ import annotations

import csv
import gzip
import io
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from kerneltracer.core.artefacts import (
    KEY_AVERAGES_CSV,
    KEY_AVERAGES_TXT,
    PROFILER_TRACE_FILE,
    ArtefactKind,
    ArtefactPatterns,
)
from kerneltracer.core.layout import JobPaths
from kerneltracer.jsonio import atomic_write_bytes, atomic_writer
from kerneltracer.tracers.base import Tracer, TraceResult, TracerOptions

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.huggingface import HFContext

_TRACE_FILE = PROFILER_TRACE_FILE
_AVERAGES_CSV = KEY_AVERAGES_CSV
_AVERAGES_TXT = KEY_AVERAGES_TXT

_COLUMNS = [
    ("name", "key"),
    ("input_shapes", "input_shapes"),
    ("calls", "count"),
    ("cpu_time_total_us", "cpu_time_total"),
    ("self_cpu_time_total_us", "self_cpu_time_total"),
    ("device_time_total_us", "device_time_total"),
    ("self_device_time_total_us", "self_device_time_total"),
    ("cpu_memory_usage_bytes", "cpu_memory_usage"),
    ("self_cpu_memory_usage_bytes", "self_cpu_memory_usage"),
    ("device_memory_usage_bytes", "device_memory_usage"),
    ("flops", "flops"),
]


class ProfilerOptions(TracerOptions):
    steps: int = Field(2, ge=1, le=100, description="Profiled (active) steps")
    record_shapes: bool = True
    profile_memory: bool = True
    with_stack: bool = False
    with_flops: bool = True
    gzip_level: int = Field(5, ge=1, le=9)


class TorchProfilerTracer(Tracer["HFContext"]):
    real_ranks_refusal: ClassVar[str | None] = None  # one trace per rank
    name: ClassVar[str] = "torch_profiler"
    version: ClassVar[str] = "1"
    frameworks: ClassVar[frozenset[str]] = frozenset({"huggingface"})
    fake_weights_refusal: ClassVar[str | None] = (
        "a profiler measures kernel time, and a model on fake tensors runs no kernel: nothing it "
        "reported would be a measurement (torch_dispatch records the same ops and shapes)"
    )
    summary: ClassVar[str] = "torch.profiler chrome trace with shapes + key_averages table"
    outputs_doc: ClassVar[str] = f"{_TRACE_FILE}, {_AVERAGES_CSV}, {_AVERAGES_TXT}"
    preload_modules: ClassVar[tuple[str, ...]] = ("torch.profiler",)
    artefacts: ClassVar[ArtefactPatterns] = {
        _TRACE_FILE: ArtefactKind.CHROME_TRACE,
        _AVERAGES_CSV: ArtefactKind.KEY_AVERAGES,
        _AVERAGES_TXT: ArtefactKind.PROFILER_TEXT,
    }
    Options: ClassVar[type[TracerOptions]] = ProfilerOptions

    def trace(self, ctx: HFContext) -> Any:
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        opts = self.options
        assert isinstance(opts, ProfilerOptions)
        activities = [ProfilerActivity.CPU]
        if ctx.device.startswith("cuda"):
            activities.append(ProfilerActivity.CUDA)
        prof = profile(
            activities=activities,
            schedule=schedule(wait=0, warmup=1, active=opts.steps, repeat=1),
            record_shapes=opts.record_shapes,
            profile_memory=opts.profile_memory,
            with_stack=opts.with_stack,
            with_flops=opts.with_flops,
        )
        with prof:
            for _ in range(1 + opts.steps):
                ctx.step()
                if ctx.device.startswith("cuda"):
                    torch.cuda.synchronize()
                prof.step()
        return prof

    def write(self, ctx: HFContext, traced: Any, job_dir: Path) -> TraceResult:
        opts = self.options
        assert isinstance(opts, ProfilerOptions)
        raw = JobPaths(job_dir).profiler_export
        raw.parent.mkdir(parents=True, exist_ok=True)
        traced.export_chrome_trace(str(raw))
        with (
            open(raw, "rb") as src,
            atomic_writer(job_dir / _TRACE_FILE) as out,
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=opts.gzip_level) as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 20)
        raw.unlink()
        averages = traced.key_averages(group_by_input_shape=opts.record_shapes)
        rows = [[_cell(getattr(evt, attr, None)) for _, attr in _COLUMNS] for evt in averages]
        rows.sort(key=lambda r: -(r[4] or 0))
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([c for c, _ in _COLUMNS])
        writer.writerows(rows)
        atomic_write_bytes(job_dir / _AVERAGES_CSV, buf.getvalue().encode())
        sort_by = "self_cuda_time_total" if ctx.device.startswith("cuda") else "self_cpu_time_total"
        table = averages.table(sort_by=sort_by, row_limit=100)
        atomic_write_bytes(job_dir / _AVERAGES_TXT, table.encode())
        summary = {
            "events": len(traced.events() or []),
            "distinct_ops": len({r[0] for r in rows}),
            "steps": opts.steps,
            "activities": ["cpu", "cuda"] if ctx.device.startswith("cuda") else ["cpu"],
        }
        return TraceResult(outputs=[_TRACE_FILE, _AVERAGES_CSV, _AVERAGES_TXT], summary=summary)


def _cell(value: Any) -> Any:
    if isinstance(value, list):
        return str(value)
    if isinstance(value, float):
        return round(value, 3)
    return value
