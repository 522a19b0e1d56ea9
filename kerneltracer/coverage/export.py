"""Write a :class:`Coverage` as files users query with pandas / DuckDB, all atomically.

- ``coverage.csv``: long format, one row per (op, model, source); empty cell = null.
  ``model`` is the model variant's label (``tiny-llama [decode]``); ``model_id``, ``mode``
  and ``phase`` are its parts.
  ``est_flops`` / ``est_bytes`` / ``est_time_lb_us`` are estimated from shapes (dispatch
  signatures; the time is the roofline lower bound on ``est_device`` of the summary).
- ``coverage.parquet``: the same rows with proper dtypes (int64 / float64, nullable).
- ``coverage_matrix.csv``: wide, ops x models call counts from the best source (dispatch
  summaries when the run has them; 0 = not run).
- ``coverage_summary.json``: models, jobs read / left out, unreadable inputs, ops unique to
  one model and the top ops by self time, for reports that do not want to re-aggregate.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltracer.coverage.matrix import Coverage
from kerneltracer.errors import KernelTracerError
from kerneltracer.jsonio import atomic_write_bytes, atomic_writer, dumps

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNS = (
    "op",
    "model",
    "model_id",
    "mode",
    "phase",
    "source",
    "calls",
    "signatures",
    "self_time_us",
    "est_flops",
    "est_bytes",
    "est_time_lb_us",
)
_LONG_CSV = "coverage.csv"
PARQUET = "coverage.parquet"
_MATRIX_CSV = "coverage_matrix.csv"
SUMMARY_JSON = "coverage_summary.json"
# 2: est_device, top_ops_by_est_time; 3: model labels carry the phase, distinct_models,
# model_variants
SUMMARY_SCHEMA_VERSION = 3
TOP_OPS = 50


def _csv_bytes(rows: Iterable[Iterable[object]]) -> bytes:
    text = io.StringIO(newline="")
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue().encode("utf-8")


def _cell(value: object) -> object:
    return "" if value is None else value


def _long_csv(cov: Coverage) -> bytes:
    rows: list[Iterable[object]] = [COLUMNS]
    for u in cov.uses:
        rows.append(
            (
                u.op,
                u.model,
                *cov.variant(u.model),
                u.source,
                u.calls,
                _cell(u.signatures),
                _cell(u.self_time_us),
                _cell(u.est_flops),
                _cell(u.est_bytes),
                _cell(u.est_time_us),
            )
        )
    return _csv_bytes(rows)


def _matrix_csv(cov: Coverage, source: str | None = None) -> bytes:
    source = cov.default_source() if source is None else source
    models = cov.models_for(source)
    rows: list[Iterable[object]] = [("op", *models)]
    for op, by_model in cov.matrix(source).items():
        rows.append((op, *(by_model.get(m, 0) for m in models)))
    return _csv_bytes(rows)


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("op", pa.string(), nullable=False),
            pa.field("model", pa.string(), nullable=False),
            pa.field("model_id", pa.string(), nullable=False),
            pa.field("mode", pa.string(), nullable=False),
            pa.field("phase", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("calls", pa.int64(), nullable=False),
            pa.field("signatures", pa.int64(), nullable=True),
            pa.field("self_time_us", pa.float64(), nullable=True),
            pa.field("est_flops", pa.int64(), nullable=True),
            pa.field("est_bytes", pa.int64(), nullable=True),
            pa.field("est_time_lb_us", pa.float64(), nullable=True),
        ]
    )


def to_table(cov: Coverage) -> pa.Table:
    """The Arrow table of the Parquet file; :class:`KernelTracerError` if a value cannot be
    held by its column (the readers bound what they take; this is the last line)."""
    import pyarrow as pa

    uses = cov.uses
    variants = [cov.variant(u.model) for u in uses]
    try:
        return pa.Table.from_arrays(
            [
                pa.array([u.op for u in uses], pa.string()),
                pa.array([u.model for u in uses], pa.string()),
                *(pa.array([v[i] for v in variants], pa.string()) for i in range(3)),
                pa.array([u.source for u in uses], pa.string()),
                pa.array([u.calls for u in uses], pa.int64()),
                pa.array([u.signatures for u in uses], pa.int64()),
                pa.array([u.self_time_us for u in uses], pa.float64()),
                pa.array([u.est_flops for u in uses], pa.int64()),
                pa.array([u.est_bytes for u in uses], pa.int64()),
                pa.array([u.est_time_us for u in uses], pa.float64()),
            ],
            schema=arrow_schema(),
        )
    except (OverflowError, pa.ArrowException) as exc:
        raise KernelTracerError(
            f"coverage: a value does not fit its Parquet column ({exc})"
        ) from None


def _write_table(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    with atomic_writer(path) as fh:
        pq.write_table(table, fh, compression="zstd")


def summary(cov: Coverage, top: int = TOP_OPS) -> dict[str, Any]:
    sources = cov.sources()
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "models": list(cov.models),
        "distinct_models": len(cov.distinct_models()),
        "model_variants": [
            {"model": label, "model_id": d, "mode": m, "phase": p}
            for label, (d, m, p) in cov.variants.items()
        ],
        "fake_weight_models": list(cov.fake_models),
        "sources": sources,
        "ops_per_source": {s: len(cov.ops(s)) for s in sources},
        "jobs_read": [{"model": m, "source": s} for m, s in cov.jobs_read],
        "not_ok": [{"model": m, "source": s, "status": st} for m, s, st in cov.not_ok],
        "problems": [asdict(p) for p in cov.problems],
        "bad_rows": [asdict(b) for b in cov.bad_rows],
        "unique_ops": {s: cov.unique_ops(s) for s in sources},
        "top_ops_by_time": [{"op": op, "self_time_us": t} for op, t in cov.top_ops_by_time(top)],
        # jobs whose self_time_us is the GPU time attributed to each op, not profiler self time
        "gpu_attributed": [{"model": m, "source": s} for m, s in cov.gpu_attributed],
        "est_device": cov.est_device,
        "top_ops_by_est_time": [
            {"op": op, "est_time_lb_us": t} for op, t in cov.top_ops_by_est_time(top)
        ],
    }


def write_coverage(cov: Coverage, out_dir: Path) -> list[Path]:
    """Write the coverage files into ``out_dir`` (created if needed); return their paths.

    Every file's content is built before the first one is written, so a value that cannot
    be written fails with none of them new (never a CSV without its Parquet and summary).
    """
    out_dir = Path(out_dir)
    table = to_table(cov)
    long, matrix = _long_csv(cov), _matrix_csv(cov)
    summary_json = dumps(summary(cov))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / name for name in (_LONG_CSV, PARQUET, _MATRIX_CSV, SUMMARY_JSON)]
    atomic_write_bytes(paths[0], long)
    _write_table(table, paths[1])
    atomic_write_bytes(paths[2], matrix)
    atomic_write_bytes(paths[3], summary_json)
    return paths
