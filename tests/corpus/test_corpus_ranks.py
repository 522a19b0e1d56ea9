"""The corpus and backendbench.parquet carry the rank layout: a parallel job's rank dirs are
model labels of their own, with their layout, rank and degrees, so "which GEMM shapes does
the fleet run at TP 8" is one query."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from kerneltracer.corpus.backendbench import write_backendbench
from kerneltracer.corpus.build import build_corpus
from kerneltracer.corpus.export import SUMMARY, write_corpus
from kerneltracer.corpus.schema import PARQUET
from tests.corpus.bb_reader import registry
from tests.coverage.synth import dispatch_files, make_job
from tests.export.synth_ranks import Dense, dense_rows, dense_tp_pp_job, keep_roles, moe_ep_job

LLAMA = "meta-llama/Llama-3.3-70B-Instruct"


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    dense = make_job(run, LLAMA, "torch_dispatch", dispatch_files({}))
    keep_roles(dense, dense_tp_pp_job(dense, Dense(layers=4), tp=8, pp=2))
    moe = make_job(run, "mistralai/Mixtral-8x22B", "torch_dispatch", dispatch_files({}))
    moe_ep_job(moe, ep=8, known=True)
    # The same model on one device: its GEMMs are the unsharded ones.
    files = dispatch_files({"aten.mm.default": (1, 1)})
    rows = dense_rows(Dense(layers=1), tp=1, layers=[0])
    files["dispatch_ops.jsonl"] = "".join(json.dumps(r) + "\n" for r in rows)
    make_job(run, LLAMA, "torch_dispatch", files, slug="llama-single")
    return run


def _shape(inputs_json: str) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(t["shape"]) for t in json.loads(inputs_json))


def test_gemm_shapes_at_tp8_are_one_query(tmp_path: Path) -> None:
    run = _run(tmp_path)
    corpus = build_corpus(run)
    assert corpus.problems == []
    stage1 = f"{LLAMA} [tp8.pp2 rank 8]"
    assert f"{LLAMA} [tp8.pp2 rank 0]" in corpus.models and stage1 in corpus.models
    assert LLAMA in corpus.models  # the single-device job keeps its plain label
    assert corpus.placements[stage1].ranks == tuple(range(8, 16))
    assert corpus.distinct_models == (LLAMA, "mistralai/Mixtral-8x22B")
    write_corpus(corpus, tmp_path / "out")
    df = pq.read_table(tmp_path / "out" / PARQUET).to_pandas()
    at_tp8 = df[(df.op == "aten.mm.default") & df.tp.apply(lambda t: 8 in t)]
    assert {_shape(s) for s in at_tp8.inputs_json} == {
        ((2048, 8192), (8192, 1024)),  # q_proj: 64 heads / 8
        ((2048, 8192), (8192, 128)),  # k_proj, v_proj: 8 KV heads / 8
        ((2048, 1024), (1024, 8192)),  # o_proj
        ((2048, 8192), (8192, 3584)),  # gate, up: 28,672 / 8
        ((2048, 3584), (3584, 8192)),  # down
        ((2048, 8192), (8192, 16032)),  # lm_head: 128,256 / 8, on the last stage only
    }
    single = df[df.layouts.apply(lambda ls: "single" in ls) & (df.op == "aten.mm.default")]
    assert ((2048, 8192), (8192, 8192)) in {_shape(s) for s in single.inputs_json}
    row = df[df.inputs_json.str.contains("16032")].iloc[0]
    assert list(row.models) == [stage1] and list(row.ranks) == [8]
    assert (list(row.tp), list(row.pp), list(row.layouts)) == ([8], [2], ["tp8.pp2"])
    summary = json.loads((tmp_path / "out" / SUMMARY).read_text())
    assert summary["placements"][stage1]["layout"] == "tp8.pp2"


def test_backendbench_rows_name_their_layouts(tmp_path: Path) -> None:
    corpus = build_corpus(_run(tmp_path))
    reg = registry("aten.mm.default", "aten.mul.Tensor")
    export = write_backendbench(corpus.signatures, tmp_path, reg, corpus.placements)
    rows = pq.read_table(export.path).to_pylist()
    layouts = {r["args"]: r["in_layouts"] for r in rows if r["op_name"] == "aten.mm.default"}
    # o_proj at TP 8 runs only there; q_proj at TP 8 is k / v_proj on one device (8 KV heads).
    assert layouts["((T([2048, 1024], bf16), T([1024, 8192], bf16)), {})"] == ["tp8.pp2"]
    assert layouts["((T([2048, 8192], bf16), T([8192, 1024], bf16)), {})"] == [
        "single",
        "tp8.pp2",
    ]
    assert layouts["((T([2048, 8192], bf16), T([8192, 8192], bf16)), {})"] == ["single"]
    # Mixtral's experts at EP 8 under balanced routing: 512 tokens each.
    assert layouts["((T([512, 6144], bf16), T([6144, 16384], bf16)), {})"] == ["ep8"]
