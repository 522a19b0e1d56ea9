"""The communication cost model against hand-computed cases (alpha-beta, ring factors), the
device table's links, and which part bounds a layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltracer.core.dispatch_row import DispatchRow
from kerneltracer.core.parallel import CollectiveRecord, Layout
from kerneltracer.costmodel import load_devices
from kerneltracer.costmodel.aggregate import UNRECORDED
from kerneltracer.costmodel.comm import collective_cost, group_members, steps, wire_bytes
from kerneltracer.costmodel.layers import block_of, compute_calls, layer_of, rank_cost
from kerneltracer.errors import ConfigError

TABLE = load_devices()
H100 = TABLE.get("H100")
A100 = TABLE.get("A100")
MI300X = TABLE.get("MI300X")
# Llama-3-70B at TP 8, 2,048 tokens: the activation each all_reduce sums, (1, 2048, 8192) bf16.
ACT = 2048 * 8192 * 2  # 33,554,432 bytes
US = 1e-6


def _rec(kind: str, n: int, size: int | None, group: str = "tp", **kw: object) -> CollectiveRecord:
    return CollectiveRecord(
        seq=kw.pop("seq", 0),  # type: ignore[arg-type]
        kind=kind,
        group=group,
        group_size=n,
        dtype="bfloat16",
        shape=(1, 2048, 8192),
        bytes_per_rank=size,
        op=f"_c10d_functional.{kind}.default",
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("kind", "n", "sent", "nsteps"),
    [
        ("all_reduce", 8, 2 * 7 / 8 * ACT, 14),  # ring: reduce-scatter then all-gather
        ("all_gather", 8, 7 * ACT, 7),  # (n-1)/n of the gathered n * ACT
        ("reduce_scatter", 8, 7 / 8 * ACT, 7),
        ("all_to_all", 8, 7 / 8 * ACT, 7),
        ("broadcast", 8, ACT, 7),
        ("send", 2, ACT, 1),
        ("recv", 2, ACT, 1),
        ("barrier", 8, 0, 14),
        ("all_reduce", 1, 0, 0),  # a group of one sends nothing
    ],
)
def test_ring_factors(kind: str, n: int, sent: float, nsteps: int) -> None:
    assert wire_bytes(kind, n, ACT) == pytest.approx(sent)
    assert steps(kind, n) == nsteps


def test_llama70b_tp8_all_reduce_on_nvlink4() -> None:
    # 2 * 7/8 * 33,554,432 = 58,720,256 bytes at 450 GB/s = 130.489 us, + 14 steps * 1 us.
    cost = collective_cost(_rec("all_reduce", 8, ACT), H100, Layout(tp=8), rank=3)
    assert cost.link == "NVLink 4"
    assert cost.wire_bytes == 58_720_256
    assert cost.time_s == pytest.approx(14 * US + 58_720_256 / 450e9)
    assert cost.time_s == pytest.approx(144.489 * US, rel=1e-5)
    assert cost.assumption is None


def test_a100_and_mi300x_links() -> None:
    rec = _rec("all_reduce", 8, ACT)
    a100 = collective_cost(rec, A100, Layout(tp=8))
    assert a100.link == "NVLink 3"
    assert a100.time_s == pytest.approx(14 * US + 58_720_256 / 300e9)
    mi = collective_cost(rec, MI300X, Layout(tp=8))
    assert mi.link == "Infinity Fabric (xGMI)"
    assert mi.time_s == pytest.approx(14 * 1.5 * US + 58_720_256 / 448e9)


def test_group_members_follow_the_rank_numbering() -> None:
    layout = Layout(tp=8, pp=2)
    assert group_members(layout, 11, "tp") == list(range(8, 16))
    assert group_members(layout, 3, "pp") == [3, 11]
    assert group_members(Layout(tp=2, ep=4), 5, "ep") == [1, 3, 5, 7]


def test_pipeline_send_crosses_nodes_at_tp8_pp2() -> None:
    # Stage 0 is node 0 (ranks 0-7), stage 1 node 1: rank 3 sends its activation to 11 on NDR.
    layout = Layout(tp=8, pp=2)
    cost = collective_cost(_rec("send", 2, ACT, group="pp", peer=11), H100, layout, rank=3)
    assert cost.link == "InfiniBand NDR 400G"
    assert cost.time_s == pytest.approx(5 * US + ACT / 50e9)  # 676.09 us
    assert cost.time_s == pytest.approx(676.089 * US, rel=1e-5)


def test_a_tp16_group_spans_two_nodes_and_is_bound_by_the_nic() -> None:
    cost = collective_cost(_rec("all_reduce", 16, ACT), H100, Layout(tp=16), rank=0)
    assert cost.link == "InfiniBand NDR 400G"
    assert cost.time_s == pytest.approx(30 * 5 * US + 2 * 15 / 16 * ACT / 50e9)


def test_dp_group_placement_from_the_layout() -> None:
    # tp 4 x dp 4: a dp group's ranks are 4 apart (0, 4, 8, 12): two nodes of 8.
    layout = Layout(tp=4, dp=4)
    cost = collective_cost(_rec("all_reduce", 4, ACT, group="dp"), H100, layout, rank=0)
    assert cost.link == "InfiniBand NDR 400G"
    # tp 2 x dp 4 = 8 ranks: every group fits one node.
    small = collective_cost(_rec("all_reduce", 4, ACT, group="dp"), H100, Layout(tp=2, dp=4))
    assert small.link == "NVLink 4"


def test_an_unnamed_group_states_its_placement_assumption() -> None:
    cost = collective_cost(_rec("all_reduce", 4, ACT, group="pg3"), H100)
    assert cost.link == "NVLink 4"
    assert cost.assumption is not None and "within one node" in cost.assumption


def test_unknown_bytes_stay_unknown_not_zero() -> None:
    # Mixtral EP 8: tokens per expert are not known in a fake run.
    cost = collective_cost(_rec("all_to_all", 8, None, group="ep"), H100, Layout(ep=8))
    assert cost.time_s is None and cost.wire_bytes is None
    assert cost.why_unknown is not None and "bytes" in cost.why_unknown


def test_assumed_bytes_carry_their_assumption() -> None:
    # Mixtral-8x22B EP 8, balanced routing: 2,048 tokens x top-2 x 6,144 x bf16 per rank.
    size = 2048 * 2 * 6144 * 2
    rec = _rec("all_to_all", 8, size, group="ep", assumption="balanced routing")
    cost = collective_cost(rec, H100, Layout(ep=8))
    assert cost.time_s == pytest.approx(7 * US + 7 / 8 * size / 450e9)  # 104.87 us
    assert cost.assumption == "balanced routing"


def test_user_yaml_overrides_a_link_and_adds_a_device(tmp_path: Path) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text(
        "devices:\n"
        "  H100:\n"
        "    interconnect: {inter_node: {link: RoCE 200G, bandwidth_gbs: 25, latency_us: 8}}\n"
        "  my-npu: {name: My NPU, memory_bandwidth_tbs: 0.5, peak_tflops: {fp32: 4}}\n"
    )
    table = load_devices(path)
    h100 = table.get("H100")
    assert h100.interconnect is not None
    assert h100.interconnect.intra_node.name == "NVLink 4"  # kept
    cost = collective_cost(_rec("all_reduce", 16, ACT), h100, Layout(tp=16))
    assert cost.link == "RoCE 200G"
    assert cost.time_s == pytest.approx(30 * 8 * US + 2 * 15 / 16 * ACT / 25e9)
    npu = collective_cost(_rec("all_reduce", 8, ACT), table.get("my-npu"))
    assert npu.time_s is None and "no interconnect" in (npu.why_unknown or "")


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("bandwidth_gbs: 400000", "out of range (valid: a number from 0.1 to 100000 GB/s)"),
        ("bandwidth_gbs: '450'", "is not a number"),
        ("speed: 3", "unknown field (valid: link, bandwidth_gbs, latency_us)"),
    ],
)
def test_bad_link_values_are_one_line_errors(tmp_path: Path, yaml: str, expected: str) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text(f"devices:\n  H100:\n    interconnect:\n      intra_node: {{{yaml}}}\n")
    with pytest.raises(ConfigError) as info:
        load_devices(path)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_layer_and_block_of_a_module_path() -> None:
    assert layer_of("model.layers.17.mlp.experts.3.w1") == "model.layers.17"
    assert layer_of("lm_head") == "lm_head"
    assert block_of("model.layers.17.self_attn.o_proj") == "model.layers.17.self_attn"
    assert block_of("model.norm") == "model.norm"


def _t(shape: list[int]) -> dict[str, object]:
    return {"shape": shape, "dtype": "bfloat16", "device": "cuda"}


def test_a_tp8_layer_is_bound_by_its_all_reduce() -> None:
    # q_proj at TP 8: 2048x8192 @ 8192x1024 bf16 = 34.36 GFLOP, 34.72 us at 989.5 TFLOP/s;
    # its layer's all_reduce of 32 MiB takes 144.49 us on NVLink 4.
    mm = DispatchRow(
        op="aten.mm.default",
        phase="forward",
        count=2,
        inputs=[_t([2048, 8192]), _t([8192, 1024])],
        kwargs={},
        outputs=[_t([2048, 1024])],
        modules={"model.layers.0.self_attn.q_proj": 1, "model.layers.1.self_attn.q_proj": 1},
    )
    wait = DispatchRow("_c10d_functional.wait_tensor.default", "forward", 2, [], {}, [], {})
    recs = [
        _rec("all_reduce", 8, ACT, seq=0, module="model.layers.0.self_attn.o_proj"),
        _rec("all_reduce", 8, None, seq=1, module="model.layers.1.self_attn.o_proj"),
    ]
    cost = rank_cost(0, [mm, wait], recs, H100, Layout(tp=8))
    assert list(cost.layers) == ["model.layers.0", "model.layers.1"]
    first, second = cost.layers.values()
    assert first.compute.flops == 2 * 2048 * 8192 * 1024
    assert first.compute.time_s == pytest.approx(2 * 2048 * 8192 * 1024 / 989.5e12)
    assert first.comm_s == pytest.approx(144.489 * US, rel=1e-5)
    assert first.bound == "communication"
    # Layer 1's all_reduce has no known size: it could be anything, so no verdict.
    assert second.comm_unknown == 1 and second.comm_s == 0
    assert second.bound == "unknown"
    total = cost.total()
    assert total.compute.calls == 2  # the wait is communication, not compute
    assert total.comm_calls == 2 and total.comm_unknown == 1


def test_fsdp_copies_are_memory_ops_and_markers_no_compute() -> None:
    from kerneltracer.costmodel import estimate

    # One layer's 8 shards (4 MiB of bf16 each) copied into the all-gather input; the
    # all-gather output (8x) is only allocated: 32 MiB read, 32 MiB written.
    shards = [_t([2 * 1024 * 1024])] * 8
    ag_in, ag_out = _t([16 * 1024 * 1024]), _t([128 * 1024 * 1024])
    cost = estimate("fsdp.all_gather_copy_in.default", [shards], {}, [ag_in, ag_out])
    assert cost is not None and cost.flops == 0 and cost.category == "memory"
    assert (cost.bytes_read, cost.bytes_written) == (32 << 20, 32 << 20)
    chunk = estimate("fsdp.chunk_cat.default", [[ag_in], 0, 8], {}, [ag_in])
    assert chunk is not None and chunk.bytes == 64 << 20
    marker = DispatchRow(
        "profiler._record_function_enter_new.default", "forward", 3, ["FSDP::pre_forward"], {},
        [], {"model.layers.0": 3},
    )  # fmt: skip
    cost_of_rank = rank_cost(0, [marker], [], H100, Layout(dp=8))
    assert cost_of_rank.layers == {}  # a marker launches nothing: no call, known or not


def test_compute_calls_group_a_rows_calls_and_put_unrecorded_ones_apart() -> None:
    mm = DispatchRow(
        op="aten.mm.default",
        phase="forward",
        count=5,
        inputs=[_t([4, 8]), _t([8, 2])],
        kwargs={},
        outputs=[_t([4, 2])],
        modules={"model.layers.0.mlp": 1, "model.layers.0.attn": 2},
    )
    wait = DispatchRow("_c10d_functional.wait_tensor.default", "forward", 3, [], {}, [], {})
    rows = list(compute_calls([mm, wait], H100, layer_of))
    # The two modules are one layer; the 2 calls no module recorded stand apart; no wait.
    assert [(group, calls) for group, _, calls in rows] == [
        ("model.layers.0", 1),
        ("model.layers.0", 2),
        (UNRECORDED, 2),
    ]
    assert all(point is not None for _, point, _ in rows)
    unknown = DispatchRow("aten.no_such_op.default", "forward", 1, [], {}, [], {"m": 1})
    assert list(compute_calls([unknown], H100, block_of)) == [(block_of("m"), None, 1)]
