"""Our temporal and kernel breakdowns next to traceinsight (HTA) 0.6.1's, side by side on the
GPU traces (the same figures as HolisticTraceAnalysis 0.5.0 gave).

Tolerance is 0.5 percentage points. The one intended difference (see gpu_breakdown's module
docstring): HTA counts a host ``cpu_op`` that carries a ``stream`` arg as GPU time (Triton
launcher); we do not. On the traces here that changes no percentage by more than the tolerance.
Per-kernel shares are compared with HTA's ns rounding turned off: our per-kernel statistics
are the events' own durations (its rounding makes a sub-µs memset a −1 µs one).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
    kernel_breakdown,
    select_gpu_work,
    temporal_breakdown,
)
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from tests.conftest import require
from tests.timeline.traces import GPU_TRACES, hta_path, kernel, write_trace, x

TOL = 0.5


def _hta(path: Path, *, ns_rounding: bool = True) -> Any:
    try:
        from hta.configs.env_options import HTAEnvOptions
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        require(False, "traceinsight 0.6.1 (the hta module)")
    logging.getLogger("hta").setLevel(logging.ERROR)
    options = HTAEnvOptions.instance()
    before = options.disable_ns_rounding()
    options.set_disable_ns_rounding(not ns_rounding)
    try:
        return TraceAnalysis(trace_files={0: path.name}, trace_dir=str(path.parent))
    finally:
        options.set_disable_ns_rounding(before)


@pytest.fixture(scope="module", params=sorted(GPU_TRACES))
def pair(request: pytest.FixtureRequest, testdata_dir: Path) -> tuple[Any, Any, str]:
    path = hta_path(testdata_dir, request.param)
    trace = load_chrome_trace(path)
    return _hta(path), trace, request.param


@pytest.fixture(scope="module")
def unrounded(testdata_dir: Path) -> Any:
    """HTA without its ns rounding, per trace: per-kernel statistics are the events' own
    durations on our side (HTA's rounding makes a 0.5 µs memset −1 µs, issue 38)."""
    cache: dict[str, Any] = {}

    def get(key: str, rounded: Any) -> Any:
        path = hta_path(testdata_dir, key)
        if not load_chrome_trace(path).float_timestamps:
            return rounded  # µs traces: nothing is rounded
        if key not in cache:
            cache[key] = _hta(path, ns_rounding=False)
        return cache[key]

    return get


def test_temporal_breakdown_matches_hta(pair: tuple[Any, Any, str]) -> None:
    hta, trace, key = pair
    theirs = hta.get_temporal_breakdown(visualize=False).iloc[0]
    ours = temporal_breakdown(select_gpu_work(trace))
    assert ours is not None
    for mine, col in (
        ("idle_pct", "idle_time_pctg"),
        ("compute_pct", "compute_time_pctg"),
        ("non_compute_pct", "non_compute_time_pctg"),
    ):
        assert abs(getattr(ours, mine) - float(theirs[col])) <= TOL, (key, mine)
    assert abs(ours.idle_pct + ours.compute_pct + ours.non_compute_pct - 100.0) <= TOL
    if key != "triton":  # the one intended difference: HTA adds the launcher cpu_op's 94 µs
        assert ours.kernel_time_us == pytest.approx(float(theirs["kernel_time(us)"]))


def test_kernel_breakdown_matches_hta(pair: tuple[Any, Any, str], unrounded: Any) -> None:
    hta, trace, key = pair
    by_type, _ = hta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    _, per_kernel = unrounded(key, hta).get_gpu_kernel_breakdown(
        visualize=False, include_memory_kernels=True
    )
    ours = kernel_breakdown(select_gpu_work(trace), trace.names, top_n=1000)
    theirs_pct = {r["kernel_type"]: float(r["percentage"]) for _, r in by_type.iterrows()}
    ours_pct = {r["kernel_type"]: r["percentage"] for r in ours.by_type}
    assert theirs_pct.keys() == ours_pct.keys(), key
    for label, pct in theirs_pct.items():
        assert abs(ours_pct[label] - pct) <= TOL, (key, label)
    # Per kernel: each named kernel's share of its type's total time.
    type_totals = per_kernel.groupby("kernel_type")["sum (us)"].sum().to_dict()
    ours_share = {
        (s.kernel_type, s.name): s.pct_of_type for stats in ours.top_kernels.values() for s in stats
    }
    checked = 0
    for _, row in per_kernel.iterrows():
        if row["name"] == "others":
            continue
        share = 100.0 * float(row["sum (us)"]) / float(type_totals[row["kernel_type"]])
        assert abs(ours_share[(row["kernel_type"], row["name"])] - share) <= TOL, (key, row["name"])
        checked += 1
    assert checked > 0


def test_hta_fails_on_cpu_only_traces_and_we_do_not(testdata_dir: Path) -> None:
    path = hta_path(testdata_dir, "cpu_only")
    with pytest.raises(IndexError):
        _hta(path).get_temporal_breakdown(visualize=False)
    trace = load_chrome_trace(path)
    work = select_gpu_work(trace)
    assert temporal_breakdown(work) is None
    assert kernel_breakdown(work, trace.names).by_type == []


@pytest.mark.parametrize("key", ["nccl", "amd"])
def test_including_the_last_step_matches_hta(testdata_dir: Path, key: str) -> None:
    from hta.trace_analysis import TraceAnalysis

    path = hta_path(testdata_dir, key)
    theirs = TraceAnalysis(
        trace_files={0: path.name}, trace_dir=str(path.parent), include_last_profiler_step=True
    )
    row = theirs.get_temporal_breakdown(visualize=False).iloc[0]
    trace = load_chrome_trace(path)
    ours = temporal_breakdown(select_gpu_work(trace, include_last_step=True))
    default = temporal_breakdown(select_gpu_work(trace))
    assert ours is not None and default is not None
    assert ours.kernel_time_us == pytest.approx(float(row["kernel_time(us)"]))
    assert abs(ours.idle_pct - float(row["idle_time_pctg"])) <= TOL
    assert abs(ours.compute_pct - float(row["compute_time_pctg"])) <= TOL
    assert ours.kernel_time_us >= default.kernel_time_us
    if key == "nccl":
        assert ours.kernel_time_us > default.kernel_time_us  # its last step really adds work


def test_compute_on_overlapping_streams_is_the_union_and_host_events_are_not_gpu_time(
    tmp_path: Path,
) -> None:
    """The MI300X discrepancy (issue 24: same kernel time, HTA's compute higher), reduced:
    two streams run compute kernels at once, and a Triton launcher ``cpu_op`` carries a
    ``stream`` arg. Both tools count overlapping kernels once (a union over streams); HTA
    also counts the host launcher's interval as GPU compute, so where the launch does not
    overlap a kernel its compute grows while the span (first to last GPU event) does not."""
    events = [
        kernel("gemm_a", 0, 100, stream=7, corr=1),
        kernel("gemm_b", 50, 100, stream=9, corr=2),  # overlaps gemm_a by 50 µs
        kernel("ncclDevKernel_AllReduce", 150, 100, stream=11, corr=3),
        # host launch of the Triton kernel, while only communication runs on the GPU
        x("triton_poi_fused_add_0", "cpu_op", 180, 40, tid=1, pid=1, stream=7),
        kernel("triton_poi_fused_add_0", 260, 40, stream=7, corr=4),
    ]
    path = write_trace(tmp_path / "t.json", events)
    ours = temporal_breakdown(select_gpu_work(load_chrome_trace(path)))
    theirs = _hta(path).get_temporal_breakdown(visualize=False).iloc[0]
    assert ours is not None
    assert ours.compute_us == 150 + 40  # [0, 150) once, not 200; plus the Triton kernel
    assert ours.kernel_time_us == float(theirs["kernel_time(us)"]) == 300
    assert float(theirs["compute_time(us)"]) == ours.compute_us + 40  # the host launch
