"""Boolean-mask ops replay with the recorded output shapes: torch_dispatch records the count
of true values of bool tensors, the corpus and operator_inp logs carry it, replay rebuilds
masks with exactly that many."""

from __future__ import annotations

from typing import Any

import pytest

from kerneltracer.core.signature import merge_ranges, signature_id
from kerneltracer.corpus.operator_inp import Entry, format_log, parse_log

MASK_OPS = {
    "aten.index.Tensor",
    "aten.masked_select.default",
    "aten.masked_scatter.default",
    "aten.masked_scatter_backward.default",
    "aten.nonzero.default",
}


@pytest.fixture(scope="module")
def mask_rows() -> list[dict[str, Any]]:
    import torch

    from kerneltracer.worker.tracers._dispatch_recorder import DispatchRecorder, rows_of

    gen = torch.Generator().manual_seed(3)
    x = torch.randn(6, 5, requires_grad=True)
    # 7 of 30 true: a random mask of this shape has another count almost surely.
    mask = torch.zeros(30, dtype=torch.bool)
    mask[torch.randperm(30, generator=gen)[:7]] = True
    mask = mask.reshape(6, 5)
    rec = DispatchRecorder()
    with rec:
        picked = x[mask]
        torch.masked_select(x, mask)
        torch.nonzero(mask)
        source = torch.randn(30, requires_grad=True)
        scattered = x.masked_scatter(mask, source)
        (picked.sum() + scattered.sum()).backward()
        # A second call with another count: the first one's (matching its outputs) is kept.
        x.detach()[~mask]
    return rows_of(rec.table)


def _bools(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict) and value.get("dtype") == "bool":
        return [value]
    if isinstance(value, list):
        return [b for v in value for b in _bools(v)]
    return []


def test_bool_inputs_carry_their_true_count(mask_rows: list[dict[str, Any]]) -> None:
    seen = {r["op"] for r in mask_rows if r["op"] in MASK_OPS}
    assert seen == MASK_OPS
    for row in mask_rows:
        for mask in _bools(row["inputs"]):
            if mask["shape"] == [6, 5]:
                # ~mask (23 true) is its own signature only by its count, which identity
                # leaves out: both calls of x[...] share one row, with the first count.
                assert mask["true"] == 7, row["op"]


def test_true_count_survives_the_corpus_and_the_log(mask_rows: list[dict[str, Any]]) -> None:
    row = next(r for r in mask_rows if r["op"] == "aten.masked_select.default")
    other = [dict(row["inputs"][0]), {**row["inputs"][1], "true": 12}]
    # Same signature whatever the count; merging keeps the first (its outputs are kept).
    assert signature_id(row["op"], row["inputs"], {}) == signature_id(row["op"], other, {})
    assert merge_ranges(row["inputs"], other)[1]["true"] == 7
    text = format_log([(row["op"], [Entry(1, row["inputs"], {})])])
    assert "true=7" in text
    parsed = parse_log(text)
    assert parsed.blocks[0][1][0].args[1]["true"] == 7
    assert format_log(parsed.blocks) == text


def test_mask_ops_replay_with_the_recorded_output_shapes(
    mask_rows: list[dict[str, Any]],
) -> None:
    import torch

    from kerneltracer.worker.replay.main import replay_one

    results = {}
    for row in mask_rows:
        if row["op"] not in MASK_OPS:
            continue
        item = {
            "sig_id": row["op"],
            "op": row["op"],
            "inputs": row["inputs"],
            "kwargs": row["kwargs"],
            "outputs": row["outputs"],
        }
        results[row["op"]] = replay_one(item, torch.device("cpu"), 1)
    assert {op: r["status"] for op, r in results.items()} == dict.fromkeys(MASK_OPS, "ok")
    assert results["aten.masked_select.default"]["got"][0][0] == [7]


def test_strided_masks_keep_their_count() -> None:
    import torch

    from kerneltracer.worker.replay.tensors import build_tensor

    gen = torch.Generator().manual_seed(0)
    spec = {"shape": [4, 6], "dtype": "bool", "device": "cpu", "stride": [1, 4], "true": 5}
    mask = build_tensor(spec, torch.device("cpu"), gen)
    assert list(mask.stride()) == [1, 4] and int(mask.sum()) == 5


@pytest.mark.parametrize("call", ["consecutive", "sorted"])
def test_unique_ops_replay_with_the_recorded_count_of_values(call: str) -> None:
    """Qwen2.5-VL's window attention deduplicates its cu_seqlens (51 ints in 0..512, 33
    distinct): random ints in that range have ~50, so the output size must come from the
    recorded output, not the range."""
    import torch

    from kerneltracer.worker.replay.main import replay_one
    from kerneltracer.worker.tracers._dispatch_recorder import DispatchRecorder, rows_of

    steps = torch.tensor([0, 16, 16, 16, 32, 48, 48, 64, 64, 64, 64, 80], dtype=torch.int32)
    rec = DispatchRecorder()
    with rec:
        if call == "consecutive":
            torch.unique_consecutive(steps)
        else:
            torch.unique(steps)
    rows = [r for r in rows_of(rec.table) if "unique" in r["op"]]
    assert rows
    for row in rows:
        item = {k: row[k] for k in ("op", "inputs", "kwargs", "outputs")}
        result = replay_one({**item, "sig_id": row["op"]}, torch.device("cpu"), 1)
        assert result["status"] == "ok", result
        assert result["got"][0][0] == [6]
