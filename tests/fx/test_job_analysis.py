"""``fx_redundancy``: redundant computations in print_fx node tables, per graph and per job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import fx

from kerneltracer.analysis.base import AnalysisJob
from kerneltracer.analysis.fx_redundancy.job import FxRedundancyAnalysis, graph_files
from kerneltracer.analysis.registry import ANALYSES
from kerneltracer.core.jobspec import JobSpec, ModelRef
from kerneltracer.core.layout import RunPaths
from kerneltracer.core.status import JobStatus, base_status, describe_output, write_status
from kerneltracer.fx.graph_table import to_table
from kerneltracer.fx.models import RedundantModel
from kerneltracer.fx.passes.redundant_ops import RedundantOpElimination, analyze
from kerneltracer.jsonio import atomic_write_json, atomic_write_text, read_json
from tests.support.fx_models import ImpureRepeats


def write_graphs(graph_dir: Path) -> list[str]:
    """graph_0: symbolic_trace (torch-level), graph_1: torch.export (aten-level), graph_2: bad."""
    model = RedundantModel()
    symbolic = fx.symbolic_trace(model)
    exported = torch.export.export(model, (torch.randn(1, 3, 8, 8),), strict=False).module()
    assert isinstance(exported, fx.GraphModule)
    atomic_write_json(graph_dir / "graph_0.json", to_table(symbolic.graph, symbolic, "g0"))
    atomic_write_json(graph_dir / "graph_1.json", to_table(exported.graph, exported))
    atomic_write_text(graph_dir / "graph_2.json", '{"nodes": [{"name": 1}]}')
    return [f"graphs/graph_{i}.json" for i in range(3)]


def test_table_analysis_matches_the_live_pass(tmp_path: Path) -> None:
    for model in (RedundantModel(), ImpureRepeats().train(), ImpureRepeats().eval()):
        gm = fx.symbolic_trace(model)
        path = tmp_path / "graph_0.json"
        atomic_write_json(path, to_table(gm.graph, gm))
        from_file = analyze(path)
        live = RedundantOpElimination().analyze(gm.graph)
        assert [(d.node, d.same_as) for d in from_file.duplicates] == [
            (d["node"], d["same_as"]) for d in live["opportunities"]
        ]
        assert from_file.nodes == len(gm.graph.nodes)


def test_aten_graph_redundancy_is_found(tmp_path: Path) -> None:
    write_graphs(tmp_path)
    result = analyze(tmp_path / "graph_1.json")
    assert result.graph == "graph_1"
    assert result.by_target()["torch.ops.aten.conv2d.default"] == 1
    assert result.by_target()["torch.ops.aten.relu.default"] == 1
    assert len(result.duplicates) == 5


def make_job(run_dir: Path, outputs_for: str = "files") -> Path:
    spec = JobSpec(
        key="redundant/print_fx",
        model=ModelRef(display="redundant", slug="redundant"),
        tracer="print_fx",
        tracer_version="1",
        exclusive_group=None,
        framework="huggingface",
        mode="eval",
        device="cpu",
        dtype="float32",
        batch_size=1,
        seq_len=8,
        options={},
        timeout_s=60.0,
        max_rss_gb=None,
    )
    job_dir = RunPaths(run_dir).job(spec.key).dir
    rels = write_graphs(job_dir / "graphs")
    listed = rels if outputs_for == "files" else []
    status = base_status(
        spec, "1", JobStatus.OK, outputs=[describe_output(job_dir, r) for r in listed]
    )
    if outputs_for == "dir":
        status = status.model_copy(
            update={
                "outputs": [
                    describe_output(job_dir, "graphs/graph_0.json").model_copy(
                        update={"path": "graphs"}
                    )
                ]
            }
        )
    write_status(job_dir, status)
    return job_dir


def job_view(job_dir: Path, outputs: tuple[str, ...]) -> AnalysisJob:
    return AnalysisJob(job_dir, "print_fx", "redundant", "ok", outputs)


def test_registered_and_applies_only_to_fx_graph_artefacts(tmp_path: Path) -> None:
    assert ANALYSES["fx_redundancy"] is FxRedundancyAnalysis
    analysis = FxRedundancyAnalysis()
    assert analysis.applies(job_view(tmp_path, ("graphs/graph_0.json",)))
    assert analysis.applies(job_view(tmp_path, ("graphs",)))
    assert not analysis.applies(job_view(tmp_path, ("trace.json",)))
    # print_aten records its node tables as aten_graph: same file name, not this analysis's
    aten = ("aten_graph",)
    other = AnalysisJob(tmp_path, "print_aten", "m", "ok", ("graphs/graph_0.json",), aten)
    assert not analysis.applies(other)


@pytest.mark.parametrize("listing", ["files", "dir"])
def test_run_lists_redundancy_per_graph(tmp_path: Path, listing: str) -> None:
    job_dir = make_job(tmp_path, listing)
    outputs = ("graphs/graph_0.json", "graphs/graph_1.json", "graphs/graph_2.json")
    job = job_view(job_dir, outputs if listing == "files" else ("graphs",))
    assert [p.name for p in graph_files(job)] == ["graph_0.json", "graph_1.json", "graph_2.json"]
    out = tmp_path / "out"
    out.mkdir()
    files = FxRedundancyAnalysis().run(job, out)
    assert sorted(p.name for p in files) == ["fx_redundancy.json", "fx_redundancy.txt"]
    report = read_json(out / "fx_redundancy.json")
    g0, g1, g2 = report["graphs"]
    assert (g0["graph"], g0["redundant"], g0["compute_nodes"]) == ("g0", 5, 13)
    assert g1["redundant"] == 5
    assert "'name' and 'target' must be strings" in g2["error"]
    assert (report["total_redundant"], report["unreadable_graphs"]) == (10, 1)
    text = (out / "fx_redundancy.txt").read_text()
    assert "conv_1 = conv  (conv)" in text
    assert "graphs/graph_2.json: unreadable:" in text


def test_kerneltracer_analyze_runs_it_end_to_end(tmp_path: Path) -> None:
    job_dir = make_job(tmp_path)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kerneltracer.cli.main",
            "analyze",
            str(tmp_path),
            "--only",
            "fx_redundancy",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = read_json(job_dir / "analysis" / "fx_redundancy" / "fx_redundancy.json")
    assert report["total_redundant"] == 10
