"""ops.parquet is built without pandas where its values allow, and holds the same table."""

from __future__ import annotations

import math
import subprocess
import sys

import pyarrow as pa
import pytest

from kerneltracer.analysis.timeline.render import ops_files
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
    table = ops_files._arrow_table(rows, _schema())
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
