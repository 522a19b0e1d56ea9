"""The report's fleet view of op attribution: the same op across models, from each job's
timeline analysis (written by the real timeline writer on synthetic GPU traces)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from kerneltracer.analysis.timeline.pipeline import OpsOptions
from kerneltracer.analysis.timeline.writer import run_timeline
from kerneltracer.core.analysis_record import (
    AnalysisRecord,
    AnalysisState,
    write_analysis_record,
)
from kerneltracer.core.layout import JobPaths
from kerneltracer.report.build import build_report
from kerneltracer.report.collect import collect_run
from kerneltracer.report.ops_view import FLEET_CSV, build_ops_view
from tests.report.runs import make_run, status
from tests.timeline.test_attribution import eager_events
from tests.timeline.traces import write_trace

SLOW = "org/slow<script>alert(1)</script>"  # display ids are untrusted text


def _slower_gemm() -> list[dict[str, Any]]:
    """The same ops, the GEMM twice as slow (4 ms instead of 2)."""
    events = eager_events()
    for e in events:
        if e.get("cat") == "kernel" and e["name"].startswith("sm90"):
            e["dur"] = 4000
    return events


def _run_with_two_models(tmp_path: Path) -> Path:
    keys = {"fast/torch_profiler": "org/fast", "slow/torch_profiler": SLOW}
    run = make_run(tmp_path / "run", {k: status(k, d) for k, d in keys.items()})
    for key, events in (
        ("fast/torch_profiler", eager_events()),
        ("slow/torch_profiler", _slower_gemm()),
    ):
        job_dir = run / "jobs" / key
        trace = write_trace(job_dir / "trace.json.gz", events)
        paths = JobPaths(job_dir).analysis("timeline")
        files = run_timeline([trace], paths.dir, convert=False, ops=OpsOptions(device="H100"))
        listed = [f.relative_to(paths.dir).as_posix() for f in files]
        write_analysis_record(paths, AnalysisRecord(state=AnalysisState.DONE, files=listed))
    return run


def test_the_same_op_across_models_with_its_efficiency(tmp_path: Path) -> None:
    run = _run_with_two_models(tmp_path)
    view = build_ops_view(collect_run(run))
    assert view.models == ["org/fast", SLOW] and not view.problems
    assert [s.share for s in view.shares] == [1.0, 1.0]
    key = next(k for k in view.ops if k[0] == "aten::addmm")
    assert next(iter(view.ops)) == key  # the most GPU time across models comes first
    fast, slow = view.ops[key]["org/fast"], view.ops[key][SLOW]
    assert (fast.gpu_time_us, slow.gpu_time_us) == (2000, 4000)
    assert fast.efficiency is not None and slow.efficiency is not None
    assert slow.efficiency == fast.efficiency / 2  # same work, twice the time
    assert fast.tflops == 2 * 8192**3 / 2e-3 / 1e12


def test_report_writes_the_fleet_page_and_csv(tmp_path: Path) -> None:
    run = _run_with_two_models(tmp_path)
    result = build_report(run)
    page = (result.out_dir / "ops.html").read_text()
    assert "aten::addmm" in page and "100.0%" in page
    assert "<script>alert" not in page and "org/slow&lt;script&gt;alert(1)" in page
    with (result.out_dir / FLEET_CSV).open() as fh:
        rows = list(csv.DictReader(fh))
    addmm = {r["model"]: r for r in rows if r["op"] == "aten::addmm"}
    assert float(addmm[SLOW]["gpu_time_us"]) == 4000
    assert addmm["org/fast"]["bound"] == "compute" and addmm["org/fast"]["device"] == "H100"
    # a run without timeline analyses still gets the page, saying where the data comes from
    empty = make_run(tmp_path / "empty", {"m/torch_dispatch": status("m/torch_dispatch", "m")})
    assert "No op attribution yet" in (build_report(empty).out_dir / "ops.html").read_text()


def test_a_damaged_job_file_is_listed_not_fatal(tmp_path: Path) -> None:
    run = _run_with_two_models(tmp_path)
    ops_json = run / "jobs/fast/torch_profiler/analysis/timeline/trace/ops.json"
    ops_json.write_text("[1, 2")
    view = build_ops_view(collect_run(run))
    assert [s.model for s in view.shares] == [SLOW]
    (problem,) = view.problems
    assert problem.startswith("fast/torch_profiler: trace/ops.csv")
    assert "org/fast" not in view.models
