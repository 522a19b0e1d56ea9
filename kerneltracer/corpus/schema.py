"""The corpus Parquet file: its typed schema (the contract users query with pandas/DuckDB)
and the reader replay uses. pyarrow is imported lazily (the CLI starts fast).

One row per signature. JSON columns hold the values in the torch_dispatch JSON form
(see :mod:`kerneltracer.core.signature`); ``operator_inp`` holds the same call as an
operator_inp line (``cnt: N, (args, kwargs)``), ready for benchmark scripts.

Schema versions (``kerneltracer.corpus.schema_version`` in the file's metadata):

- 1: the columns up to ``operator_inp``;
- 2: adds, per call, ``est_flops`` / ``est_bytes`` / ``cost_category`` (estimated from
  shapes by :mod:`kerneltracer.costmodel`; null when the op has no estimate) and
  ``module_calls_json`` (model -> module path -> calls). Columns are only ever added, so
  version 1 readers read version 2 files, and :func:`read_signatures` reads both;
- 3: adds the parallel layout each model label ran in, lists parallel to ``models``:
  ``layouts`` (``tp8.pp2``; ``single`` for one device), ``ranks`` (the rank dir of a
  parallel job, null for one device) and the degrees ``tp`` / ``ep`` / ``pp`` / ``dp``.
  "Which GEMM shapes run at TP 8": ``op == 'aten.mm.default' and 8 in tp`` (DuckDB:
  ``list_contains(tp, 8)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kerneltracer.corpus.model import SINGLE, Placement, Signature
from kerneltracer.errors import UsageError

if TYPE_CHECKING:
    import pyarrow as pa

    from kerneltracer.costmodel import OpCost

PARQUET = "corpus.parquet"
SCHEMA_VERSION = "3"
# Columns every version has: the least a file needs to be read as a corpus
V1_COLUMNS = (
    "sig_id",
    "op",
    "calls",
    "forward_calls",
    "backward_calls",
    "n_models",
    "models",
    "model_calls",
    "modules",
    "inputs_json",
    "kwargs_json",
    "outputs_json",
    "operator_inp",
)


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("sig_id", pa.string(), nullable=False),
            pa.field("op", pa.string(), nullable=False),
            pa.field("calls", pa.int64(), nullable=False),
            pa.field("forward_calls", pa.int64(), nullable=False),
            pa.field("backward_calls", pa.int64(), nullable=False),
            pa.field("n_models", pa.int32(), nullable=False),
            pa.field("models", pa.list_(pa.string()), nullable=False),
            pa.field("model_calls", pa.list_(pa.int64()), nullable=False),
            pa.field("modules", pa.list_(pa.string()), nullable=False),
            pa.field("inputs_json", pa.string(), nullable=False),
            pa.field("kwargs_json", pa.string(), nullable=False),
            pa.field("outputs_json", pa.string(), nullable=False),
            pa.field("operator_inp", pa.string(), nullable=False),
            pa.field("est_flops", pa.int64(), nullable=True),
            pa.field("est_bytes", pa.int64(), nullable=True),
            pa.field("cost_category", pa.string(), nullable=True),
            pa.field("module_calls_json", pa.string(), nullable=False),
            pa.field("layouts", pa.list_(pa.string()), nullable=False),
            pa.field("ranks", pa.list_(pa.int64()), nullable=False),
            *(pa.field(axis, pa.list_(pa.int32()), nullable=False) for axis in _AXES),
        ],
        metadata={"kerneltracer.corpus.schema_version": SCHEMA_VERSION},
    )


_AXES = ("tp", "ep", "pp", "dp")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def to_table(
    sigs: list[Signature],
    lines: list[str],
    costs: list[OpCost | None] | None = None,
    placements: dict[str, Placement] | None = None,
) -> pa.Table:
    """``costs``: each signature's per-call estimate (None: none), in ``sigs`` order;
    ``placements``: the parallel jobs' rank labels (others ran on one device)."""
    import pyarrow as pa

    costs = costs if costs is not None else [None] * len(sigs)
    placements = placements or {}
    models = [s.models for s in sigs]
    placed = [[placements.get(m) for m in ms] for ms in models]
    cols: list[Any] = [
        [s.sig_id for s in sigs],
        [s.op for s in sigs],
        [s.calls for s in sigs],
        [s.phase_calls.get("forward", 0) for s in sigs],
        [s.phase_calls.get("backward", 0) for s in sigs],
        [len(m) for m in models],
        models,
        [[s.model_calls[m] for m in ms] for s, ms in zip(sigs, models, strict=True)],
        [list(s.modules) for s in sigs],
        [_json(s.inputs) for s in sigs],
        [_json(s.kwargs) for s in sigs],
        [_json(s.outputs) for s in sigs],
        lines,
        [c.flops if c is not None else None for c in costs],
        [c.bytes if c is not None else None for c in costs],
        [c.category if c is not None else None for c in costs],
        [_json(s.model_modules) for s in sigs],
        [[p.layout if p else SINGLE for p in ps] for ps in placed],
        [[p.rank if p else None for p in ps] for ps in placed],
        *([[getattr(p, axis) if p else 1 for p in ps] for ps in placed] for axis in _AXES),
    ]
    schema = arrow_schema()
    arrays = [pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def read_signatures(path: Path) -> list[Signature]:
    """The signatures of a corpus Parquet file (or a corpus dir holding one)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        path = path / PARQUET
    if not path.is_file():
        raise UsageError(f"{path}: no corpus here (run `kerneltracer corpus RUN_DIR -o OUT`)")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise UsageError(f"{path}: not a readable Parquet file ({exc})") from None
    missing = [name for name in V1_COLUMNS if name not in table.column_names]
    if missing:
        raise UsageError(f"{path}: not a corpus file (missing columns: {', '.join(missing)})")
    out = []
    for row in table.to_pylist():
        phases = {"forward": row["forward_calls"], "backward": row["backward_calls"]}
        out.append(
            Signature(
                sig_id=row["sig_id"],
                op=row["op"],
                inputs=orjson.loads(row["inputs_json"]),
                kwargs=orjson.loads(row["kwargs_json"]),
                outputs=orjson.loads(row["outputs_json"]),
                phase_calls={k: v for k, v in phases.items() if v},
                model_calls=dict(zip(row["models"], row["model_calls"], strict=True)),
                modules=dict.fromkeys(row["modules"], 0),
                model_modules=orjson.loads(row.get("module_calls_json") or "{}"),
            )
        )
    return out
