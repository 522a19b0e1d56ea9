"""The shape expectations the full-size e2e test checks traces against, on the published
configs themselves (raw config.json: these families name every size they use)."""

from __future__ import annotations

import json
from typing import Any

from tests.fakeweights.shapes import Shape, expected, missing, weight_operand
from tests.helpers import FIXTURES


def _config(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "hub_configs" / name / "config.json").read_text()))


def test_deepseek_v3_mla_and_experts_from_its_config() -> None:
    exp = expected(_config("deepseek-ai--DeepSeek-V3"))
    # 128 heads × (128 nope + 64 rope) for Q; the KV latent of 512 plus the shared 64-dim rope
    # key; 128 heads × (128 nope + 128 v) out of the latent.
    assert exp.matmul["q_a_proj"] == (7168, 1536)
    assert exp.matmul["q_b_proj"] == (1536, 128 * 192)
    assert exp.matmul["kv_a_proj_with_mqa"] == (7168, 576)
    assert exp.matmul["kv_b_proj"] == (512, 128 * 256)
    assert exp.matmul["o_proj"] == (128 * 128, 7168)
    assert exp.matmul["router"] == (7168, 256)
    assert exp.matmul["shared_experts.gate_proj"] == (7168, 2048)
    assert exp.matmul["dense_down_proj"] == (18432, 7168)  # the first 3 layers are dense
    assert exp.grouped == {"experts.gate_up": (256, 7168, 4096), "experts.down": (256, 2048, 7168)}
    assert (exp.q_heads, exp.qk_head_dim) == (128, 192)


def test_fused_and_gqa_layouts() -> None:
    phi = expected(_config("microsoft--Phi-3-medium-4k-instruct"))
    assert phi.matmul["qkv_proj"] == (5120, (40 + 2 * 10) * 128)
    assert phi.matmul["gate_up_proj"] == (5120, 2 * 17920)
    assert "q_proj" not in phi.matmul
    mixtral = expected(_config("mistralai--Mixtral-8x22B-v0.1"))
    assert mixtral.matmul["k_proj"] == (6144, 8 * 128)
    assert mixtral.grouped["experts.gate_up"] == (8, 6144, 2 * 16384)
    assert "gate_proj" not in mixtral.matmul  # every layer is MoE
    assert mixtral.kv_heads == frozenset({8, 48})


def _trace_of(exp: Any, seq: int = 16) -> list[tuple[str, list[Shape]]]:
    """What a faithful trace shows: every weight multiplied, sdpa with the config's heads."""
    calls: list[tuple[str, list[Shape]]] = [
        ("aten.mm.default", [(seq, w[0]), w]) for w in exp.matmul.values()
    ]
    calls += [("aten._grouped_mm.default", [(seq, w[1]), w, (w[0],)]) for w in exp.grouped.values()]
    kv = min(exp.kv_heads)
    calls.append(
        (
            "aten._scaled_dot_product_flash_attention_for_cpu.default",
            [
                (1, exp.q_heads, seq, exp.qk_head_dim),
                (1, kv, seq, exp.qk_head_dim),
                (1, kv, seq, exp.qk_head_dim),
            ],
        )
    )
    return calls


def test_missing_names_each_absent_weight_and_wrong_attention() -> None:
    exp = expected(_config("meta-llama--Llama-3.1-8B"))
    trace = _trace_of(exp)
    assert missing(exp, trace) == []

    without_kv = [c for c in trace if c[1][1:2] != [(4096, 1024)]]
    assert missing(exp, without_kv) == [
        "k_proj (4096, 1024) never multiplied",
        "v_proj (4096, 1024) never multiplied",
    ]

    wrong_heads = [
        c
        if "attention" not in c[0]
        else (c[0], [(1, 32, 16, 128), (1, 4, 16, 128), (1, 4, 16, 128)])
        for c in trace
    ]
    assert missing(exp, wrong_heads) == [
        "no attention with 32 query heads, key heads in [8, 32], head dim 128"
    ]


def test_math_attention_counts_for_unequal_head_dims() -> None:
    exp = expected(_config("deepseek-ai--DeepSeek-V3"))
    trace = [c for c in _trace_of(exp) if "attention" not in c[0]]
    assert missing(exp, trace)[-1].startswith("no attention with 128 query heads")
    # sdpa with qk dim 192 and v dim 128 runs as per-head bmm on CPU.
    trace.append(("aten.bmm.default", [(128, 16, 192), (128, 192, 16)]))
    assert missing(exp, trace) == []


def test_weight_operand_of_each_matmul_form() -> None:
    assert weight_operand("aten.mm.default", [(4, 8), (8, 3)]) == (8, 3)
    assert weight_operand("aten.addmm.default", [(3,), (4, 8), (8, 3)]) == (8, 3)
    assert weight_operand("aten._grouped_mm.default", [(4, 8), (2, 8, 3), (2,)]) == (2, 8, 3)
    assert weight_operand("aten.add.Tensor", [(4, 8), (4, 8)]) is None
