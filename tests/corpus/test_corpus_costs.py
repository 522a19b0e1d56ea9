"""The corpus's estimated costs on synthetic jobs: Parquet columns, ranked CSVs, unknown
ops, module folding, and reading schema-1 corpus files."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kerneltracer.corpus.build import build_corpus
from kerneltracer.corpus.export import write_corpus
from kerneltracer.corpus.schema import V1_COLUMNS, arrow_schema, read_signatures
from kerneltracer.costmodel import load_devices
from tests.coverage.synth import make_job

H100 = load_devices().get("H100")
M, K, N = 64, 4096, 1024


def _t(shape: list[int], dtype: str = "bfloat16") -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "device": "cuda"}


def _row(op: str, count: int, inputs: list[Any], outputs: list[Any], modules: Any) -> str:
    return json.dumps(
        {
            "op": op,
            "phase": "forward",
            "count": count,
            "inputs": inputs,
            "kwargs": {},
            "outputs": outputs,
            "modules": modules,
        }
    )


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def corpus_out(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    mm = _row(
        "aten.mm.default",
        6,
        [_t([M, K]), _t([K, N])],
        [_t([M, N])],
        {"model.layers.0.mlp.up": 2, "model.layers.1.mlp.up": 2},  # 2 calls unrecorded
    )
    add = _row("aten.add.Tensor", 4, [_t([M, N]), _t([M, N])], [_t([M, N])], {"": 4})
    odd = _row("aten.no_such_op.default", 3, [_t([M, N])], [_t([M, N])], {"model.x": 3})
    view = _row("aten.view.default", 9, [_t([M, N]), [N, M]], [_t([N, M])], {"model.x": 9})
    make_job(run, "org/a", "torch_dispatch", {"dispatch_ops.jsonl": "\n".join([mm, add, odd])})
    make_job(run, "org/b", "torch_dispatch", {"dispatch_ops.jsonl": "\n".join([mm, view])})
    out = tmp_path / "corpus"
    write_corpus(build_corpus(run), out, H100)
    return out


def _lower_bound_us(flops: int, nbytes: int, peak: float) -> float:
    return max(flops / peak, nbytes / H100.bandwidth) * 1e6


def test_parquet_rows_carry_per_call_estimates(corpus_out: Path) -> None:
    rows = {r["op"]: r for r in pq.read_table(corpus_out / "corpus.parquet").to_pylist()}
    mm = rows["aten.mm.default"]
    assert (mm["est_flops"], mm["cost_category"]) == (2 * M * N * K, "matmul")
    assert mm["est_bytes"] == (M * K + K * N + M * N) * 2
    assert json.loads(mm["module_calls_json"])["org/a"] == {
        "model.layers.0.mlp.up": 2,
        "model.layers.1.mlp.up": 2,
    }
    odd = rows["aten.no_such_op.default"]
    assert (odd["est_flops"], odd["est_bytes"], odd["cost_category"]) == (None, None, None)
    assert rows["aten.view.default"]["est_bytes"] == 0


def test_costs_by_op_are_ranked_per_model_with_shares(corpus_out: Path) -> None:
    rows = _csv(corpus_out / "costs_by_op.csv")
    a = [r for r in rows if r["model"] == "org/a"]
    assert [r["op"] for r in a] == ["aten.mm.default", "aten.add.Tensor", "aten.no_such_op.default"]
    mm, add, odd = a
    per_call = 2 * M * N * K
    assert int(mm["calls"]) == 6 and int(mm["est_flops"]) == 6 * per_call
    mm_bytes = (M * K + K * N + M * N) * 2
    expected = 6 * _lower_bound_us(per_call, mm_bytes, H100.peak["bf16"])
    assert float(mm["est_time_lb_us"]) == pytest.approx(expected, abs=1e-3)
    assert mm["est_bound"] == "memory" and mm["device"] == "H100"
    add_us = 4 * _lower_bound_us(M * N, 3 * M * N * 2, H100.vector["fp32"])
    assert float(add["est_time_lb_us"]) == pytest.approx(add_us, abs=1e-3)
    assert float(mm["est_share"]) == pytest.approx(expected / (expected + add_us), abs=1e-5)
    # nothing estimated: empty figures, not zeros
    assert (odd["unknown_calls"], odd["est_flops"], odd["est_share"]) == ("3", "", "")


def test_modules_fold_layer_indices_and_keep_unrecorded_calls(corpus_out: Path) -> None:
    rows = {(r["model"], r["module"]): r for r in _csv(corpus_out / "costs_by_module.csv")}
    assert rows[("org/a", "model.layers.*.mlp.up")]["calls"] == "4"
    assert rows[("org/a", "(paths not recorded)")]["calls"] == "2"
    assert rows[("org/a", "(no module)")]["calls"] == "4"  # the add ran outside modules
    assert sum(int(r["calls"]) for (m, _), r in rows.items() if m == "org/a") == 13


def test_model_totals_and_unknown_ops(corpus_out: Path) -> None:
    models = _csv(corpus_out / "costs_by_model.csv")
    assert [m["model"] for m in models] == ["org/a", "org/b"]  # most estimated time first
    a = models[0]
    assert (a["calls"], a["unknown_calls"], a["unknown_ops"]) == ("13", "3", "1")
    assert int(a["est_flops"]) == 6 * 2 * M * N * K + 4 * M * N
    unknown = _csv(corpus_out / "unknown_ops.csv")
    assert unknown == [
        {
            "op": "aten.no_such_op.default",
            "calls": "3",
            "signatures": "1",
            "n_models": "1",
            "reason": "no formula",
            "models": "org/a",
        }
    ]
    summary = json.loads((corpus_out / "corpus_summary.json").read_text())
    assert summary["est_costs"]["device"] == "H100"
    assert summary["est_costs"]["top_ops"][0]["op"] == "aten.mm.default"


def test_schema_2_only_adds_columns_and_reads_schema_1_files(
    corpus_out: Path, tmp_path: Path
) -> None:
    schema = arrow_schema()
    v1 = [schema.field(name) for name in V1_COLUMNS]
    assert schema.names[: len(V1_COLUMNS)] == list(V1_COLUMNS)  # old readers find theirs
    table = pq.read_table(corpus_out / "corpus.parquet")
    old = pa.Table.from_arrays(
        [table.column(f.name) for f in v1],
        schema=pa.schema(v1, metadata={"kerneltracer.corpus.schema_version": "1"}),
    )
    pq.write_table(old, tmp_path / "corpus.parquet")
    sigs = read_signatures(tmp_path)
    assert len(sigs) == table.num_rows
    assert all(s.model_modules == {} for s in sigs)
    new = read_signatures(corpus_out)
    mm = next(s for s in new if s.op == "aten.mm.default")
    assert mm.model_modules["org/b"]["model.layers.1.mlp.up"] == 2


def test_readiness_ranks_by_estimated_time_when_nothing_was_replayed() -> None:
    from kerneltracer.core.signature import signature_id
    from kerneltracer.corpus.costs import est_time_note, est_time_us
    from kerneltracer.corpus.model import Signature
    from kerneltracer.corpus.readiness import ESTIMATE, assess
    from kerneltracer.corpus.support import Support

    def sig(op: str, inputs: list[Any], out: list[int], calls: dict[str, int]) -> Signature:
        return Signature(signature_id(op, inputs, {}), op, inputs, {}, [_t(out)], {}, calls)

    big = sig("aten.mm.default", [_t([M, K]), _t([K, N])], [M, N], {"m1": 1})
    small = sig("aten.add.Tensor", [_t([8]), _t([8])], [8], {"m2": 50})  # more calls
    times = est_time_us([big, small], H100)
    r = assess(
        [big, small], Support("none", lambda op: False), None, times, ESTIMATE, est_time_note(H100)
    )
    assert [o.op for o in r.ranked] == ["aten.mm.default", "aten.add.Tensor"]
    mm_bytes = (M * K + K * N + M * N) * 2
    expected = _lower_bound_us(2 * M * N * K, mm_bytes, H100.peak["bf16"])
    assert r.ranked[0].est_time_us == pytest.approx(expected)
    assert r.time_weight == "estimate" and "H100" in r.time_note


def test_merged_paths_past_32_fold_indices_and_keep_every_call(tmp_path: Path) -> None:
    """Two models whose rows of one signature hold 20 layer paths each: per model the paths
    stay as recorded, the signature's merged 40 fold their layer indices; no call is lost
    (issue 38; paths past 32 were dropped)."""
    run = tmp_path / "run"
    mm = [_t([M, K]), _t([K, N])], [_t([M, N])]
    for model, layers in (("org/a", range(20)), ("org/b", range(20, 40))):
        paths = {f"model.layers.{i}.mlp.down_proj": 1 for i in layers}
        row = _row("aten.mm.default", 20, *mm, paths)
        make_job(run, model, "torch_dispatch", {"dispatch_ops.jsonl": row})
    (sig,) = build_corpus(run).signatures
    assert sig.modules == {"model.layers.*.mlp.down_proj": 40}
    b_paths = {f"model.layers.{i}.mlp.down_proj": 1 for i in range(20, 40)}
    assert sig.model_modules["org/b"] == b_paths
