"""The cost formulas against hand-computed FLOPs and bytes (JSON signature form, no torch)."""

from __future__ import annotations

from typing import Any

import pytest

from kerneltracer.costmodel import OpCost, estimate, is_known


def T(shape: list[Any], dtype: str = "bfloat16", **extra: Any) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "device": "cuda", **extra}


def est(op: str, inputs: list[Any], outputs: list[Any] | None, **kwargs: Any) -> OpCost:
    cost = estimate(op, inputs, kwargs, outputs)
    assert cost is not None, op
    return cost


def test_mm_is_2mnk_and_moves_each_operand_once() -> None:
    m, k, n = 128, 4096, 11008
    cost = est("aten.mm.default", [T([m, k]), T([k, n])], [T([m, n])])
    assert cost.flops == 2 * m * n * k
    assert cost.bytes_read == (m * k + k * n) * 2
    assert cost.bytes_written == m * n * 2
    assert (cost.category, cost.dtype) == ("matmul", "bfloat16")


def test_addmm_leaves_the_bias_add_out_like_flop_counter() -> None:
    cost = est("aten.addmm.default", [T([64]), T([8, 32]), T([32, 64])], [T([8, 64])])
    assert cost.flops == 2 * 8 * 64 * 32
    assert cost.bytes_read == (64 + 8 * 32 + 32 * 64) * 2


def test_batched_matmuls() -> None:
    b, m, k, n = 12, 16, 64, 16
    bmm = est("aten.bmm.default", [T([b, m, k]), T([b, k, n])], [T([b, m, n])])
    assert bmm.flops == 2 * b * m * n * k
    badd = est("aten.baddbmm.default", [T([b, m, n]), T([b, m, k]), T([b, k, n])], [T([b, m, n])])
    assert badd.flops == bmm.flops
    linear = est("aten.linear.default", [T([2, 7, k]), T([n, k])], [T([2, 7, n])])
    assert linear.flops == 2 * 14 * n * k
    matmul = est("aten.matmul.default", [T([3, 1, m, k]), T([5, k, n])], [T([3, 5, m, n])])
    assert matmul.flops == 2 * 15 * m * n * k


def test_grouped_mm_counts_every_row_once() -> None:
    tokens, k, n, experts = 96, 64, 32, 8
    a, b, offs = T([tokens, k]), T([experts, k, n]), T([experts], "int32")
    cost = est("aten._grouped_mm.default", [a, b, offs], [T([tokens, n])])
    assert cost.flops == 2 * tokens * n * k


def test_convolution_forward_with_groups_and_stride() -> None:
    x, w = T([2, 4, 16, 16], "float32"), T([8, 2, 3, 3], "float32")  # groups=2
    args = [x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 2]
    recorded = est("aten.convolution.default", args, [T([2, 8, 8, 8], "float32")])
    assert recorded.flops == 2 * 2 * 8 * (8 * 8) * 2 * 9
    inferred = est("aten.convolution.default", args, None)  # an operator_inp log: no outputs
    assert inferred.flops == recorded.flops
    assert recorded.category == "conv"


def test_convolution_backward_is_one_forward_per_gradient() -> None:
    x, w, g = T([2, 4, 8, 8], "float32"), T([6, 4, 3, 3], "float32"), T([2, 6, 8, 8], "float32")
    fwd = 2 * 2 * 6 * 64 * 4 * 9
    both = [g, x, w, [6], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]]
    outs = [T([2, 4, 8, 8], "float32"), T([6, 4, 3, 3], "float32"), T([6], "float32")]
    assert est("aten.convolution_backward.default", both, outs).flops == 2 * fwd
    input_only = [*both[:-1], [True, False, False]]
    assert est("aten.convolution_backward.default", input_only, outs[:1]).flops == fwd


def test_sdpa_is_4bhlld_and_backward_is_2_5x() -> None:
    b, h, lq, lk, d = 2, 32, 2048, 2048, 128
    q, kv = T([b, h, lq, d]), T([b, 8, lk, d])  # GQA: 8 KV heads, counted per query head
    fwd = est(
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
        [q, kv, kv, 0.0, True],
        [T([b, h, lq, d]), T([b, h, lq], "float32")],
    )
    assert fwd.flops == 4 * b * h * lq * lk * d
    assert fwd.category == "attention"
    bwd = est(
        "aten._scaled_dot_product_flash_attention_backward.default",
        [T([b, h, lq, d]), q, kv, kv, T([b, h, lq, d]), T([b, h, lq], "float32")],
        [q, kv, kv],
    )
    assert bwd.flops == fwd.flops * 5 // 2


def test_flash_attention_forward_reads_b_l_h_d_layout() -> None:
    b, lq, h, d = 2, 512, 16, 64
    q = T([b, lq, h, d])
    cost = est(
        "aten._flash_attention_forward.default",
        [q, q, q, None, None, lq, lq, 0.0, True, False],
        [q, T([b, h, lq], "float32")],
    )
    assert cost.flops == 4 * b * h * lq * lq * d
    # a packed batch of 4 sequences: equal lengths assumed, 4 * (total/4)^2
    packed = T([4 * 100, h, d])
    varlen = est(
        "aten._flash_attention_forward.default",
        [packed, packed, packed, T([5], "int32"), T([5], "int32"), 100, 100, 0.0, False, False],
        [packed],
    )
    assert varlen.flops == 4 * 4 * h * 100 * 100 * d


def test_elementwise_reduction_and_norm_conventions() -> None:
    x = T([4, 128, 768], "float32")
    n = 4 * 128 * 768
    add = est("aten.add.Tensor", [x, T([768], "float32")], [x])
    assert (add.flops, add.bytes_read, add.bytes_written) == (n, (n + 768) * 4, n * 4)
    assert est("aten.add_.Tensor", [x, x], [x]).flops == n  # in-place: same formula
    inferred = est("aten.mul.Tensor", [x, T([768], "float32")], None)
    assert (inferred.flops, inferred.bytes_written) == (n, n * 4)
    assert est("aten.sum.dim_IntList", [x, [-1]], [T([4, 128], "float32")]).flops == n
    assert est("aten.amax.default", [x, [-1], True], [T([4, 128, 1], "float32")]).flops == n
    assert est("aten.max.other", [x, x], [x]).category == "elementwise"
    assert est("aten.max.dim", [x, 1], [T([4, 768], "float32")] * 2).category == "reduction"
    ln = est("aten.native_layer_norm.default", [x, [768], T([768], "float32"), None, 1e-5], [x])
    assert (ln.flops, ln.category) == (5 * n, "norm")
    no_affine = est("aten.native_layer_norm.default", [x, [768], None, None, 1e-5], [x])
    assert no_affine.flops == 4 * n
    rms = est("aten._fused_rms_norm.default", [x, [768], T([768], "float32"), 1e-6], [x])
    assert rms.flops == 4 * n


def test_embedding_reads_gathered_rows_not_the_table() -> None:
    table, ids = T([128256, 4096]), T([1, 4096], "int64", min=0, max=128000)
    cost = est("aten.embedding.default", [table, ids], [T([1, 4096, 4096])])
    assert cost.flops == 0
    assert cost.bytes_read == 4096 * 4096 * 2 + 4096 * 8
    assert cost.bytes_written == 4096 * 4096 * 2
    gather = est("aten.index.Tensor", [table, [ids]], [T([1, 4096, 4096])])
    assert gather.bytes_read == cost.bytes_read and gather.category == "memory"


def test_views_and_metadata_cost_nothing_but_are_known() -> None:
    x = T([4, 8])
    for op in (
        "aten.view.default",
        "aten.t.default",
        "aten.transpose.int",
        "aten.expand.default",
        "aten.slice.Tensor",
        "aten._unsafe_view.default",
        "aten.as_strided.default",
        "aten.detach.default",
        "prim.device.default",
    ):
        cost = est(op, [x, [8, 4]], [x])
        assert (cost.flops, cost.bytes, cost.category) == (0, 0, "view"), op
    assert est("aten.empty.memory_format", [[4, 8]], [x]).bytes == 0
    zeros = est("aten.zeros.default", [[4, 8]], [x])
    assert (zeros.bytes_read, zeros.bytes_written) == (0, 64)


def test_unknown_op_and_unreadable_call_give_none() -> None:
    x = T([4, 8])
    assert estimate("aten.no_such_op.default", [x], {}, [x]) is None
    assert not is_known("aten.no_such_op.default")
    assert not is_known("mylib.custom_mm.default")  # other namespaces: not ours to guess
    symbolic = T(["s0", 8])
    assert estimate("aten.mm.default", [symbolic, T([8, 8])], {}, [symbolic]) is None
    assert is_known("aten.mm.default")
    assert estimate("aten.mm.default", [T([4, 8]), T([9, 8])], {}, [x]) is None  # K mismatch
    assert estimate("aten.add.Tensor", [T([4], "no_such_dtype")], {}, [x]) is None


@pytest.mark.parametrize("op", ["aten.copy_.default", "aten.copy.default"])
def test_copy_reads_the_source_and_writes_the_destination(op: str) -> None:
    dst, src = T([16, 16], "float32"), T([16, 16])
    cost = est(op, [dst, src], [dst])
    assert (cost.bytes_read, cost.bytes_written, cost.flops) == (512, 1024, 0)


def test_gemm_like_reads_either_weight_layout_and_refuses_what_does_not_multiply() -> None:
    from kerneltracer.costmodel import estimate_gemm_like

    def t(*shape: int) -> dict[str, object]:
        return {"shape": list(shape), "dtype": "bfloat16"}

    linear_layout = estimate_gemm_like(
        "vllm.rocm_unquantized_gemm", [t(2, 3, 64), t(96, 64)], {}, None
    )
    mm_layout = estimate_gemm_like("x.y", [t(6, 64), t(64, 96)], {}, None)
    assert linear_layout is not None and mm_layout is not None
    assert linear_layout.flops == mm_layout.flops == 2 * 6 * 96 * 64
    assert linear_layout.bytes_written == 6 * 96 * 2  # the output, bf16
    # a leading output tensor (cutlass_scaled_mm(out, a, b, ...)): out (M, N) x b (K, N)
    # read as linear is M x N x K too
    scaled = estimate_gemm_like("x.y", [t(6, 96), t(6, 64), t(64, 96)], {}, None)
    assert scaled is not None and scaled.flops == 2 * 6 * 96 * 64
    assert estimate_gemm_like("x.y", [t(6, 64), t(32, 96)], {}, None) is None
    assert estimate_gemm_like("x.y", [t(64)], {}, None) is None
