"""Parquet tables are built without pandas where their values allow, and hold the same table
as ``pa.Table.from_pylist`` gives (ops.parquet, compile_health.parquet)."""

from __future__ import annotations

import math
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet
import pytest

from kerneltracer.core.arrowrows import arrow_table
from kerneltracer.core.ops_csv import INT_COLUMNS, OPS_COLUMNS, STR_COLUMNS


def _schema() -> pa.Schema:
    def kind(c: str) -> pa.DataType:
        if c in INT_COLUMNS:
            return pa.int64()
        return pa.string() if c in STR_COLUMNS else pa.float64()

    return pa.schema([pa.field(c, kind(c), nullable=True) for c in OPS_COLUMNS])


def _row(i: int, number: float) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, c in enumerate(OPS_COLUMNS):
        if (i + k) % 4 == 0:
            out[c] = None
        elif c in INT_COLUMNS:
            out[c] = 2**62 if k % 2 else i
        elif c in STR_COLUMNS:
            out[c] = "" if k % 2 else 'aten::mm "é"\n'
        else:
            out[c] = number if k % 2 else 3  # an int in a float column reads as 3.0
    return out


@pytest.mark.parametrize("number", [0.1 + 1e-17, 1e300, -0.0, math.nan, math.inf])
def test_the_table_equals_the_one_built_from_python_objects(number: float) -> None:
    rows = [_row(i, number) for i in range(5)]
    reference = pa.Table.from_pylist(rows, schema=_schema())
    table = arrow_table(rows, _schema())
    assert table.schema.equals(reference.schema, check_metadata=True)
    assert table.to_pylist() == reference.to_pylist() or math.isnan(number)
    assert table.equals(reference) or math.isnan(number)  # NaN != NaN


def test_writing_the_table_imports_no_pandas(tmp_path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kerneltracer.analysis.timeline.render import ops_files\n"
        "from kerneltracer.core.ops_csv import OPS_COLUMNS\n"
        "rows = [{c: None for c in OPS_COLUMNS} | {'op': 'aten::mm', 'gpu_time_us': 1.5}]\n"
        f"ops_files._parquet(Path({str(tmp_path / 'ops.parquet')!r}), rows)\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "rows",
    [
        [{"n": 1, "s": "a"}, {"n": 2, "s": None, "extra": 1}],  # extra keys are dropped
        [{"n": 1}],  # a missing key is null
        [{"n": None, "s": "a"}],  # null in a non-null column: from_pylist's error
        [{"n": True, "s": "a"}],  # a bool is no int64 JSON carries
        [{"n": 1, "s": 3}],  # an int in a string column: from_pylist's error
        [],
    ],
)
def test_any_rows_give_what_from_pylist_gives(rows: list[dict[str, object]]) -> None:
    schema = pa.schema([pa.field("n", pa.int64(), nullable=False), pa.field("s", pa.string())])
    try:
        reference = pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        with pytest.raises(type(exc)):
            arrow_table(rows, schema)
        return
    table = arrow_table(rows, schema)
    assert table.schema.equals(reference.schema, check_metadata=True)
    assert table.equals(reference)


def test_compile_health_writes_its_table_without_pandas(tmp_path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kerneltracer.analysis.compile_health import export\n"
        "from kerneltracer.analysis.compile_health.export import TABLE_COLUMNS\n"
        "from kerneltracer.analysis.compile_health.health import COUNT_COLUMNS\n"
        "row = {c: 0 if c in COUNT_COLUMNS else None for c in TABLE_COLUMNS}\n"
        "row |= {'model': 'm', 'break_keys': '', 'options': '{}', 'compile_time_s': 1.5}\n"
        f"export._write_parquet([row], Path({str(tmp_path / 't.parquet')!r}))\n"
        "print(sorted(m for m in ('pandas', 'pyarrow.compute', 'pydantic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert pa.parquet.read_table(tmp_path / "t.parquet").column("compile_time_s").to_pylist() == [
        1.5
    ]
