"""torch_dispatch: every aten op call seen under a TorchDispatchMode, aggregated by signature.

Overhead matters (the trace is of the model, not of the tracer): each call costs one tuple
build and one dict lookup; nothing is formatted or serialised until ``write``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kerneltracer.core.artefacts import (
    DISPATCH_COUNTS_FILE,
    DISPATCH_OPS_FILE,
    DISPATCH_SUMMARY_FILE,
    ArtefactKind,
    ArtefactPatterns,
)
from kerneltracer.jsonio import atomic_write_bytes, atomic_write_json, atomic_write_jsonl
from kerneltracer.tracers.base import Tracer, TraceResult, TracerOptions

if TYPE_CHECKING:
    from kerneltracer.worker.frameworks.huggingface import HFContext

_OPS_FILE = DISPATCH_OPS_FILE
SUMMARY_FILE = DISPATCH_SUMMARY_FILE
_COUNTS_FILE = DISPATCH_COUNTS_FILE


class DispatchOptions(TracerOptions):
    record_strides: bool = True


class TorchDispatchTracer(Tracer["HFContext"]):
    name: ClassVar[str] = "torch_dispatch"
    version: ClassVar[str] = "2"  # 2: integer ranges, tagged scalars, module paths
    frameworks: ClassVar[frozenset[str]] = frozenset({"huggingface"})
    fake_weights_refusal: ClassVar[str | None] = None
    parallel_refusal: ClassVar[str | None] = None
    real_ranks_refusal: ClassVar[str | None] = None
    summary: ClassVar[str] = (
        "every aten op call (TorchDispatchMode): shapes, dtypes, strides, counts, "
        "integer ranges and module paths (what replay needs)"
    )
    outputs_doc: ClassVar[str] = f"{_OPS_FILE}, {SUMMARY_FILE}, {_COUNTS_FILE}"
    preload_modules: ClassVar[tuple[str, ...]] = ("kerneltracer.worker.tracers._dispatch_recorder",)
    artefacts: ClassVar[ArtefactPatterns] = {
        _OPS_FILE: ArtefactKind.DISPATCH_SIGNATURES,
        SUMMARY_FILE: ArtefactKind.DISPATCH_SUMMARY,
        _COUNTS_FILE: ArtefactKind.OP_COUNTS,
    }
    Options: ClassVar[type[TracerOptions]] = DispatchOptions

    def trace(self, ctx: HFContext) -> dict[Any, list[Any]]:
        from kerneltracer.worker.tracers._dispatch_recorder import DispatchRecorder, ModulePaths

        assert isinstance(self.options, DispatchOptions)
        modules = ModulePaths(ctx.model)
        recorder = DispatchRecorder(record_strides=self.options.record_strides, modules=modules)
        with modules, recorder:
            ctx.step(before_backward=recorder.enter_backward)
        return recorder.table

    def write(self, ctx: HFContext, traced: Any, job_dir: Path) -> TraceResult:
        from kerneltracer.worker.tracers._dispatch_recorder import rows_of

        rows = rows_of(traced)
        atomic_write_jsonl(job_dir / _OPS_FILE, rows)
        per_op: dict[str, dict[str, int]] = {}
        for row in rows:
            entry = per_op.setdefault(row["op"], {"calls": 0, "signatures": 0})
            entry["calls"] += row["count"]
            entry["signatures"] += 1
        ordered = dict(sorted(per_op.items(), key=lambda kv: (-kv[1]["calls"], kv[0])))
        phases: dict[str, int] = {}
        for row in rows:
            phases[row["phase"]] = phases.get(row["phase"], 0) + row["count"]
        summary = {
            "total_calls": sum(r["count"] for r in rows),
            "unique_ops": len(per_op),
            "unique_signatures": len(rows),
            "calls_by_phase": phases,
        }
        atomic_write_json(job_dir / SUMMARY_FILE, {**summary, "ops": ordered})
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["op", "calls", "signatures"])
        writer.writerows([op, v["calls"], v["signatures"]] for op, v in ordered.items())
        atomic_write_bytes(job_dir / _COUNTS_FILE, buf.getvalue().encode())
        return TraceResult(outputs=[_OPS_FILE, SUMMARY_FILE, _COUNTS_FILE], summary=summary)
