"""Per-rank Chakra traces read back with Chakra's own reader (MLCommons' protolib and
et_def_pb2): node types, collective types and sizes, groups and program-order dependencies."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kerneltracer.core.parallel import Layout
from kerneltracer.core.ranks import FROM_ROLES, FROM_SPEC, INFERRED, read_rank_job
from kerneltracer.costmodel import load_devices
from kerneltracer.export import protowire as pw
from kerneltracer.export.chakra import export_chakra
from tests.conftest import require
from tests.export.synth_ranks import (
    Dense,
    dense_tp_job,
    dense_tp_pp_job,
    keep_roles,
    moe_ep_job,
    write_spec,
)

H100 = load_devices().get("H100")
LLAMA_70B = Dense()
ACT = 2048 * 8192 * 2


@pytest.fixture(scope="module")
def chakra() -> SimpleNamespace:
    """Chakra's reader: installed by `make install-dev` into <venv>/thirdparty (out of pip's
    view) from the shared third-party folder ($KT_THIRDPARTY; see the Makefile); missing,
    the test skips locally and fails under CI."""
    target = Path(sys.prefix) / "thirdparty"
    if target.is_dir() and str(target) not in sys.path:
        sys.path.append(str(target))
    try:
        from chakra.schema.protobuf import et_def_pb2
        from chakra.src.third_party.utils.protolib import decodeMessage
    except ImportError:
        require(False, f"chakra (make install-dev installs it into {target})")
        raise
    return SimpleNamespace(pb=et_def_pb2, decode=decodeMessage)


def _read(chakra: SimpleNamespace, path: Path) -> tuple[Any, list[Any]]:
    nodes = []
    with path.open("rb") as fh:
        meta = chakra.pb.GlobalMetadata()
        assert chakra.decode(fh, meta)
        while True:
            node = chakra.pb.Node()
            if not chakra.decode(fh, node):
                break
            nodes.append(node)
    return meta, nodes


def _attrs(message: Any) -> dict[str, Any]:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in message.attr}


def test_protowire_matches_protobuf_for_the_edge_values(chakra: SimpleNamespace) -> None:
    # A negative int64 (10-byte varint), a uint64 past 2^63, a double, an empty string.
    attr = chakra.pb.AttributeProto()
    attr.ParseFromString(pw.text(1, "x") + pw.uint(9, -5))
    assert attr.int64_val == -5
    attr.ParseFromString(pw.text(1, "") + pw.uint(13, 2**64 - 1))
    assert attr.uint64_val == 2**64 - 1
    attr.ParseFromString(pw.double(3, 0.1))
    assert attr.double_val == 0.1
    node = chakra.pb.Node()
    node.ParseFromString(pw.uint(1, 300) + pw.packed(5, [1, 2**40]))
    assert node.id == 300 and list(node.data_deps) == [1, 2**40]


def test_llama70b_tp8_round_trip(tmp_path: Path, chakra: SimpleNamespace) -> None:
    job = tmp_path / "job"
    write_spec(job, dense_tp_job(job, LLAMA_70B, tp=8))
    ranks = read_rank_job(job)
    assert ranks is not None and ranks.layout == Layout(tp=8) and ranks.layout_source == FROM_SPEC
    result = export_chakra(ranks, H100, tmp_path / "et")
    assert [f.name for f in result.files] == [f"trace.{r}.et" for r in range(8)]
    assert result.missing_ranks == [] and result.bad == {}

    meta, nodes = _read(chakra, tmp_path / "et" / "trace.3.et")
    assert meta.version == "0.0.4"
    assert _attrs(meta)["world_size"] == 8 and _attrs(meta)["rank"] == 3
    names = [n.name for n in nodes]
    # Program order: norms at the layer's start, attention, its all_reduce, the MLP, its
    # all_reduce; then layer 1; then lm_head and the logits' all_gather.
    assert names == [
        "model.layers.0.input_layernorm",
        "model.layers.0.post_attention_layernorm",
        "model.layers.0.self_attn",
        "all_reduce:tp#0",
        "model.layers.0.mlp",
        "all_reduce:tp#1",
        "model.layers.1.input_layernorm",
        "model.layers.1.post_attention_layernorm",
        "model.layers.1.self_attn",
        "all_reduce:tp#2",
        "model.layers.1.mlp",
        "all_reduce:tp#3",
        "lm_head",
        "all_gather:tp#4",
    ]
    assert [n.id for n in nodes] == list(range(len(nodes)))
    assert [list(n.data_deps) for n in nodes] == [[]] + [[i] for i in range(len(nodes) - 1)]

    comm = [n for n in nodes if n.type == chakra.pb.COMM_COLL_NODE]
    assert [_attrs(n)["comm_type"] for n in comm] == [chakra.pb.ALL_REDUCE] * 4 + [
        chakra.pb.ALL_GATHER
    ]
    assert [_attrs(n)["comm_size"] for n in comm] == [ACT] * 4 + [2048 * 16032 * 2]
    assert {_attrs(n)["pg_name"] for n in comm} == {"0"}
    assert comm[0].duration_micros == 145  # 144.489 us, rounded up
    assert _attrs(comm[0])["est_time_us"] == pytest.approx(144.489, rel=1e-5)
    assert comm[0].inputs.shapes == "[[1,2048,8192]]" and comm[0].inputs.types == "bfloat16"

    attn = next(n for n in nodes if n.name == "model.layers.0.self_attn")
    assert attn.type == chakra.pb.COMP_NODE
    # q (8192 -> 1024), k and v (8192 -> 128 each), o (1024 -> 8192) over 2,048 tokens.
    flops = 2 * 2048 * (8192 * 1024 + 2 * 8192 * 128 + 1024 * 8192)
    assert _attrs(attn)["num_ops"] == flops

    def roof(m: int, k: int, n: int) -> float:  # the slower of its FLOPs and its bytes, in us
        return max(2 * m * k * n / 989.5e12, 2 * (m * k + k * n + m * n) / 3.35e12) * 1e6

    # q and o are compute bound (34.72 us each), k and v memory bound (10.80 us each).
    expected = roof(2048, 8192, 1024) + 2 * roof(2048, 8192, 128) + roof(2048, 1024, 8192)
    assert _attrs(attn)["est_time_us"] == pytest.approx(expected)
    assert attn.duration_micros == 92  # 91.05 us, rounded up
    assert _attrs(attn)["is_cpu_op"] is False
    assert json.loads((tmp_path / "et" / "comm_group.json").read_text()) == {"0": list(range(8))}


def test_tp8_pp2_sends_and_receives_between_stages(tmp_path: Path, chakra: SimpleNamespace) -> None:
    job = tmp_path / "job"
    dense_tp_pp_job(job, Dense(layers=4), tp=8, pp=2)
    ranks = read_rank_job(job)  # no spec: the layout from the groups and the rank dirs
    assert ranks is not None and ranks.layout == Layout(tp=8, pp=2)
    assert ranks.layout_source == INFERRED
    export_chakra(ranks, H100, tmp_path / "et")
    _, first = _read(chakra, tmp_path / "et" / "trace.2.et")
    _, second = _read(chakra, tmp_path / "et" / "trace.10.et")
    send = first[-1]
    assert send.type == chakra.pb.COMM_SEND_NODE
    sent = _attrs(send)
    assert (sent["comm_src"], sent["comm_dst"], sent["comm_size"]) == (2, 10, ACT)
    assert _attrs(send)["link"] == "InfiniBand NDR 400G"
    recv = second[0]
    assert recv.type == chakra.pb.COMM_RECV_NODE
    assert (_attrs(recv)["comm_src"], _attrs(recv)["comm_dst"]) == (2, 10)
    # Stage 0 runs layers 0-1, stage 1 layers 2-3 and lm_head.
    assert first[0].name == "model.layers.0.input_layernorm"
    assert second[1].name == "model.layers.2.input_layernorm" and second[-1].name.startswith(
        "all_gather"
    )
    groups = json.loads((tmp_path / "et" / "comm_group.json").read_text())
    tp = [list(range(8)), list(range(8, 16))]
    pp = [[r, r + 8] for r in range(8)]
    assert sorted(groups.values()) == sorted(tp + pp)
    assert groups[_attrs(send)["pg_name"]] == [2, 10]


@pytest.mark.parametrize("known", [False, True])
def test_mixtral_ep8_all_to_all(tmp_path: Path, chakra: SimpleNamespace, known: bool) -> None:
    job = tmp_path / "job"
    moe_ep_job(job, ep=8, known=known)
    ranks = read_rank_job(job)
    assert ranks is not None and ranks.layout == Layout(ep=8)
    result = export_chakra(ranks, H100, tmp_path / "et")
    _, nodes = _read(chakra, tmp_path / "et" / "trace.5.et")
    a2a = [n for n in nodes if n.type == chakra.pb.COMM_COLL_NODE]
    assert [_attrs(n)["comm_type"] for n in a2a] == [chakra.pb.ALL_TO_ALL] * 2
    expert = next(n for n in nodes if n.name == "model.layers.0.block_sparse_moe")
    # The experts run between the dispatch all_to_all and the combine.
    assert nodes.index(a2a[0]) < nodes.index(expert) < nodes.index(a2a[1])
    attrs = _attrs(a2a[0])
    if known:
        assert attrs["comm_size"] == 512 * 8 * 6144 * 2
        assert attrs["assumption"] == "balanced routing" and attrs["comm_size_known"] is True
        assert result.traces[5].unknown_size == 0
    else:
        # Unknown stays unknown: no size is written, and the node says so.
        assert "comm_size" not in attrs and attrs["comm_size_known"] is False
        assert a2a[0].duration_micros == 0 and "est_time_us" not in attrs
        assert result.traces[5].unknown_size == 2


def test_missing_ranks_and_bad_lines_are_reported(tmp_path: Path) -> None:
    job = tmp_path / "job"
    write_spec(job, dense_tp_job(job, LLAMA_70B, tp=4))
    write_spec(job, Layout(tp=8))  # the spec says 8 ranks; 4 dirs were written
    with (job / "rank_1" / "collectives.jsonl").open("a") as fh:
        fh.write('{"seq": 9, "kind": "all_shuffle"}\nnot json\n')
    ranks = read_rank_job(job)
    assert ranks is not None
    result = export_chakra(ranks, H100, tmp_path / "et")
    assert result.missing_ranks == [4, 5, 6, 7]
    assert result.bad == {
        "rank 1 collectives.jsonl: missing_field": 1,
        "rank 1 collectives.jsonl: not_json": 1,
    }
    summary = json.loads((tmp_path / "et" / "chakra_export.json").read_text())
    assert summary["missing_ranks"] == [4, 5, 6, 7] and summary["layout_label"] == "tp8"


def test_a_job_without_rank_dirs_is_not_a_rank_job(tmp_path: Path) -> None:
    (tmp_path / "job" / "rank_x").mkdir(parents=True)
    assert read_rank_job(tmp_path / "job") is None


@pytest.mark.parametrize("spec", [True, False])
def test_role_dirs_stand_for_their_peers(
    tmp_path: Path, chakra: SimpleNamespace, spec: bool
) -> None:
    # The simulation writes rank_0 (stage 0) and rank_8 (stage 1) and lists their tp peers.
    job = tmp_path / "job"
    layout = dense_tp_pp_job(job, Dense(layers=4), tp=8, pp=2)
    assert keep_roles(job, layout, spec=spec) == {0: list(range(8)), 8: list(range(8, 16))}
    ranks = read_rank_job(job)
    assert ranks is not None and sorted(ranks.ranks) == [0, 8]
    assert ranks.layout == layout and ranks.layout_source == (FROM_SPEC if spec else FROM_ROLES)
    assert ranks.missing_ranks == []
    result = export_chakra(ranks, H100, tmp_path / "et")
    assert len(result.files) == 16
    meta, nodes = _read(chakra, tmp_path / "et" / "trace.3.et")
    assert (_attrs(meta)["rank"], _attrs(meta)["role_rank"]) == (3, 0)
    send = nodes[-1]
    assert (_attrs(send)["comm_src"], _attrs(send)["comm_dst"]) == (3, 11)
    groups = json.loads((tmp_path / "et" / "comm_group.json").read_text())
    assert groups[_attrs(send)["pg_name"]] == [3, 11]
    assert groups[_attrs(nodes[3])["pg_name"]] == list(range(8))  # rank 3's tp all_reduce
    _, peer = _read(chakra, tmp_path / "et" / "trace.11.et")
    assert (_attrs(peer[0])["comm_src"], _attrs(peer[0])["comm_dst"]) == (3, 11)
