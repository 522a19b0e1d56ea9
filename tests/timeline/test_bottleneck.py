"""Bottleneck analysis: breakdowns that add up, unions instead of sums, the right verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.analysis.timeline.analyses.bottleneck import analyze_steps, analyze_trace
from kerneltracer.analysis.timeline.analyses.category_rows import categorize
from kerneltracer.analysis.timeline.analyses.ranks import RankRow, find_stragglers
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from tests.timeline.traces import ALL_TRACES, hta_path, kernel, memcpy, write_trace, x


@pytest.mark.parametrize("key", sorted(ALL_TRACES))
def test_breakdowns_sum_to_100_percent_for_trace_and_steps(testdata_dir: Path, key: str) -> None:
    trace = load_chrome_trace(hta_path(testdata_dir, key))
    cats = categorize(trace)
    result = analyze_trace(trace, cats)
    assert abs(sum(b.percentage for b in result.timeline_breakdown) - 100.0) <= 0.5
    assert sum(b.duration_us for b in result.timeline_breakdown) == pytest.approx(
        result.summary.end_to_end_latency_us
    )
    assert 0.0 <= result.bottleneck.confidence <= 1.0
    assert all(s.evidence for s in result.suggestions)
    for step in analyze_steps(trace, cats):
        assert abs(sum(b.percentage for b in step.timeline_breakdown) - 100.0) <= 0.5


def test_overlap_is_counted_once_not_summed(tmp_path: Path) -> None:
    # Two threads busy over the same 100 µs, plus a nested op: summing would say 250 µs.
    events = [
        x("outer", "cpu_op", 0, 100, tid=1),
        x("nested", "cpu_op", 10, 50, tid=1),
        x("other_thread", "cpu_op", 0, 100, tid=2),
    ]
    result = analyze_trace(load_chrome_trace(write_trace(tmp_path / "t.json", events)))
    assert result.summary.total_cpu_time_us == 100
    assert result.summary.end_to_end_latency_us == 100
    assert result.bottleneck.type == "cpu_bound"


def test_gpu_bound_trace(tmp_path: Path) -> None:
    events = [x("cudaLaunchKernel", "cuda_runtime", 0, 5, correlation=1)]
    events += [kernel("gemm", 5 + 100 * i, 100, corr=1) for i in range(10)]
    result = analyze_trace(load_chrome_trace(write_trace(tmp_path / "g.json", events)))
    assert result.bottleneck.type == "gpu_bound"
    assert result.bottleneck.primary_cause == "gpu_compute"
    assert result.summary.total_gpu_time_us == 1000
    assert result.summary.gpu_idle_us == 5
    assert any("hottest kernels" in s.action for s in result.suggestions)


def test_memory_bound_trace_suggests_pinned_memory(tmp_path: Path) -> None:
    events = [memcpy("HtoD", 0, 800), kernel("small", 800, 50), memcpy("DtoH", 850, 150)]
    result = analyze_trace(load_chrome_trace(write_trace(tmp_path / "m.json", events)))
    assert result.bottleneck.type == "memory_bound"
    assert result.summary.total_h2d_us == 800 and result.summary.h2d_count == 1
    actions = " ".join(s.action for s in result.suggestions)
    assert "Pin host buffers" in actions and "device-to-host" in actions


def test_idle_gpu_waiting_on_host_is_cpu_bound(tmp_path: Path) -> None:
    events = [x("aten::tokenize", "cpu_op", 0, 900), kernel("k", 900, 100)]
    result = analyze_trace(load_chrome_trace(write_trace(tmp_path / "c.json", events)))
    assert result.bottleneck.type == "cpu_bound"
    assert result.summary.gpu_idle_us == 900
    assert any("GPU idle for 90.0%" in e for e in result.bottleneck.evidence)


def test_per_step_results_follow_profiler_steps(tmp_path: Path) -> None:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 0, 90),
        x("ProfilerStep#2", "user_annotation", 100, 100),
        x("aten::mm", "cpu_op", 100, 20),
    ]
    trace = load_chrome_trace(write_trace(tmp_path / "s.json", events))
    steps = analyze_steps(trace, categorize(trace))
    assert [s.step for s in steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    pct = [{b.category: b.percentage for b in s.timeline_breakdown} for s in steps]
    assert pct[0]["cpu_compute"] == 90 and pct[1]["cpu_compute"] == 20 and pct[1]["idle"] == 80


def _row(rank: int, step: float, compute: float) -> RankRow:
    return RankRow(
        rank, f"r{rank}.json", 1000.0, step, 3, 50.0, 50.0, compute, 10.0, "gpu_bound", None
    )


def test_stragglers_are_ranks_well_above_the_median() -> None:
    rows = [_row(0, 100, 50), _row(1, 101, 50), _row(2, 135, 50), _row(3, 99, 50)]
    found = find_stragglers(rows)
    assert [(s.rank, s.metric) for s in found] == [(2, "mean_step_us")]
    assert find_stragglers([_row(0, 100, 50), _row(1, 104, 52)]) == []
    assert find_stragglers([_row(0, 100, 50)]) == []


def test_temporal_breakdown_per_gpu_when_a_rank_has_several(tmp_path: Path) -> None:
    from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
        per_device_temporal,
        select_gpu_work,
    )

    events = [kernel("a", 0, 100), kernel("b", 200, 100)]
    events.append(kernel("c", 0, 50) | {"args": {"stream": 9, "device": 1, "correlation": 5}})
    trace = load_chrome_trace(write_trace(tmp_path / "d.json", events))
    rows = {r["device"]: r for r in per_device_temporal(select_gpu_work(trace))}
    assert (
        rows[0]["idle_pct"] == pytest.approx(100 / 3, abs=0.01) and rows[0]["kernel_time_us"] == 300
    )
    assert rows[1]["idle_pct"] == 0 and rows[1]["compute_pct"] == 100
