"""The op attribution's files for one trace: ``ops.csv`` / ``ops.parquet`` (one row per op,
shapes and module), ``kernels_by_op.csv``, ``ops.json`` (the summary: attributed share,
unattributed time by reason, CUDA graph join, top ops) and the ``ops.html`` page."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from kerneltracer.jsonio import atomic_write_json, atomic_write_text, atomic_writer

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
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if r[k] is None else r[k] for k in columns})
    atomic_write_text(path, buf.getvalue())
    return path


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def kind(col: str) -> Any:
        if col in INT_COLUMNS:
            return pa.int64()
        return pa.string() if col in STR_COLUMNS else pa.float64()

    schema = pa.schema([pa.field(c, kind(c), nullable=True) for c in OPS_COLUMNS])
    table = _arrow_table(rows, schema)
    with atomic_writer(path) as fh:
        pq.write_table(table, fh, compression="zstd")
    return path


def _arrow_table(rows: list[dict[str, Any]], schema: Any) -> Any:
    """The rows as an Arrow table of ``schema``. Through pyarrow's JSON reader where every
    value is plain (building one from Python objects imports pandas, ~0.3 s of CPU and most
    of writing the file); NaN, infinities and values of another type go the slow way."""
    import pyarrow as pa

    picked = [{c: r[c] for c in OPS_COLUMNS} for r in rows]
    if not picked or not all(_plain(c, v) for r in picked for c, v in r.items()):
        return pa.Table.from_pylist(picked, schema=schema)
    import orjson
    import pyarrow.json as pj

    text = b"\n".join(orjson.dumps(r) for r in picked)
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    return pj.read_json(io.BytesIO(text), parse_options=options).select(list(OPS_COLUMNS))


def _plain(column: str, value: Any) -> bool:
    """A value JSON holds as the column's own type (an int, a string, a finite float)."""
    t = type(value)
    if value is None:
        return True
    if column in INT_COLUMNS:
        return t is int and -(2**63) <= value < 2**63
    if column in STR_COLUMNS:
        return t is str
    return (t is float and math.isfinite(value)) or (t is int and abs(value) < 2**53)
