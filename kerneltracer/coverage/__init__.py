"""Cross-model operator coverage of a run, and the diff of two runs.

``build_coverage(run_dir)`` reads the op tables of every ok torch_dispatch / torch_profiler /
vllm_profiler job; ``write_coverage(cov, out_dir)`` exports it as CSV, Parquet and JSON.
The diff (``kerneltracer.coverage.diff``) is imported on its own: it pulls in jinja2.
"""

from kerneltracer.coverage.export import write_coverage
from kerneltracer.coverage.matrix import Coverage, OpUse, build_coverage
from kerneltracer.coverage.scan import InputProblem

# Its face: the names above, and ``scan`` (a run's jobs, read by the corpus and compile health),
# ``export`` / ``diff`` / ``diff_schema`` / ``diff_html`` (the table, two runs compared).
__all__ = [
    "Coverage",
    "InputProblem",
    "OpUse",
    "build_coverage",
    "diff",
    "diff_html",
    "diff_schema",
    "export",
    "scan",
    "write_coverage",
]
