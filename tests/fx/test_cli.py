"""``kerneltracer fx ...`` as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from torch import fx

from kerneltracer.fx.graph_table import to_table
from kerneltracer.fx.models import RedundantModel
from kerneltracer.jsonio import atomic_write_json, read_json


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kerneltracer.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_optimize_prints_the_report_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = run_cli(
        "fx",
        "optimize",
        "redundant",
        "--passes",
        "redundant_ops,recompute",
        "--checkpoint-every",
        "1",
        "--runs",
        "2",
        "--warmup",
        "1",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    for line in (
        "Model: RedundantModel",
        "Input: (2, 3, 16, 16)",
        "redundant_ops: 15 -> 10 nodes; removed 5 redundant ops",
        "GRAPH STATISTICS:",
        "  Original nodes: 15 (13 compute)",
        "  Reduction: 33.3%",
        "MEMORY (activations saved for backward):",
        "TIME (train step fwd+bwd, median over 2 runs):",
        "  Overhead: ",
    ):
        assert line in proc.stdout, line
    report = read_json(out)
    assert report["graph_original"]["total_nodes"] == 15
    assert report["graph_optimized"]["total_nodes"] == 10
    assert [p["name"] for p in report["passes"]] == ["redundant_ops", "recompute"]


def test_errors_are_one_line_with_exit_codes() -> None:
    dynamic = run_cli("fx", "optimize", "dynamic")
    assert dynamic.returncode == 1
    assert dynamic.stderr.count("\n") == 1
    assert dynamic.stderr.startswith("error: cannot capture DynamicControlFlow")
    bad_pass = run_cli("fx", "optimize", "mlp", "--passes", "fuse_everything")
    assert bad_pass.returncode == 2
    assert "unknown pass 'fuse_everything' (valid: recompute, redundant_ops)" in bad_pass.stderr
    bad_budget = run_cli("fx", "optimize", "mlp", "--memory-budget", "1.5")
    assert bad_budget.returncode == 2


def test_redundancy_lists_duplicates_of_a_node_table(tmp_path: Path) -> None:
    gm = fx.symbolic_trace(RedundantModel())
    table = tmp_path / "graph_0.json"
    atomic_write_json(table, to_table(gm.graph, gm))
    proc = run_cli("fx", "redundancy", str(table))
    assert proc.returncode == 0, proc.stderr
    assert f"{table}: 5 redundant of 13 compute nodes" in proc.stdout
    assert "  relu_1 = relu  (torch.nn.functional.relu)" in proc.stdout


def test_cli_module_and_registered_analysis_do_not_import_torch() -> None:
    code = (
        "import sys; import kerneltracer.cli.fx_cmd, kerneltracer.analysis.fx_redundancy.job; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
