"""examples/api.ipynb: committed without outputs, and every cell runs (nbclient) on a real run."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

import kerneltracer as kt

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "api.ipynb"


def test_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.e2e
@pytest.mark.slow
def test_notebook_runs(
    tiny_models: dict[str, Path],
    testdata_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nbclient import NotebookClient

    run = kt.trace(
        [str(tiny_models["tiny-gpt2"]), str(tiny_models["tiny-llama"])],
        output_dir=tmp_path / "run",
        tracers=["torch_dispatch", "torch_profiler"],
    )
    monkeypatch.setenv("KT_RUN_DIR", str(run.path))
    monkeypatch.setenv("KT_TESTDATA", str(testdata_dir))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env={**os.environ})  # raises CellExecutionError naming the cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # The GEMM cell found the fleet's GEMMs.
    gemm_cell = next(c for c in nb.cells if "gemms.sort_values" in c.source)
    assert "aten." in str(gemm_cell.outputs)
