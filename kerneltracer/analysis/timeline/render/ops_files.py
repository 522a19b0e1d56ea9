"""The op attribution's files for one trace: ``ops.csv`` / ``ops.parquet`` (one row per op,
shapes and module), ``kernels_by_op.csv``, ``ops.json`` (the summary: attributed share,
unattributed time by reason, CUDA graph join, top ops) and the ``ops.html`` page."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.core.arrowrows import write_parquet
from kerneltracer.core.ops_csv import (
    INT_COLUMNS,
    KERNEL_COLUMNS,
    KERNELS_CSV,
    OPS_COLUMNS,
    OPS_CSV,
    OPS_HTML,
    OPS_JSON,
    OPS_PARQUET,
    STR_COLUMNS,
)
from kerneltracer.jsonio import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from kerneltracer.analysis.timeline.analyses.ops import OpsResult


def write_ops_files(result: OpsResult, out_dir: Path, title: str = "") -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    records = [r.record() for r in result.table.rows]
    kernels = [k.record() for k in result.table.kernels]
    summary = result.summary()
    written = [
        _csv(out_dir / OPS_CSV, OPS_COLUMNS, records),
        _parquet(out_dir / OPS_PARQUET, records),
        _csv(out_dir / KERNELS_CSV, KERNEL_COLUMNS, kernels),
    ]
    atomic_write_json(out_dir / OPS_JSON, summary)
    from kerneltracer.analysis.timeline.render.ops_html import render_ops_html

    atomic_write_text(out_dir / OPS_HTML, render_ops_html(summary, records, kernels, title))
    return [*written, out_dir / OPS_JSON, out_dir / OPS_HTML]


def _csv(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> Path:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")  # DictWriter's rows, without its checks a row
    w.writerow(columns)
    w.writerows([["" if r[k] is None else r[k] for k in columns] for r in rows])
    atomic_write_text(path, buf.getvalue())
    return path


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa

    def kind(col: str) -> Any:
        if col in INT_COLUMNS:
            return pa.int64()
        return pa.string() if col in STR_COLUMNS else pa.float64()

    schema = pa.schema([pa.field(c, kind(c), nullable=True) for c in OPS_COLUMNS])
    return write_parquet(path, rows, schema)
