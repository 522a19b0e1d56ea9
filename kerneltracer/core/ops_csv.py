"""The ops.csv contract: file names, columns, and a typed reader, without the analysis.

The timeline analysis writes these files (one folder per trace under its analysis dir);
fleet views and coverage read them without importing numpy or the attribution, so the
format lives here, below both."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from kerneltracer.errors import InputFileError
from kerneltracer.inputguard import read_input_text

# The analysis whose per-trace folders hold the files below (``TimelineAnalysis.name``).
TIMELINE_ANALYSIS = "timeline"
OPS_CSV = "ops.csv"
OPS_PARQUET = "ops.parquet"
KERNELS_CSV = "kernels_by_op.csv"
OPS_JSON = "ops.json"
OPS_HTML = "ops.html"
OPS_COLUMNS = (
    "op",
    "input_shapes",
    "input_dtypes",
    "module",
    "kind",
    "unattributed_reason",
    "calls",
    "gpu_events",
    "gpu_time_us",
    "gpu_time_incl_us",
    "mean_gpu_time_us",
    "launch_overhead_us",
    "mean_queue_delay_us",
    "steps",
    "python_frame",
    "est_flops",
    "est_bytes",
    "cost_category",
    "op_category",
    "achieved_tflops",
    "achieved_tbs",
    "intensity",
    "bound",
    "efficiency",
    "device",
)
KERNEL_COLUMNS = (
    "op",
    "input_shapes",
    "module",
    "unattributed_reason",
    "kernel",
    "stream",
    "count",
    "total_us",
    "mean_us",
    "min_us",
    "max_us",
)
INT_COLUMNS = frozenset({"calls", "gpu_events", "steps", "est_flops", "est_bytes", "stream"})
STR_COLUMNS = frozenset(
    {"op", "input_shapes", "input_dtypes", "module", "kind", "unattributed_reason"}
    | {"python_frame"}
    | {"cost_category", "op_category", "bound", "device"}
)


def read_ops_csv(path: Path) -> list[dict[str, Any]]:
    """ops.csv rows with numbers typed (None for empty or malformed cells): what fleet
    views read. Through the input guard (a run dir may come from anywhere); a file that
    is not a readable CSV raises InputFileError."""
    text = read_input_text(path, what="ops table")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputFileError(f"{path}: malformed CSV ({exc})") from None
    out = []
    for r in rows:
        typed: dict[str, Any] = {}
        for k, v in r.items():
            if k in STR_COLUMNS or v is None:
                typed[k] = v
            else:
                typed[k] = _number(v, k in INT_COLUMNS)
        out.append(typed)
    return out


def _number(text: str, integer: bool) -> int | float | None:
    """A cell as a number; None for an empty or malformed one (a file edited by hand)."""
    try:
        return int(text) if integer else float(text)
    except ValueError:
        return None
