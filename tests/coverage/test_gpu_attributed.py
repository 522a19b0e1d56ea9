"""Coverage and diff use the GPU time attributed to each op when a job's trace had kernels
(the timeline analysis' ops.csv), and say so; without it, the profiler's self time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltracer.analysis.timeline.pipeline import OpsOptions
from kerneltracer.analysis.timeline.writer import run_timeline
from kerneltracer.coverage import build_coverage
from kerneltracer.coverage.diff import diff_runs
from kerneltracer.coverage.export import summary
from tests.coverage.synth import make_job, profiler_files
from tests.timeline.test_attribution import eager_events
from tests.timeline.traces import write_trace

# What key_averages says (self device time): the GEMM's 2,000 µs under aten::mm, say, as a
# profiler that credits kernels to another op would; attribution puts it on aten::addmm.
KEY_AVERAGES = [
    ("aten::linear", "[]", 1, 10.0, 0.0),
    ("aten::addmm", "[]", 1, 30.0, 1.0),
    ("aten::add", "[]", 1, 10.0, 200.0),
    ("aten::relu", "[]", 1, 10.0, 100.0),
    ("aten::empty", "[]", 3, 5.0, 0.0),
]


def _job(run: Path, gemm_us: float | None) -> Path:
    job_dir = make_job(run, "org/model", "torch_profiler", profiler_files(KEY_AVERAGES))
    if gemm_us is not None:
        events: list[dict[str, Any]] = eager_events()
        for e in events:
            if e.get("cat") == "kernel" and e["name"].startswith("sm90"):
                e["dur"] = gemm_us
        trace = write_trace(job_dir / "trace.json", events)
        run_timeline([trace], job_dir / "analysis" / "timeline", convert=False, ops=OpsOptions())
    return job_dir


def test_coverage_takes_the_attributed_gpu_time_per_op(tmp_path: Path) -> None:
    _job(tmp_path / "run", 2000.0)
    cov = build_coverage(tmp_path / "run")
    times = dict(cov.top_ops_by_time())
    assert times["aten::addmm"] == 2000.0 and times["aten::add"] == 200.0
    assert times.get("aten::empty", 0.0) == 0.0  # launched nothing
    assert cov.gpu_attributed == (("org/model", "torch_profiler"),)
    assert summary(cov)["gpu_attributed"] == [{"model": "org/model", "source": "torch_profiler"}]
    # without the analysis: the profiler's self device time, as before
    _job(tmp_path / "plain", None)
    plain = build_coverage(tmp_path / "plain")
    assert dict(plain.top_ops_by_time())["aten::addmm"] == 1.0 and not plain.gpu_attributed


def test_diff_compares_per_op_gpu_time(tmp_path: Path) -> None:
    _job(tmp_path / "a", 2000.0)
    _job(tmp_path / "b", 3000.0)
    report = diff_runs(tmp_path / "a", tmp_path / "b")
    (change,) = report.models[0].time_changes
    assert (change.op, change.self_time_us_before, change.self_time_us_after) == (
        "aten::addmm",
        2000.0,
        3000.0,
    )
    assert change.gpu_time and change.change == 0.5
    # attributed GPU time on one side, profiler self time on the other: not compared
    _job(tmp_path / "c", None)
    assert not any(m.time_changes for m in diff_runs(tmp_path / "a", tmp_path / "c").models)
