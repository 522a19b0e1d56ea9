"""The cost model on what torch.profiler records (``Input Dims`` / ``Input type`` /
``Concrete Inputs``), against hand-computed FLOPs and bytes."""

from __future__ import annotations

from typing import Any

import pytest

from kerneltracer.costmodel import OpCost, estimate
from kerneltracer.costmodel.profiler_args import (
    dtype_name,
    signature_inputs,
    signature_outputs,
)

BF16 = "c10::BFloat16"


def cost(op: str, dims: list[Any], types: list[str], concrete: Any = None) -> OpCost | None:
    inputs = signature_inputs(dims, types, concrete)
    assert inputs is not None
    ns, _, name = op.partition("::")
    return estimate(f"{ns}.{name}", inputs, {}, signature_outputs(op, inputs))


def test_scalar_types_map_to_torch_dtypes_and_non_tensors_to_values() -> None:
    assert dtype_name("c10::Half") == "float16" and dtype_name("long int") == "int64"
    assert dtype_name("Scalar") is None
    got = signature_inputs(
        [[2, 3], [], [], [[4], [5]]],
        ["float", "Scalar", "", "TensorList"],
        ["", "2", "[1, 1]", ""],
    )
    assert got == [
        {"shape": [2, 3], "dtype": "float32"},
        2,
        [1, 1],
        [{"shape": [4], "dtype": "unknown"}, {"shape": [5], "dtype": "unknown"}],
    ]
    assert signature_inputs([[1]], ["float", "float"]) is None  # not a recording
    assert signature_inputs([[]], ["Scalar"], ["__import__('os')"]) == [None]  # never evaluated


def test_matmuls_from_recorded_shapes() -> None:
    m, k, n = 16, 4096, 11008
    mm = cost("aten::mm", [[m, k], [k, n]], [BF16, BF16])
    assert mm is not None and mm.flops == 2 * m * n * k
    # no output recorded: M x N in the inputs' dtype
    assert (mm.bytes_read, mm.bytes_written) == ((m * k + k * n) * 2, m * n * 2)
    b = 12
    bmm = cost("aten::bmm", [[b, m, k], [b, k, n]], [BF16, BF16])
    assert bmm is not None and bmm.flops == 2 * b * m * n * k
    lin = cost("aten::linear", [[4, m, k], [n, k], [n]], [BF16, BF16, BF16])
    assert lin is not None and lin.flops == 2 * 4 * m * n * k


def test_convolution_reads_stride_padding_dilation_from_concrete_inputs() -> None:
    # x [8, 64, 56, 56], w [128, 64, 3, 3], stride 2, padding 1 -> out 28 x 28
    dims = [[8, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], [], [], []]
    # as Kineto types them: non-tensor numbers "Scalar", int lists "ScalarList"
    types = ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "", ""]
    types[7:] = ["ScalarList", "Scalar"]
    concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    conv = cost("aten::convolution", dims, types, concrete)
    assert conv is not None
    assert conv.flops == 2 * 8 * 128 * 28 * 28 * 64 * 3 * 3
    # without the values of stride/padding the output size is unknown: no estimate
    assert cost("aten::convolution", dims, types) is None


def test_attention_forward_and_backward() -> None:
    b, h, lq, lk, d = 2, 16, 1024, 1024, 128
    q = [b, h, lq, d]
    kv = [b, h, lk, d]
    fwd = cost("aten::_scaled_dot_product_flash_attention", [q, kv, kv], [BF16] * 3)
    assert fwd is not None and fwd.flops == 4 * b * h * lq * lk * d
    assert fwd.category == "attention"
    bwd_dims = [q, q, kv, kv, q, [b, h, lq]]
    bwd = cost(
        "aten::_scaled_dot_product_flash_attention_backward",
        bwd_dims,
        [BF16, BF16, BF16, BF16, BF16, "float"],
    )
    assert bwd is not None and bwd.flops == 2 * b * h * lq * lk * (3 * d + 2 * d)
    assert bwd.flops == pytest.approx(2.5 * fwd.flops)
    # reads grad_out, q, k, v, out (bf16) and the fp32 logsumexp; writes dq, dk, dv
    assert bwd.bytes_read == 5 * b * h * lq * d * 2 + b * h * lq * 4
    assert bwd.bytes_written == 3 * b * h * lq * d * 2


def test_norms_elementwise_in_place_and_unknowns() -> None:
    n, d = 4096, 4096
    ln = cost("aten::native_layer_norm", [[n, d], [], [d], [d], []], [BF16, "", BF16, BF16, ""])
    assert ln is not None and ln.flops == 5 * n * d
    # in-place: writes its first argument; reads both
    add_ = cost("aten::add_", [[n, d], [n, d], []], [BF16, BF16, "Scalar"])
    assert add_ is not None and add_.flops == n * d
    assert (add_.bytes_read, add_.bytes_written) == (2 * n * d * 2, n * d * 2)
    copy_ = cost("aten::copy_", [[n, d], [n, d], []], ["float", BF16, "bool"])
    assert copy_ is not None and (copy_.bytes_read, copy_.bytes_written) == (n * d * 2, n * d * 4)
    # a reduction's output size is not recorded: unknown, not free
    assert cost("aten::sum", [[n, d], [], [], []], [BF16, "", "", ""]) is None
    # a tensor list records no dtype: its bytes are unknown
    assert cost("aten::cat", [[[n, d], [n, d]], []], ["TensorList", ""]) is None
