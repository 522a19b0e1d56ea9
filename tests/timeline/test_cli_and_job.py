"""End to end: the real CLI in a subprocess, our own CPU-only torch.profiler trace, and the
per-job analysis that ``kerneltracer analyze`` runs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.analysis.base import AnalysisJob
from kerneltracer.analysis.registry import ANALYSES
from kerneltracer.analysis.timeline.job import TimelineAnalysis
from kerneltracer.core.artefacts import ArtefactKind, kind_from_name
from tests.conftest import require
from tests.timeline.traces import hta_path, kernel, timeline_cli, write_trace, x


@pytest.fixture(scope="module")
def cpu_profiler_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What our torch_profiler tracer writes on a CPU-only machine: gzipped export_chrome_trace."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule
    except ImportError:
        require(False, "torch")

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    inputs = torch.randn(16, 64)
    # The tracer's schedule: one warm-up step, then the active ones, one cycle.
    steps = schedule(wait=0, warmup=1, active=2, repeat=1)
    with (
        torch.no_grad(),
        profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=steps) as prof,
    ):
        for _ in range(3):
            model(inputs)
            prof.step()
    out = tmp_path_factory.mktemp("profiler")
    raw = out / "trace.json"
    prof.export_chrome_trace(str(raw))
    gz = out / "trace.json.gz"
    gz.write_bytes(gzip.compress(raw.read_bytes()))
    raw.unlink()
    return gz


def _report(out: Path, stem: str) -> dict[str, Any]:
    return json.loads((out / stem / "report.json").read_text())


def test_cli_on_our_cpu_only_profiler_trace(cpu_profiler_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = timeline_cli(str(cpu_profiler_trace), "-o", str(out))
    assert done.returncode == 0, done.stderr
    report = _report(out, "trace")
    analysis = report["analysis"]
    assert analysis["bottleneck"]["type"] == "cpu_bound"
    assert "No GPU activity" in " ".join(analysis["bottleneck"]["evidence"])
    summary = analysis["summary"]
    # No GPU numbers invented: no GPU time, no GPU idle, empty GPU breakdowns.
    assert summary["has_gpu"] is False and summary["gpu_idle_us"] is None
    assert summary["total_gpu_time_us"] == 0 and summary["total_h2d_us"] == 0
    assert report["ranks"][0]["temporal_breakdown"] is None
    assert report["ranks"][0]["kernel_breakdown"]["by_type"] == []
    pct = {b["category"]: b["percentage"] for b in analysis["timeline_breakdown"]}
    assert pct["gpu_compute"] == pct["h2d_copy"] == 0
    assert pct["cpu_compute"] > 10  # the Linear/ReLU ops are really there
    assert abs(sum(pct.values()) - 100) <= 0.5
    assert [s["step"] for s in report["steps"]] == ["ProfilerStep#1", "ProfilerStep#2"]
    assert all(s["bottleneck"]["type"] == "cpu_bound" for s in report["steps"])
    examples = next(b for b in analysis["timeline_breakdown"] if b["category"] == "cpu_compute")[
        "examples"
    ]
    assert any(e.startswith("aten::") for e in examples)
    assert analysis["suggestions"] and all(s["evidence"] for s in analysis["suggestions"])
    doc = json.loads(gzip.decompress((out / "trace" / "inferscope_trace.json.gz").read_bytes()))
    assert {e["type"] for e in doc["events"]} <= {"cpu_call", "instant", "memory_event"}
    assert any(s["name"].startswith("ProfilerStep#") for s in doc["relationships"]["scopes"])
    md = (out / "trace" / "report.md").read_text()
    assert "No GPU kernels in this trace" in md or "no GPU kernels in this trace" in md


def test_cli_multi_rank_reports(testdata_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    traces = [hta_path(testdata_dir, k) for k in ("nccl", "compare_base", "compare_test")]
    done = timeline_cli(*map(str, traces), "-o", str(out), "--no-inferscope")
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [t["dir"] for t in summary["traces"]] == ["nccl_data", "base", "test"]
    assert len(summary["ranks"]) == 3
    nccl = _report(out, "nccl_data")
    tb = nccl["ranks"][0]["temporal_breakdown"]
    assert {
        "idle_pct",
        "compute_pct",
        "non_compute_pct",
        "idle_us",
        "compute_us",
        "non_compute_us",
    } <= tb.keys()
    assert tb["idle_pct"] == 77.78 and tb["compute_pct"] == 17.26  # HTA's (both releases)
    assert not (out / "nccl_data" / "inferscope_trace.json.gz").exists()
    html = (out / "nccl_data" / "report.html").read_text()
    assert "<svg" in html and "ncclKernel" in html
    assert "rank" in (out / "summary.md").read_text()


def test_html_escapes_untrusted_names_and_is_self_contained(tmp_path: Path) -> None:
    evil = '<script>alert("x")</script>|`'
    trace = write_trace(
        tmp_path / "evil_trace.json",
        [
            x("ProfilerStep#1", "user_annotation", 0, 200),
            x(evil, "cpu_op", 0, 100),
            kernel(evil, 100, 100),
        ],
    )
    out = tmp_path / "out"
    assert timeline_cli(str(trace), "-o", str(out)).returncode == 0
    html = (out / "evil_trace" / "report.html").read_text()
    assert "<script" not in html
    assert "&lt;script&gt;" in html
    assert (
        "src=" not in html
        and "http://" not in html
        and "https://" not in html.replace("https://json-schema.org", "")
    )
    md = (out / "evil_trace" / "report.md").read_text()
    assert "\\|" in md


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    done = timeline_cli(str(tmp_path / "missing.json.gz"), "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: trace file ")
    assert done.stderr.strip().endswith("does not exist")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    done = timeline_cli(str(bad), "-o", str(tmp_path / "o"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "not a readable chrome trace" in done.stderr


def test_registered_job_analysis(cpu_profiler_trace: Path, tmp_path: Path) -> None:
    assert ANALYSES["timeline"] is TimelineAnalysis
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "trace.json.gz").write_bytes(cpu_profiler_trace.read_bytes())
    job = AnalysisJob(
        job_dir, "torch_profiler", "tiny", "ok", ("trace.json.gz", "key_averages.csv")
    )
    analysis = TimelineAnalysis()
    assert analysis.applies(job)
    # The artefact's kind decides, not the tracer: any tracer's chrome trace gets a timeline,
    # and a file recorded as another kind does not, whatever its name.
    assert analysis.applies(AnalysisJob(job_dir, "any_tracer", "tiny", "ok", ("trace.json.gz",)))
    assert not analysis.applies(
        AnalysisJob(job_dir, "torch_profiler", "tiny", "ok", ("trace.json.gz",), ("op_table",))
    )
    assert not analysis.applies(
        AnalysisJob(job_dir, "torch_profiler", "tiny", "ok", ("key_averages.csv",))
    )
    out = tmp_path / "analysis"
    written = analysis.run(job, out)
    assert out / "trace" / "report.html" in written and (out / "summary.json").is_file()
    assert not (out / "trace" / "ops.csv").exists()  # a CPU-only trace: no kernels to attribute
    assert all(p.is_relative_to(out) for p in written)
    assert kind_from_name("profiles/rank0.pt.trace.json") == ArtefactKind.CHROME_TRACE
    assert kind_from_name("ops.json") is None


def test_every_test_trace_goes_through_the_default_timeline(
    testdata_dir: Path, tmp_path: Path
) -> None:
    """The default path (op attribution, reports, the InferScope file) on every real trace
    we hold: two of them once failed the InferScope writer (a wall clock and a chunk of
    host calls only) while every narrower test passed."""
    from kerneltracer.analysis.timeline.pipeline import OpsOptions
    from kerneltracer.analysis.timeline.writer import run_timeline

    traces = sorted((testdata_dir / "hta").rglob("*.json*"))
    assert len(traces) >= 10, traces
    failed: dict[str, str] = {}
    for i, trace in enumerate(traces):
        out = tmp_path / str(i)
        try:
            run_timeline([trace], out, ops=OpsOptions())
        except Exception as exc:  # every trace's failure listed, not only the first
            failed[str(trace.relative_to(testdata_dir))] = f"{type(exc).__name__}: {exc}"
            continue
        (stem,) = [p for p in out.iterdir() if p.is_dir()]
        assert (stem / "inferscope_trace.json.gz").is_file() and (out / "summary.json").is_file()
    assert failed == {}
