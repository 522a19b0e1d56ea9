"""Op → kernel attribution on small synthetic traces whose answer is known by construction:
the links (correlation id, flows, External id), nesting, module paths and steps, per-op
direct and inclusive time, and CUDA graph replays with and without capture data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kerneltracer.analysis.timeline.analyses.attribution import (
    ATTRIBUTED,
    CORRELATION,
    EXTERNAL_ID,
    FLOW,
    GRAPH_CAPTURE,
    GRAPH_REPLAY,
    NO_LAUNCH,
    REPEATED_CORRELATION,
    Attribution,
    attribute,
)
from kerneltracer.analysis.timeline.analyses.cuda_graphs import join_capture
from kerneltracer.analysis.timeline.analyses.op_table import OpTable, op_table
from kerneltracer.analysis.timeline.load.loader import load_chrome_trace
from kerneltracer.costmodel import load_devices
from tests.timeline.traces import kernel, write_trace, x

MM = "sm90_xmma_gemm_bf16"
ADD = "vectorized_elementwise_kernel<add>"
RELU = "vectorized_elementwise_kernel<relu>"


def op(name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return x(name, "cpu_op", ts, dur, tid=1, pid=1, **args)


def launch(ts: float, corr: int, name: str = "cudaLaunchKernel", dur: float = 5) -> dict[str, Any]:
    return x(name, "cuda_runtime", ts, dur, tid=1, pid=1, correlation=corr)


def flow(ph: str, fid: int, ts: float, *, gpu: bool) -> dict[str, Any]:
    e = {"ph": ph, "id": fid, "cat": "ac2g", "name": "ac2g", "ts": ts}
    e.update({"pid": 0, "tid": 7, "bp": "e"} if gpu else {"pid": 1, "tid": 1})
    return e


def _attr(path: Path, events: list[dict[str, Any]]) -> Attribution:
    return attribute(load_chrome_trace(write_trace(path, events), op_args=True))


def _row(table: OpTable, name: str) -> Any:
    return next(r for r in table.rows if r.op == name)


def eager_events() -> list[dict[str, Any]]:
    """ProfilerStep#3 > nn.Module: Block_0 > aten::linear > aten::addmm (one GEMM), then
    aten::add (one kernel) and aten::relu (one kernel) in the same module."""
    dims = [[8192], [8192, 8192], [8192, 8192]]
    types = ["c10::BFloat16"] * 3
    return [
        x("ProfilerStep#3", "user_annotation", 0, 1000),
        x("nn.Module: Block_0", "python_function", 5, 900),
        op("aten::linear", 10, 100, **{"External id": 1}),
        op(
            "aten::addmm",
            20,
            80,
            **{"Input Dims": dims, "Input type": types, "External id": 2},
        ),
        launch(30, corr=101),
        op(
            "aten::add",
            200,
            50,
            **{
                "Input Dims": [[8192, 8192], [8192, 8192], []],
                "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"],
                "External id": 3,
            },
        ),
        launch(210, corr=102),
        op("aten::relu", 300, 50, **{"External id": 4}),
        launch(310, corr=103),
        kernel(MM, 40, 2000, corr=101),
        kernel(ADD, 2100, 200, corr=102),
        kernel(RELU, 2400, 100, corr=103),
    ]


def test_kernels_go_to_the_innermost_op_with_module_step_and_launch_figures(
    tmp_path: Path,
) -> None:
    a = _attr(tmp_path / "t.json", eager_events())
    assert a.attributed_share == 1.0
    assert set(a.method.tolist()) == {CORRELATION}
    ops = {a.instances[i].name for i in a.op.tolist()}
    assert ops == {"aten::addmm", "aten::add", "aten::relu"}
    first = a.instances[int(a.op[0])]
    assert first.module == "Block_0" and first.step == 3
    assert a.instances[first.parent].name == "aten::linear"
    # launch call 30..35, kernel at 40: 5 µs queue delay; 5 µs in the launch call
    assert a.queue_delay().tolist() == [5.0, 1885.0, 2085.0]
    assert a.launch_overhead().tolist() == [5.0, 5.0, 5.0]

    table = op_table(a, None)
    addmm, linear = _row(table, "aten::addmm"), _row(table, "aten::linear")
    assert (addmm.gpu_time_us, addmm.gpu_time_incl_us, addmm.calls) == (2000, 2000, 1)
    assert (linear.gpu_time_us, linear.gpu_time_incl_us, linear.calls) == (0, 2000, 1)
    assert addmm.module == "Block_*" and addmm.record()["mean_queue_delay_us"] == 5
    assert sum(r.gpu_time_us for r in table.rows) == 2300
    kernels = {(k.op, k.kernel): (k.count, k.total_us) for k in table.kernels}
    assert kernels[("aten::addmm", MM)] == (1, 2000)


def test_roofline_table_for_a_trace_with_shapes(tmp_path: Path) -> None:
    """addmm bf16 8192³ in 2 ms on an H100: 2·8192³ FLOPs (1.0995e12); the bias (8192),
    both matrices read and the output written, 2 bytes each (402.7 MB)."""
    a = _attr(tmp_path / "t.json", eager_events())
    h100 = load_devices().get("H100")
    table = op_table(a, h100)
    addmm = _row(table, "aten::addmm")
    flops = 2 * 8192**3
    nbytes = (8192 + 3 * 8192 * 8192) * 2
    assert (addmm.est_flops, addmm.est_bytes) == (flops, nbytes)
    assert addmm.achieved_tflops == pytest.approx(flops / 2e-3 / 1e12)
    assert addmm.achieved_tbs == pytest.approx(nbytes / 2e-3 / 1e12)
    assert addmm.intensity == pytest.approx(flops / nbytes)
    assert addmm.bound == "compute"
    # lower bound: flops at the bf16 matrix peak (989.5 TFLOP/s) over the measured 2 ms
    assert addmm.efficiency == pytest.approx(flops / 989.5e12 / 2e-3, rel=1e-5)
    add = _row(table, "aten::add")
    # one add per element; two bf16 inputs read, the output (broadcast shape) written
    assert add.est_flops == 8192 * 8192 and add.est_bytes == 3 * 8192 * 8192 * 2
    assert add.bound == "memory" and add.device == "H100"
    # relu recorded no shapes: no estimate, and not listed as an op the model lacks
    relu = _row(table, "aten::relu")
    assert relu.est_flops is None and "aten::relu" not in table.unknown_ops


def test_flow_and_external_id_when_correlation_ids_do_not_match(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 0, 100, **{"External id": 7}),
        launch(10, corr=1),  # the kernels below carry other correlation ids
        op("aten::add", 200, 100, **{"External id": 8}),
        flow("s", 55, 12, gpu=False),
        flow("f", 55, 500, gpu=True),
        kernel(MM, 500, 10, corr=999),  # tied by the flow to the launch at 10
        kernel(ADD, 600, 10, corr=998, **{"External id": 8}),  # by its op's External id
        kernel(RELU, 700, 10, corr=997),  # nothing ties it to anything
    ]
    a = _attr(tmp_path / "t.json", events)
    assert a.method.tolist() == [FLOW, EXTERNAL_ID, -1]
    assert [a.instances[i].name if i >= 0 else None for i in a.op.tolist()] == [
        "aten::mm",
        "aten::add",
        None,
    ]
    assert a.status.tolist() == [ATTRIBUTED, ATTRIBUTED, NO_LAUNCH]
    assert a.attributed_share == pytest.approx(20 / 30)


def replay_events() -> list[dict[str, Any]]:
    """One eager addmm, then two replays of a 3-kernel graph: 3 of 9 GPU µs... see below."""
    events = [
        x("ProfilerStep#7", "user_annotation", 0, 5000),
        op("aten::mm", 0, 50),
        launch(10, corr=1),
        kernel(MM, 100, 100, corr=1),
        op("CUDAGraph::replay", 1000, 100),
        launch(1010, corr=2, name="cudaGraphLaunch"),
        op("CUDAGraph::replay", 2000, 100),
        launch(2010, corr=3, name="cudaGraphLaunch"),
    ]
    for corr, start in ((2, 1100), (3, 2100)):
        events += [
            kernel(MM, start, 200, corr=corr),
            kernel(ADD, start + 210, 50, corr=corr),
            kernel(RELU, start + 270, 50, corr=corr),
        ]
    return events


def test_graph_replays_without_capture_data_are_reported_not_hidden(tmp_path: Path) -> None:
    a = _attr(tmp_path / "replay.json", replay_events())
    assert (a.status == GRAPH_REPLAY).sum() == 6
    assert a.unattributed_us() == {"graph_replay": 600.0}
    assert a.attributed_share == pytest.approx(100 / 700)
    table = op_table(a, None)
    bucket = next(r for r in table.rows if r.kind == "unattributed")
    assert bucket.gpu_time_us == 600 and bucket.unattributed_reason == "graph_replay"
    assert bucket.record()["input_shapes"] == ""  # the reason has its own column
    (k,) = [k for k in table.kernels if k.op == "(unattributed)" and k.kernel == MM]
    assert (k.unattributed_reason, k.stream, k.count, k.input_shapes) == ("graph_replay", 7, 2, "")
    # the op around the graph launch did not launch the replayed kernels
    assert all(r.op != "CUDAGraph::replay" for r in table.rows)


def test_graph_replays_attributed_from_an_eager_capture_by_kernel_names(tmp_path: Path) -> None:
    replay = _attr(tmp_path / "replay.json", replay_events())
    capture = _attr(tmp_path / "capture.json", eager_events())
    join = join_capture(replay, capture)
    assert (join.replays, join.by_name, join.unmatched, join.kernels) == (2, 2, 0, 6)
    assert replay.attributed_share == 1.0
    assert set(replay.method[replay.status == ATTRIBUTED].tolist()) == {CORRELATION, GRAPH_CAPTURE}
    table = op_table(replay, None)
    addmm = _row(table, "aten::addmm")
    assert (addmm.calls, addmm.gpu_time_us, addmm.module) == (2, 400, "Block_*")
    assert addmm.steps == {7}  # the replay's step, not the capture's
    assert _row(table, "aten::linear").gpu_time_incl_us == 400


def test_graph_replays_attributed_from_a_capture_trace_by_launch_order(tmp_path: Path) -> None:
    """A trace of the capture itself: launches inside cudaStreamBeginCapture ..
    cudaStreamEndCapture, no kernels ran."""
    capture_events = [
        launch(0, corr=1, name="cudaStreamBeginCapture"),
        op("aten::mm", 10, 20),
        launch(12, corr=2),
        op("aten::add", 40, 20),
        launch(42, corr=3),
        op("aten::relu", 70, 20),
        launch(72, corr=4),
        launch(100, corr=5, name="cudaStreamEndCapture"),
    ]
    replay = _attr(tmp_path / "replay.json", replay_events())
    capture = _attr(tmp_path / "capture.json", capture_events)
    join = join_capture(replay, capture)
    assert (join.by_name, join.by_order, join.kernels) == (0, 2, 6)
    names = [replay.instances[i].name for i in replay.op[replay.status == ATTRIBUTED].tolist()]
    assert names.count("aten::relu") == 2 and names.count("aten::mm") == 3
    assert replay.attributed_share == 1.0


def test_a_capture_that_does_not_fit_leaves_the_replays_unattributed(tmp_path: Path) -> None:
    replay = _attr(tmp_path / "replay.json", replay_events())
    other = _attr(
        tmp_path / "other.json",
        [op("aten::mm", 0, 50), launch(10, corr=1), kernel(RELU, 100, 10, corr=1)],
    )
    join = join_capture(replay, other)
    assert (join.unmatched, join.kernels) == (2, 0)
    assert replay.unattributed_us() == {"graph_replay": 600.0}


def test_odd_args_and_random_nesting_never_break_the_invariant(tmp_path: Path) -> None:
    """Seeded random traces with odd arg types: attribution never raises, and every GPU
    event lands in exactly one ops row."""
    import random

    rng = random.Random(24)
    odd: list[Any] = [None, "x", -1, 2**70, 1.5, [], {}, [[1, "a"]], [[-3]], True]
    for n in range(20):
        events: list[dict[str, Any]] = []
        for i in range(60):
            ts = rng.uniform(0, 1000)
            kind = rng.choice(["op", "launch", "kernel", "flow", "py"])
            if kind == "op":
                events.append(
                    op(
                        rng.choice(["aten::mm", "aten::add_", "aten::cat", "x::y"]),
                        ts,
                        rng.uniform(0, 100),
                        **{
                            "Input Dims": rng.choice([*odd, [[2, 3], [3, 4]]]),
                            "Input type": rng.choice([*odd, ["float", "float"]]),
                            "Concrete Inputs": rng.choice(odd),
                            "External id": rng.choice([*odd, i]),
                            "Module Hierarchy": rng.choice(odd),
                        },
                    )
                )
            elif kind == "launch":
                name = rng.choice(["cudaLaunchKernel", "cudaGraphLaunch", "cudaMemcpyAsync"])
                events.append(launch(ts, corr=rng.randrange(20), name=name, dur=rng.uniform(0, 9)))
            elif kind == "kernel":
                extra = {"External id": rng.choice(odd)}
                events.append(kernel("k", ts, rng.uniform(0, 50), corr=rng.randrange(25), **extra))
            elif kind == "flow":
                events.append(
                    flow(rng.choice("sf"), rng.choice([*odd, 3]), ts, gpu=rng.random() < 0.5)
                )
            else:
                events.append(x("nn.Module: M_0", "python_function", ts, rng.uniform(0, 200)))
        events.append(kernel("k", 0, 1, corr=1))  # at least one GPU event
        a = _attr(tmp_path / f"t{n}.json", events)
        table = op_table(a, load_devices().get("H100"))
        assert sum(r.gpu_events for r in table.rows) == a.rows.size
        assert sum(r.gpu_time_us for r in table.rows) == pytest.approx(a.total_us)


def _gpu_events_one_at_a_time(
    a: Any, keys: list[Any], rows: dict[Any, Any], kernels: dict[Any, Any], row_kernels: Any
) -> np.ndarray:
    """The op table's GPU-event pass written plainly, an event at a time: the oracle the
    grouped version must match. A -0.0 duration counts as a zero (``+ 0.0``), as there."""
    import math

    from kerneltracer.analysis.timeline.analyses import op_table as ot
    from kerneltracer.analysis.timeline.analyses.attribution import STATUSES

    direct = [0.0] * len(a.instances)
    seen_launch: set[int] = set()
    for i, status, d, step, wait, launch, cost, kname_id, stream in zip(
        a.op.tolist(),
        a.status.tolist(),
        (a.dur + 0.0).tolist(),
        a.step.tolist(),
        a.queue_delay().tolist(),
        a.launch.tolist(),
        a.launch_overhead().tolist(),
        a.trace.name[a.rows].tolist(),
        a.trace.stream[a.rows].tolist(),
        strict=True,
    ):
        if i < 0 or (status != 0 and a.instances.kind[i] == "op"):
            key = ("(unattributed)", STATUSES[status], "", "", "unattributed")
        else:
            key = keys[i]
            direct[i] += d
        row = rows.setdefault(key, ot._new_row(key))
        row.gpu_events += 1
        row.gpu_time_us += d
        row.steps.add(step)
        if not math.isnan(wait):
            row.queue_delay_sum_us += wait
            row.queued_events += 1
            if launch not in seen_launch:
                seen_launch.add(launch)
                row.launch_overhead_us += cost
        kname = a.trace.names[kname_id]
        if row.kind == "op":
            row_kernels[key].add(kname)
        kkey = (key[0], key[1], key[3], kname, stream)
        k = kernels.setdefault(kkey, ot._new_kernel_row(row, kname, stream))
        k.count += 1
        k.total_us += d
        k.min_us = min(k.min_us, d)
        k.max_us = max(k.max_us, d)
    return np.array(direct, dtype=np.float64)


@pytest.mark.parametrize("seed", range(12))
def test_gpu_events_by_groups_are_the_event_loop_to_the_last_bit(tmp_path: Path, seed: int) -> None:
    """The op table's rows and kernel rows, summed by groups, are those a loop over GPU
    events makes: every sum bit for bit, rows and kernels in the same order, the same
    steps and kernels per row. Seeded traces: ops nested and not, launches starting
    several kernels, kernels with no launch, several streams, durations zero, whole and
    fractional, and (seed 0) -0.0, which the table counts as a zero."""
    import random
    from collections import defaultdict

    from kerneltracer.analysis.timeline.analyses import op_table as ot

    rng = random.Random(seed)
    events: list[dict[str, Any]] = [
        x("ProfilerStep#1", "user_annotation", 0, 500),
        x("ProfilerStep#2", "user_annotation", 500, 500),
    ]
    for _ in range(80):
        ts = rng.uniform(0, 1000)
        name = rng.choice(["aten::mm", "aten::add_", "aten::cat", "my::op"])
        dims = rng.choice([[[2, 3], [3, 4]], [[4]], []])
        events.append(
            op(name, ts, rng.choice([0, 1, 2.5, rng.uniform(0, 90)]), **{"Input Dims": dims})
        )
        corr = rng.randrange(30)
        events.append(launch(ts + 0.5, corr=corr, dur=rng.choice([0, 1, 0.25])))
        for _ in range(rng.choice([0, 1, 1, 2])):
            stream = rng.choice([7, 7, 8, 20])
            dur = rng.choice([0, 0.125, 3, rng.uniform(0, 40)])
            events.append(kernel(rng.choice(["k1", "gemm_k", "k2"]), ts + 2, dur, stream, corr))
    if seed == 0:
        events.append(kernel("negative zero", 1.0, -0.0, 7, 1))
    a = _attr(tmp_path / "t.json", events)

    def bits(row: Any) -> dict[str, Any]:  # floats by their bits: -0.0 is not 0.0 here
        return {f: v.hex() if isinstance(v, float) else v for f, v in vars(row).items()}

    def made(by: Any) -> tuple[Any, ...]:
        keys = ot._keys(a.instances)
        rows: dict[Any, Any] = {}
        kernels: dict[Any, Any] = {}
        row_kernels: dict[Any, set[str]] = defaultdict(set)
        direct = by(a, keys, rows, kernels, row_kernels)
        return (
            direct.tobytes(),
            [(k, bits(r)) for k, r in rows.items()],
            [(k, bits(r)) for k, r in kernels.items()],
            [(k, list(v)) for k, v in row_kernels.items()],
        )

    loop = made(_gpu_events_one_at_a_time)
    assert loop[1] and loop[2]  # rows and kernel rows made
    assert made(ot._gpu_events) == loop
    if seed == 0:
        assert bool(np.signbit(a.dur).any())
        (zero,) = [r for k, r in loop[2] if k[3] == "negative zero"]
        assert zero["min_us"] == zero["max_us"] == (0.0).hex()


def test_settled_flows_link_what_the_flows_link(tmp_path: Path) -> None:
    """The pipeline replaces a trace's flows by the links attribution makes of them
    (settle_flows, right after loading): seeded random traces of launches, kernels with
    shared, repeated and missing correlation ids and flows, some started twice, attribute
    the same either way."""
    import random

    from kerneltracer.analysis.timeline.analyses.attribution import settle_flows

    rng = random.Random(7)
    flow_links = 0
    for n in range(30):
        events: list[dict[str, Any]] = [op("aten::mm", 0, 1000), op("aten::add", 1200, 500)]
        for _ in range(40):
            ts = float(rng.randrange(0, 1700))
            kind = rng.choice(["launch", "kernel", "pair", "flow"])
            if kind == "launch":
                events.append(launch(ts, corr=rng.randrange(8)))
            elif kind == "kernel":
                events.append(kernel("k", ts, 3, corr=rng.choice([-1, 1, 2, 50 + n])))
            elif kind == "pair":  # a kernel that only its flow ties to a launch
                fid = rng.randrange(12)
                events += [launch(ts, corr=900), flow("s", fid, ts + 1, gpu=False)]
                events += [flow("f", fid, ts + 40, gpu=True), kernel("k", ts + 40, 3, corr=999)]
            else:  # a stray end or start
                events.append(flow(rng.choice("sf"), rng.randrange(12), ts, gpu=rng.random() < 0.5))
        path = write_trace(tmp_path / f"t{n}.json", events)
        plain = attribute(load_chrome_trace(path, op_args=True))
        trace = load_chrome_trace(path, op_args=True)
        settle_flows(trace)
        assert trace.flows is None
        settled = attribute(trace)
        for column in ("rows", "launch", "method", "op", "status", "step"):
            assert getattr(settled, column).tolist() == getattr(plain, column).tolist(), column
        assert [i.name for i in settled.instances] == [i.name for i in plain.instances]
        flow_links += int((plain.method == FLOW).sum())
    assert flow_links > 20  # the traces did exercise the flows


def _moment_in_no_child_of(op: dict, events: list[dict]) -> float:
    """A time inside ``op`` but in none of its children (addmm may record a nested
    aten::copy_ or not, depending on the run): the launch's innermost op must be ``op``."""
    end = op["ts"] + op["dur"]
    children = sorted(
        (e["ts"], e["ts"] + e.get("dur", 0))
        for e in events
        if e is not op
        and e.get("ph") == "X"
        and (e.get("pid"), e.get("tid")) == (op["pid"], op["tid"])
        and op["ts"] <= e["ts"] < end
        and e["ts"] + e.get("dur", 0) <= end  # not a parent that starts with it
    )
    t = op["ts"] + 0.0005
    for start, stop in children:
        if t < start:
            break
        t = max(t, stop + 0.0005)
    assert t < end, "the op has no moment outside its children"
    return t


def test_a_real_torch_profile_gives_module_path_shapes_and_cost(tmp_path: Path) -> None:
    """torch.profiler's own format (CPU here): with_stack's ``nn.Module:`` events, Input
    Dims / Input type / Concrete Inputs. A launch and a kernel are added inside the first
    aten::addmm, as a CUDA profile would have them."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True, with_modules=True
    ) as prof:
        model(torch.randn(2, 8))
    raw = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(raw))
    import json

    doc = json.loads(raw.read_text())
    addmm = next(e for e in doc["traceEvents"] if e.get("name") == "aten::addmm")
    mid = _moment_in_no_child_of(addmm, doc["traceEvents"])
    doc["traceEvents"] += [
        x(
            "cudaLaunchKernel",
            "cuda_runtime",
            mid,
            0.001,
            pid=addmm["pid"],
            tid=addmm["tid"],
            correlation=424242,
        ),
        kernel(MM, addmm["ts"] + addmm["dur"] + 5, 3.0, corr=424242),
    ]
    a = attribute(
        load_chrome_trace(write_trace(tmp_path / "t.json", doc["traceEvents"]), op_args=True)
    )
    (i,) = a.op.tolist()
    assert a.instances[i].name == "aten::addmm"
    assert a.instances[i].module == "Sequential_0.Linear_0"
    row = _row(op_table(a, load_devices().get("H100")), "aten::addmm")
    assert row.module == "Sequential_*.Linear_*"
    assert row.input_shapes == "[[16], [2, 8], [8, 16], [], []]"
    assert row.est_flops == 2 * 2 * 16 * 8 and row.gpu_time_us == 3.0


def test_backward_ops_take_the_module_of_their_forward_op(tmp_path: Path) -> None:
    bwd = {"tid": 2, "pid": 1}
    events = [
        x("nn.Module: Block_0", "python_function", 0, 100),
        op("aten::addmm", 10, 50, **{"Sequence number": 5, "External id": 1}),
        launch(20, corr=1),
        kernel(MM, 30, 10, corr=1),
        # the autograd thread, later: no module events around it
        x(
            "autograd::engine::evaluate_function: AddmmBackward0",
            "cpu_op",
            500,
            100,
            **bwd,
            **{"Sequence number": 5},
        ),
        x("aten::mm", "cpu_op", 510, 50, **bwd),
        x("cudaLaunchKernel", "cuda_runtime", 520, 5, correlation=2, **bwd),
        kernel(MM, 530, 20, corr=2),
    ]
    a = _attr(tmp_path / "t.json", events)
    modules = [a.instances[i].module for i in a.op.tolist()]
    assert modules == ["Block_0", "Block_0 (backward)"]
    table = op_table(a, None)
    assert _row(table, "aten::mm").module == "Block_* (backward)"


def test_ops_nested_thousands_deep(tmp_path: Path) -> None:
    depth = 3000  # beyond Python's recursion limit
    events = [op(f"aten::op{i}", i, 2 * depth - 2 * i) for i in range(depth)]
    events += [launch(depth, corr=1, dur=1), kernel(MM, 2 * depth + 10, 7, corr=1)]
    a = _attr(tmp_path / "deep.json", events)
    assert a.instances[int(a.op[0])].name == f"aten::op{depth - 1}"
    table = op_table(a, None)
    assert _row(table, "aten::op0").gpu_time_incl_us == 7


def _repeated_ids(queued: bool) -> list[dict[str, Any]]:
    """Ten ops, each launching one kernel; every launch carries correlation id 7. With
    ``queued`` the GPU runs behind: every kernel starts after the last launch."""
    events: list[dict[str, Any]] = []
    for i in range(10):
        t = i * 100
        events += [op(f"aten::op{i}", t, 50), launch(t + 10, corr=7)]
        events.append(kernel(f"k{i}", 5000 + i * 20 if queued else t + 30, 10, corr=7))
    return events


@pytest.mark.parametrize("queued", [False, True])
def test_repeated_correlation_ids_are_linked_by_time_and_counted(
    tmp_path: Path, queued: bool
) -> None:
    """Issue 38: ten launches sharing one correlation id gave all ten kernels to the first
    op and said "100.0% attributed". Now each kernel goes to the op of its own launch
    (launch order), the link is marked, and the summary says how much was linked so."""
    from kerneltracer.analysis.timeline.analyses.ops import OpsResult

    a = _attr(tmp_path / "t.json", _repeated_ids(queued))
    names = [a.instances[i].name for i in a.op.tolist()]
    kernels = [a.trace.names[int(a.trace.name[r])] for r in a.rows.tolist()]
    assert {k[1:]: n[len("aten::op") :] for k, n in zip(kernels, names, strict=True)} == {
        str(i): str(i) for i in range(10)
    }
    assert set(a.method.tolist()) == {REPEATED_CORRELATION}
    assert a.repeated_correlation() == {"gpu_events": 10, "gpu_time_us": 100.0, "ids": 1}
    result = OpsResult(attribution=a, table=op_table(a, None))
    assert result.share_text() == (
        "100.0% of GPU time attributed to ops (100.0% linked by launch order and time, not by "
        "correlation id: 10 GPU events share an id with other launch calls)"
    )
    summary = result.summary()
    assert summary["links"] == {"repeated_correlation": 10}
    assert summary["repeated_correlation"] == {"gpu_events": 10, "gpu_time_us": 100.0, "ids": 1}


def test_a_kernel_before_every_launch_of_its_repeated_id_has_no_launch(tmp_path: Path) -> None:
    events = [op("aten::a", 100, 50), launch(110, corr=7), op("aten::b", 200, 50)]
    events += [launch(210, corr=7), kernel("early", 20, 5, corr=7), kernel("k", 230, 5, corr=7)]
    a = _attr(tmp_path / "t.json", events)
    by_kernel = {a.trace.names[int(a.trace.name[r])]: q for q, r in enumerate(a.rows.tolist())}
    assert a.status[by_kernel["early"]] == NO_LAUNCH
    assert a.instances[int(a.op[by_kernel["k"]])].name == "aten::b"


ROCM_GEMM = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64"
ROCM_NAMES = {"aten::mm": ROCM_GEMM, "aten::add": ADD, "aten::relu": RELU}


def hip_launch(ts: float, corr: int, kernel_name: str | None = None) -> dict[str, Any]:
    """A ROCm launch call: it names the kernel it launches in its args."""
    e = launch(ts, corr=corr, name="hipLaunchKernel")
    if kernel_name is not None:
        e["args"]["kernel"] = kernel_name
    return e


def cudagraph_trees_pair(layers: int = 40) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """torch.compile's cudagraph trees on ROCm: the capture trace has no stream-capture
    calls, only the ``CUDAGraphNode.record`` annotation around the captured launches (which
    name their kernels and ran nothing); one launch in it (a fill the graph did not keep)
    has no replayed kernel, so the replays (two) each run one kernel fewer than captured."""
    capture: list[dict[str, Any]] = [
        x("CUDAGraphNode.record (dynamo_timed)", "user_annotation", 0, 100 * layers + 100)
    ]
    corr = 1
    for i in range(layers):
        base = 10 + 100 * i
        for j, name in enumerate(("aten::mm", "aten::add", "aten::relu")):
            capture += [
                op(name, base + 30 * j, 20),
                hip_launch(base + 30 * j + 2, corr, ROCM_NAMES[name]),
            ]
            corr += 1
        if i == layers // 2:  # the extra launch
            capture += [
                op("aten::zero_", base + 95, 4),
                launch(base + 96, corr, "hipMemsetAsync", 1),
            ]
            corr += 1
    replay: list[dict[str, Any]] = [x("ProfilerStep#2", "user_annotation", 0, 10**6)]
    for r, start in enumerate((1000, 100_000)):
        graph_corr = 10_000 + r
        replay += [
            op("CUDAGraph::replay", start, 20),
            launch(start + 5, corr=graph_corr, name="hipGraphLaunch"),
        ]
        ts = start + 100
        for _ in range(layers):
            for name, dur in (("aten::mm", 300), ("aten::add", 40), ("aten::relu", 20)):
                replay.append(kernel(ROCM_NAMES[name], ts, dur, corr=graph_corr))
                ts += dur + 1
    return capture, replay


def test_cudagraph_trees_replays_join_their_record_annotation_by_kernel_names(
    tmp_path: Path,
) -> None:
    # the sizes of the ROCm xDiT FLUX profile: 1,567 captured launches, 1,566 replayed kernels
    capture_events, replay_events_ = cudagraph_trees_pair(layers=522)
    replay = _attr(tmp_path / "replay.json", replay_events_)
    capture = _attr(tmp_path / "capture.json", capture_events)
    assert len(capture.trace.launch_kernels) == 1566  # + the fill, which names no kernel
    join = join_capture(replay, capture)
    assert (join.replays, join.by_alignment, join.unmatched, join.kernels) == (2, 2, 0, 3132)
    assert replay.attributed_share is not None and replay.attributed_share >= 0.99
    assert replay.unattributed_us() == {}
    # every replayed kernel went to the op that launched it at capture
    for q in range(replay.rows.size):
        kernel_name = replay.trace.names[int(replay.trace.name[replay.rows[q]])]
        assert ROCM_NAMES[replay.instances[int(replay.op[q])].name] == kernel_name
    table = op_table(replay, None)
    assert _row(table, "aten::mm").calls == 1044 and _row(table, "aten::relu").calls == 1044
    assert all(r.op != "aten::zero_" for r in table.rows)  # its fill was not replayed


def test_alignment_tolerates_inserted_and_missing_kernels(tmp_path: Path) -> None:
    """The replay misses a captured launch and runs one the capture trace lacks: each costs
    that kernel only; a replay of another graph is refused, and the summary says why."""
    capture_events, replay_events_ = cudagraph_trees_pair(layers=20)
    dropped = [e for e in replay_events_ if not (e["cat"] == "kernel" and e["ts"] == 1100)]
    dropped.append(kernel("an_extra_kernel", 5000, 10, corr=10_000))
    replay = _attr(tmp_path / "replay.json", dropped)
    join = join_capture(replay, _attr(tmp_path / "capture.json", capture_events))
    assert (join.by_alignment, join.unpaired_kernels, join.kernels) == (2, 1, 59 + 60)
    assert replay.unattributed_us() == {"graph_replay": 10.0}
    assert "1 kernel of joined replays had no launch" in join.why_text()

    other = _attr(
        tmp_path / "other.json",
        [e for e in dropped if e["cat"] != "kernel"]
        + [kernel(f"k{i}", 2000 + i, 1, corr=10_000) for i in range(60)],
    )
    join = join_capture(other, _attr(tmp_path / "capture2.json", capture_events))
    assert join.unmatched == 1 and join.unmatched_why == {"names_differ": 1}
    assert "align with the replay's kernel names" in join.why_text()


def test_myers_alignment_pairs_a_longest_common_subsequence() -> None:
    from kerneltracer.analysis.timeline.analyses.cuda_graphs import align

    assert align(list("abcd"), list("abcd"), 0) == [0, 1, 2, 3]
    assert align(list("abxcd"), list("abcd"), 1) == [0, 1, 3, 4]  # a launch not replayed
    assert align(list("abcd"), list("abycd"), 1) == [0, 1, -1, 2, 3]  # a kernel not captured
    assert align(list("abcd"), list("abycd"), 0) is None
    assert align(list("abcdef"), list("xyz"), 2) is None


def test_an_op_calling_itself_is_one_call_and_its_subtree_counted_once(tmp_path: Path) -> None:
    """aten::copy_ inside aten::copy_ with the same inputs, the inner one launching a 6.3 µs
    kernel: one call of 6.3 µs, inclusive 6.3 µs (not 2 calls, 12.6 µs)."""
    dims = {"Input Dims": [[64], [64], []], "Input type": ["float", "float", "Scalar"]}
    events = [
        op("aten::copy_", 0, 100, **dims),
        op("aten::copy_", 10, 80, **dims),
        launch(20, corr=1),
        kernel(ADD, 40, 6.3, corr=1),
        op("aten::copy_", 200, 100, **dims),  # a second call, on its own
        launch(220, corr=2),
        kernel(ADD, 240, 6.3, corr=2),
    ]
    table = op_table(_attr(tmp_path / "t.json", events), None)
    copy = _row(table, "aten::copy_")
    assert (copy.calls, copy.gpu_time_us, copy.gpu_time_incl_us) == (2, 12.6, 12.6)


@pytest.mark.parametrize(
    ("name", "dims", "kernel_name"),
    [
        # x (M, K) by weight (N, K), as linear takes it, on ROCm's hipBLASLt
        ("vllm::rocm_unquantized_gemm", [[4096, 8192], [28672, 8192], []], "Cijk_Alik_Bljk_BBS"),
        ("aiter::gemm_a16w16", [[4096, 8192], [28672, 8192], [], []], "wvSplitK_hf_"),
        # a custom op named like no GEMM, known by its CUDA GEMM kernel; (K, N) weight
        ("myext::fused_proj", [[8, 512, 8192], [8192, 28672]], "sm90_xmma_gemm_bf16bf16"),
    ],
)
def test_vendor_gemms_get_flops_from_their_shapes(
    tmp_path: Path, name: str, dims: list[Any], kernel_name: str
) -> None:
    types = ["c10::BFloat16", "c10::BFloat16", "", ""][: len(dims)]
    events = [
        op(name, 0, 100, **{"Input Dims": dims, "Input type": types}),
        launch(10, corr=1),
        kernel(kernel_name, 20, 1000, corr=1),
    ]
    table = op_table(_attr(tmp_path / "t.json", events), load_devices(None).devices["MI300X"])
    row = _row(table, name)
    assert row.est_flops == 2 * 4096 * 28672 * 8192 and row.cost_category == "matmul"
    assert row.achieved_tflops == pytest.approx(2 * 4096 * 28672 * 8192 / 1e-3 / 1e12, rel=1e-5)
    assert table.unknown_ops == {}


def test_an_unknown_op_with_elementwise_kernels_is_no_gemm(tmp_path: Path) -> None:
    dims = {"Input Dims": [[4096, 8192], [8192, 8192]], "Input type": ["float", "float"]}
    events = [op("myext::blend", 0, 100, **dims), launch(10, corr=1), kernel(ADD, 20, 10, corr=1)]
    table = op_table(_attr(tmp_path / "t.json", events), None)
    assert _row(table, "myext::blend").est_flops is None
    assert table.unknown_ops == {"myext::blend": 1}


def test_every_op_row_has_its_tracelens_category(tmp_path: Path) -> None:
    events = eager_events()
    extra = [
        ("aten::convolution_backward", "wgrad_alg0_engine"),
        ("aten::_scaled_dot_product_flash_attention", "flash_fwd_kernel"),
        ("aten::native_layer_norm", "vectorized_layer_norm_kernel"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
        ("aten::sum", "reduce_kernel<512, 1>"),
        ("myext::mystery", "some_kernel"),
    ]
    for i, (name, kernel_name) in enumerate(extra):
        events += [
            op(name, 2000 + 100 * i, 50),
            launch(2010 + 100 * i, corr=500 + i),
            kernel(kernel_name, 5000 + 100 * i, 10, corr=500 + i),
        ]
    events.append(kernel(RELU, 9000, 10, corr=999))  # no launch: unattributed
    table = op_table(_attr(tmp_path / "t.json", events), None)
    got = {r.op: r.record()["op_category"] for r in table.rows}
    assert got == {
        "aten::addmm": "GEMM",  # by its cost formula
        "aten::linear": "GEMM",
        "aten::add": "elementwise",
        "aten::relu": "elementwise",  # no shapes: by its kernel
        "aten::convolution_backward": "CONV_bwd",
        "aten::_scaled_dot_product_flash_attention": "SDPA_fwd",
        "aten::native_layer_norm": "NORM_fwd",
        "triton_poi_fused_add_0": "triton",
        "aten::sum": "reduce",
        "myext::mystery": "other",
        "(unattributed)": "",
    }


def test_replays_of_several_graphs_take_the_region_they_match(tmp_path: Path) -> None:
    """Two captured graphs of the same length (mm add relu / mm relu add): each replay
    takes its own region, by names, not the first of its size."""
    capture = [x("CUDAGraphNode.record (dynamo_timed)", "user_annotation", 0, 100)]
    capture += [x("CUDAGraphNode.record (dynamo_timed)", "user_annotation", 200, 100)]
    order = (("aten::mm", "aten::add", "aten::relu"), ("aten::mm", "aten::relu", "aten::add"))
    corr = 1
    for g, names in enumerate(order):
        for j, name in enumerate(names):
            ts = 200 * g + 10 + 30 * j
            capture += [op(name, ts, 20), hip_launch(ts + 2, corr, ROCM_NAMES[name])]
            corr += 1
    replay: list[dict[str, Any]] = []
    for g, names in enumerate(reversed(order)):  # the second graph replays first
        start = 1000 * (g + 1)
        replay += [op("CUDAGraph::replay", start, 20)]
        replay += [launch(start + 5, corr=100 + g, name="hipGraphLaunch")]
        replay += [
            kernel(ROCM_NAMES[n], start + 100 + 50 * j, 10, corr=100 + g)
            for j, n in enumerate(names)
        ]
    a = _attr(tmp_path / "replay.json", replay)
    join = join_capture(a, _attr(tmp_path / "capture.json", capture))
    assert (join.by_alignment, join.kernels) == (2, 6)
    for q in range(a.rows.size):
        kernel_name = a.trace.names[int(a.trace.name[a.rows[q]])]
        assert ROCM_NAMES[a.instances[int(a.op[q])].name] == kernel_name
