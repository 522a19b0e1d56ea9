"""Timeline analysis of profiler chrome traces into the InferScope data model.

Python API::

    from kerneltracer.analysis.timeline import analyze_file, TraceIndex

    a = analyze_file("trace.json.gz")          # load, analyse, convert, validate
    a.bottleneck.bottleneck.type               # cpu_bound | gpu_bound | memory_bound | balanced
    a.temporal                                 # HTA-style idle / compute / non-compute (or None)
    idx = TraceIndex(a.inferscope)             # by type, time range, scope
    idx.between(10_000, 50_000, types={"gpu_kernel"})

Modules: loader/builder (chrome trace → numpy columns), bottleneck + suggestions (on
interval unions), gpu_breakdown (HTA's temporal and kernel breakdowns), convert +
schema + validate (InferScope trace file), index, ranks (multi-rank, stragglers), pipeline
and writer (reports), markdown/html (rendering), job (the per-job analysis); op → kernel
attribution: nesting (host intervals by thread), attribution (GPU event → launch → op),
cuda_graphs (graph replays joined to a capture trace), op_table (per-op GPU time and
roofline), ops_csv / ops_files / ops_html (ops.csv, kernels_by_op.csv, ops.json, ops.html).
"""

from __future__ import annotations

import importlib
from typing import Any

# Lazy exports: the registry imports ``timeline.job`` and must not pull numpy, msgspec and
# jinja2 into every ``kerneltracer`` command.
_EXPORTS = {
    "ChromeTrace": "loader",
    "TraceLoadError": "loader",
    "load_chrome_trace": "loader",
    "TraceIndex": "index",
    "TraceAnalysis": "pipeline",
    "analyze_file": "pipeline",
    "report_document": "pipeline",
    "ValidationReport": "validate",
    "validate": "validate",
    "to_inferscope": "convert",
    "write_inferscope": "inferscope_file",
    "run_timeline": "writer",
    "attribute": "attribution",
    "compute_ops": "ops_files",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
