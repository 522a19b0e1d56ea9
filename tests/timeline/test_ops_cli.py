"""End to end: ``kerneltracer timeline`` writes the op attribution files, on a real trace
with CUDA graph replays and on a synthetic replay joined to its capture trace."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kerneltracer.analysis.base import AnalysisJob
from kerneltracer.analysis.timeline.job import TimelineAnalysis
from kerneltracer.core.ops_csv import OPS_COLUMNS, read_ops_csv
from tests.timeline.test_attribution import eager_events, replay_events
from tests.timeline.traces import hta_path, kernel, timeline_cli, write_trace, x


def test_graph_replay_time_is_reported_on_a_real_trace(testdata_dir: Path, tmp_path: Path) -> None:
    trace = hta_path(testdata_dir, "rank0_16")
    r = timeline_cli(str(trace), "-o", str(tmp_path), "--no-inferscope")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "rank0"
    summary = json.loads((out / "ops.json").read_text())
    rows = read_ops_csv(out / "ops.csv")
    assert list(rows[0]) == list(OPS_COLUMNS)
    # every GPU event in exactly one row: the rows add up to the trace's GPU time
    assert sum(r["gpu_time_us"] for r in rows) == pytest.approx(summary["gpu_time_us"])
    assert sum(r["gpu_events"] for r in rows) == summary["gpu_events"]
    steps = summary["steps"]
    assert sum(s["gpu_time_us"] for s in steps) == pytest.approx(summary["gpu_time_us"])
    assert sum(s["attributed_us"] for s in steps) == pytest.approx(summary["attributed_us"])
    assert len([s for s in steps if s["step"] is not None]) == 5  # ProfilerStep#548..552
    graph_us = summary["unattributed_us"]["graph_replay"]
    assert graph_us > 0 and 0 < summary["attributed_share"] < 1
    pct = f"{100 * graph_us / summary['gpu_time_us']:.1f}% inside CUDA graph replays"
    assert pct in summary["text"] and pct in r.stderr
    html = (out / "ops.html").read_text()
    assert "--capture-trace" in html and "Kernels by op" in html
    table = pq.read_table(out / "ops.parquet")
    assert table.num_rows == len(rows) and table.column_names == list(OPS_COLUMNS)
    with (out / "kernels_by_op.csv").open() as fh:
        kernels = list(csv.DictReader(fh))
    assert sum(int(k["count"]) for k in kernels) == summary["gpu_events"]
    assert {k["stream"] for k in kernels} >= {"7", "25"}  # kernels_by_op is per stream
    buckets = {r["unattributed_reason"]: r for r in rows if r["kind"] == "unattributed"}
    # (launches outside ops show under their user annotation: kind annotation, no bucket)
    assert {"graph_replay", "no_launch"} == set(buckets) and buckets["graph_replay"][
        "input_shapes"
    ] in ("", None)
    assert "inside CUDA graph replays without capture data" in html
    report = json.loads((out / "report.json").read_text())
    assert report["op_attribution"]["attributed_share"] == summary["attributed_share"]
    assert json.loads((tmp_path / "summary.json").read_text())["traces"][0][
        "attributed_share"
    ] == pytest.approx(summary["attributed_share"])


def test_capture_trace_attributes_the_replays(tmp_path: Path) -> None:
    replay = write_trace(tmp_path / "replay.json", replay_events())
    capture = write_trace(tmp_path / "capture.json", eager_events())
    out = tmp_path / "out"
    r = timeline_cli(
        str(replay), "-o", str(out), "--capture-trace", str(capture), "--device", "h100"
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "replay" / "ops.json").read_text())
    assert summary["attributed_share"] == 1.0 and summary["device"] == "H100"
    assert summary["cuda_graphs"]["by_name"] == 2 and summary["links"]["graph_capture"] == 6
    addmm = next(r for r in read_ops_csv(out / "replay" / "ops.csv") if r["op"] == "aten::addmm")
    assert addmm["calls"] == 2 and addmm["bound"] == "compute" and addmm["efficiency"] > 0
    # without the capture trace the same replays are reported, not attributed
    r = timeline_cli(str(replay), "-o", str(tmp_path / "plain"))
    assert r.returncode == 0
    plain = json.loads((tmp_path / "plain" / "replay" / "ops.json").read_text())
    assert plain["unattributed_us"] == {"graph_replay": 600.0}


def test_bad_device_is_one_line(tmp_path: Path) -> None:
    replay = write_trace(tmp_path / "replay.json", replay_events())
    r = timeline_cli(str(replay), "-o", str(tmp_path / "out"), "--device", "h1000")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "unknown device 'h1000'" in r.stderr and "H100" in r.stderr
    r = timeline_cli(
        str(replay), "-o", str(tmp_path / "out"), "--capture-trace", str(tmp_path / "nope")
    )
    assert r.returncode == 2 and "nope" in r.stderr


def test_the_analyze_job_writes_the_ops_files_for_a_gpu_trace(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    write_trace(job_dir / "trace.json.gz", eager_events())
    job = AnalysisJob(job_dir, "torch_profiler", "tiny", "ok", ("trace.json.gz",))
    out = tmp_path / "analysis"
    written = TimelineAnalysis().run(job, out)
    for name in ("ops.csv", "ops.parquet", "kernels_by_op.csv", "ops.json", "ops.html"):
        assert out / "trace" / name in written
    rows = read_ops_csv(out / "trace" / "ops.csv")
    assert {r["op"] for r in rows if r["gpu_time_us"]} == {"aten::addmm", "aten::add", "aten::relu"}


def test_queue_delay_is_a_labelled_mean_per_gpu_event_in_every_output(tmp_path: Path) -> None:
    """Issue 38: the ``queue µs`` column summed the delays of every GPU event (132 ms in a
    50 ms trace). It is the mean per GPU event with a launch call, and every output names it
    so. Here one op launches three kernels that wait 5, 10 and 45 µs after their launches."""
    events = [x("aten::mm", "cpu_op", 0, 40)]
    for i, wait in enumerate((5, 10, 45)):
        events.append(x("cudaLaunchKernel", "cuda_runtime", 10 * i, 5, correlation=i))
        events.append(kernel(f"k{i}", 10 * i + 5 + wait, 2, corr=i))
    trace = write_trace(tmp_path / "q.json", events)
    done = timeline_cli("--no-inferscope", str(trace), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out" / "q"
    rows = list(csv.DictReader((out / "ops.csv").open()))
    assert "queue_delay_us" not in rows[0]
    assert float(rows[0]["mean_queue_delay_us"]) == 20.0
    table = pq.read_table(out / "ops.parquet").to_pylist()
    assert table[0]["mean_queue_delay_us"] == 20.0
    assert json.loads((out / "ops.json").read_text())["top_ops"][0]["mean_queue_delay_us"] == 20
    html = (out / "ops.html").read_text()
    assert ">mean queue µs per GPU event</th>" in html and ">queue µs</th>" not in html
    assert ">launch µs (total)</th>" in html


def test_cudagraph_trees_capture_through_the_cli_and_why_a_replay_stays_unattributed(
    tmp_path: Path,
) -> None:
    from tests.timeline.test_attribution import cudagraph_trees_pair

    capture_events, replay_events_ = cudagraph_trees_pair()
    replay = write_trace(tmp_path / "replay.json", replay_events_)
    capture = write_trace(tmp_path / "capture.json", capture_events)
    r = timeline_cli(str(replay), "-o", str(tmp_path / "out"), "--capture-trace", str(capture))
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "out" / "replay" / "ops.json").read_text())
    assert summary["attributed_share"] >= 0.99 and summary["cuda_graphs"]["by_alignment"] == 2
    # a capture trace of something else: the text says the capture was there, and why
    other = write_trace(tmp_path / "other.json", eager_events())
    r = timeline_cli(str(replay), "-o", str(tmp_path / "o2"), "--capture-trace", str(other))
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "o2" / "replay" / "ops.json").read_text())
    assert "without capture data" not in summary["text"]
    assert (
        "the capture trace did not cover (2 replays: the capture trace has no capture"
        in (summary["text"])
    )
    assert summary["cuda_graphs"]["unmatched_why"] == {"no_capture_region": 2}


def test_a_gpu_only_trace_says_it_has_no_cpu_ops(tmp_path: Path) -> None:
    events = [
        x("cudaLaunchKernel", "cuda_runtime", 10, 5, correlation=1),
        kernel("gemm", 20, 100, corr=1),
        kernel("relu", 130, 20),
    ]
    r = timeline_cli(str(write_trace(tmp_path / "g.json", events)), "-o", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "o" / "g" / "ops.json").read_text())
    assert summary["cpu_ops"] == 0 and summary["attributed_share"] == 0
    assert summary["text"] == (
        "no CPU ops in this trace (GPU activity only, recorded without CPU activity): "
        "none of its 120.0 µs of GPU time can be attributed to ops"
    )
    assert summary["text"] in r.stderr
