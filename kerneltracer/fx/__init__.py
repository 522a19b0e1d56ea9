"""FX graph optimizer: redundant-op elimination and recomputation, verified.

Worker/analysis-side code: most modules import torch, so nothing here is imported by the
orchestrator or at CLI start-up (this ``__init__`` stays empty on purpose).

* :mod:`.optimizer` — ``GraphOptimizer``: trace, apply passes, verify with rollback, benchmark;
* :mod:`.tracing` — ``symbolic_trace``, else ``torch.export`` (HF models), else a clear error;
* :mod:`.passes` — the ``OptimizationPass`` contract, the registry, ``redundant_ops`` and
  ``recompute``;
* :mod:`.purity`, :mod:`.nodetable`, :mod:`.cse` — torch-free rules, node-table format and
  CSE planner shared by the live pass and the ``fx_redundancy`` analysis (which uses this
  package from ``kerneltracer.analysis.fx_redundancy``; nothing here imports analyses);
* :mod:`.graph_table` — live graph → node table;
* :mod:`.verify`, :mod:`.measure`, :mod:`.report` — numerical checks, measurements, report;
* :mod:`.models` — built-in test models (MLP, Mini-ResNet, deep net), the tiny Llama
  builder, ``MODEL_SPEC`` loading.

The face other packages import: ``optimizer``, ``passes``, ``models`` (``kerneltracer fx``),
``graph_table`` (the worker's graph tracers); the rest is internal.
"""

__all__ = ["graph_table", "models", "optimizer", "passes"]
