"""Cross-model operator coverage of a run, and the diff of two runs.

``build_coverage(run_dir)`` reads the op tables of every ok torch_dispatch / torch_profiler /
vllm_profiler job; ``write_coverage(cov, out_dir)`` exports it as CSV, Parquet and JSON.
The diff (``kerneltracer.coverage.diff``) is imported on its own: it pulls in jinja2.
"""

from kerneltracer.coverage.export import write_coverage
from kerneltracer.coverage.matrix import Coverage, OpUse, build_coverage
from kerneltracer.coverage.scan import InputProblem

__all__ = ["Coverage", "InputProblem", "OpUse", "build_coverage", "write_coverage"]
