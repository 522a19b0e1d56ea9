"""Timeline analysis of profiler chrome traces into the InferScope data model.

Python API::

    from kerneltracer.analysis.timeline import analyze_file, TraceIndex

    a = analyze_file("trace.json.gz")          # load, analyse, convert, validate
    a.bottleneck.bottleneck.type               # cpu_bound | gpu_bound | memory_bound | balanced
    a.temporal                                 # HTA-style idle / compute / non-compute (or None)
    idx = TraceIndex(a.inferscope)             # by type, time range, scope
    idx.between(10_000, 50_000, types={"gpu_kernel"})

Sub-packages, each importing only those listed before it:

- ``load``: chrome trace → numpy columns (``loader``, ``builder``);
- ``model``: categories, interval arithmetic, result models, the InferScope trace model
  (``schema``, ``validate``, ``index``);
- ``analyses``: bottleneck + suggestions (on interval unions), HTA's temporal and kernel
  breakdowns (``gpu_breakdown``), multi-rank stragglers (``ranks``), op → kernel
  attribution (``attribution``, ``cuda_graphs``, ``op_table``, ``ops``);
- ``render``: Markdown / HTML reports, the ops files and ``ops.html``, the InferScope file
  (``convert``, ``inferscope_file``, written by a forked child).

``pipeline`` runs the analyses on one trace, ``writer`` writes a set of traces' reports, and
``job`` is the per-job analysis the registry runs. The ops.csv format itself is
``kerneltracer.core.ops_csv`` (coverage and the fleet views read it).
"""

from __future__ import annotations

import importlib
from typing import Any

# Lazy exports: the registry imports ``timeline.job`` and must not pull numpy, msgspec and
# jinja2 into every ``kerneltracer`` command.
_EXPORTS = {
    "ChromeTrace": "load.loader",
    "load_chrome_trace": "load.loader",
    "TraceIndex": "model.index",
    "ValidationReport": "model.validate",
    "validate": "model.validate",
    "attribute": "analyses.attribution",
    "compute_ops": "analyses.ops",
    "to_inferscope": "render.convert",
    "write_inferscope": "render.inferscope_file",
    "OpsOptions": "pipeline",
    "TraceAnalysis": "pipeline",
    "analyze_file": "pipeline",
    "report_document": "pipeline",
    "run_timeline": "writer",
}
# The lazy names, and the submodules other packages import (contract `faces`): ``job`` (the
# report's ops page), ``pipeline`` and ``writer`` (``kerneltracer timeline``, the Python API),
# ``load`` (its ``loader``), ``analyses`` (its ``multirank``).
__all__ = [
    "ChromeTrace",
    "OpsOptions",
    "TraceAnalysis",
    "TraceIndex",
    "ValidationReport",
    "analyses",
    "analyze_file",
    "attribute",
    "compute_ops",
    "job",
    "load",
    "load_chrome_trace",
    "pipeline",
    "report_document",
    "run_timeline",
    "to_inferscope",
    "validate",
    "write_inferscope",
    "writer",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
