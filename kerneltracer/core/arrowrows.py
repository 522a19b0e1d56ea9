"""Rows of plain Python values as an Arrow table, and as a Parquet file, without pandas.

pyarrow's converters from Python objects (``pa.array``, ``Table.from_pylist``) import pandas
to ask whether each input is a pandas object: ~0.4 s of start-up (more under load), most of
what a small command that writes one Parquet file costs. pyarrow's JSON reader builds the
same table from the rows as JSON lines and loads no pandas; where a value is one JSON cannot
carry exactly (NaN, infinities, a value of another type than its column's), the rows go the
pandas way, so the table is always the one ``from_pylist`` gives.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kerneltracer.jsonio import atomic_writer

# Integers JSON holds exactly as a float column's value (the reader widens them to float64).
_EXACT_FLOAT_INT = 2**53


def _is_int(v: Any) -> bool:
    return type(v) is int and -(2**63) <= v < 2**63


def _is_str(v: Any) -> bool:
    return type(v) is str


def _is_float(v: Any) -> bool:
    return (type(v) is float and math.isfinite(v)) or (type(v) is int and abs(v) < _EXACT_FLOAT_INT)


def _checks(schema: Any) -> list[tuple[str, Callable[[Any], bool], bool]] | None:
    """Per column, the test that a value travels exactly through JSON, and whether it may be
    null; None where a column's type is not one of int64 / string / float64."""
    import pyarrow as pa

    out: list[tuple[str, Callable[[Any], bool], bool]] = []
    for f in schema:
        check: Callable[[Any], bool]
        if f.type == pa.int64():
            check = _is_int
        elif f.type == pa.string():
            check = _is_str
        elif f.type == pa.float64():
            check = _is_float
        else:
            return None
        out.append((str(f.name), check, bool(f.nullable)))
    return out


def arrow_table(rows: Sequence[dict[str, Any]], schema: Any) -> Any:
    """``pa.Table.from_pylist(rows, schema=schema)``, loading pandas only where needed."""
    import pyarrow as pa

    checks = _checks(schema)
    names = [f.name for f in schema]
    picked = [{c: r.get(c) for c in names} for r in rows]
    if (
        not picked
        or checks is None
        or not all(
            check(r[name]) or (nullable and r[name] is None)
            for r in picked
            for name, check, nullable in checks
        )
    ):
        return pa.Table.from_pylist(picked, schema=schema)
    import orjson
    import pyarrow.json as pj

    text = b"\n".join(orjson.dumps(r) for r in picked)
    # One block for all: the reader splits blocks at line ends, but a row longer than a
    # block would not parse.
    read = pj.ReadOptions(block_size=max(len(text) + 1, 1 << 20))
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    table = pj.read_json(io.BytesIO(text), read_options=read, parse_options=options)
    # The reader's own schema drops nullable=False; Table.cast would load pyarrow.compute
    # (~0.2 s), so the same columns are wrapped again under the schema asked for.
    return pa.Table.from_arrays(table.select(names).columns, schema=schema)


def write_parquet(path: Path, rows: Sequence[dict[str, Any]], schema: Any) -> Path:
    """``rows`` as a zstd Parquet file of ``schema`` at ``path``, written atomically."""
    import pyarrow.parquet as pq

    table = arrow_table(rows, schema)
    with atomic_writer(path) as fh:
        pq.write_table(table, fh, compression="zstd")
    return path
