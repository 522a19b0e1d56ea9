"""Our FLOPs equal torch.utils.flop_counter's on the ops it counts.

Each case runs real tensors (CPU, or meta for the GPU-only attention kernels) twice: under
the torch_dispatch tracer's recorder, whose JSON rows are what the cost model reads in a
run, and under FlopCounterMode. Per op, our estimate x calls must equal its count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from kerneltracer.costmodel import estimate
from kerneltracer.worker.tracers._dispatch_recorder import DispatchRecorder, rows_of

aten = torch.ops.aten


def _ours(fn: Callable[[], Any]) -> dict[str, int]:
    recorder = DispatchRecorder()
    with recorder:
        fn()
    totals: dict[str, int] = {}
    for row in rows_of(recorder.table):
        packet = ".".join(row["op"].split(".")[:2])
        cost = estimate(row["op"], row["inputs"], row["kwargs"], row["outputs"])
        if cost is not None and cost.flops:
            totals[packet] = totals.get(packet, 0) + cost.flops * row["count"]
    return totals


def _theirs(fn: Callable[[], Any]) -> dict[str, int]:
    with FlopCounterMode(display=False) as counter:
        fn()
    return {
        f"aten.{op._qualified_op_name.split('::')[1]}": n
        for op, n in counter.get_flop_counts()["Global"].items()
        if n
    }


def _grad(*shape: int, device: str = "cpu") -> torch.Tensor:
    return torch.randn(*shape, device=device, requires_grad=True)


def _linear_fwd_bwd() -> None:
    x, w, b = _grad(6, 32), _grad(16, 32), _grad(16)
    F.linear(x, w, b).sum().backward()  # addmm forward, mm backward


def _bmm_family() -> None:
    a, b, c = torch.randn(4, 8, 16), torch.randn(4, 16, 5), torch.randn(4, 8, 5)
    torch.bmm(a, b)
    torch.baddbmm(c, a, b)
    torch.mm(a[0], b[0])
    torch.addmm(c[0], a[0], b[0])


def _conv_fwd_bwd() -> None:
    x, w = _grad(2, 3, 17, 15), _grad(8, 3, 3, 5)
    F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2)).sum().backward()


def _conv_transposed_fwd_bwd() -> None:
    x, w = _grad(2, 4, 7, 9), _grad(4, 6, 3, 3)
    F.conv_transpose2d(x, w, stride=2, padding=1).sum().backward()


def _conv1d_fwd() -> None:
    F.conv1d(torch.randn(3, 4, 50), torch.randn(7, 4, 5), padding=2)


def _sdpa_meta() -> None:
    q = torch.empty(2, 8, 64, 32, device="meta")
    k = torch.empty(2, 2, 96, 32, device="meta")  # grouped-query heads, longer keys
    aten._scaled_dot_product_efficient_attention(
        q, k.repeat(1, 4, 1, 1), k.repeat(1, 4, 1, 1), None, True
    )
    out = aten._scaled_dot_product_flash_attention(q, q, q)
    aten._scaled_dot_product_flash_attention_backward(
        q, q, q, q, out[0], out[1], out[2], out[3], 64, 64, 0.0, False, out[6], out[7]
    )
    aten._scaled_dot_product_cudnn_attention(q, q, q, None, True)


def _flash_square() -> None:
    # flop_counter reads these (B, L, H, D) ops as (B, H, L, D): equal only when L == H
    q = torch.empty(2, 8, 8, 32, device="meta")
    aten._flash_attention_forward(q, q, q, None, None, 8, 8, 0.0, False, False)
    aten._efficient_attention_forward(q, q, q, None, None, None, 8, 8, 0.0, 0, True)


CASES = {
    "linear": _linear_fwd_bwd,
    "bmm-family": _bmm_family,
    "conv2d": _conv_fwd_bwd,
    "conv-transposed": _conv_transposed_fwd_bwd,
    "conv1d": _conv1d_fwd,
    "sdpa": _sdpa_meta,
    "flash-square": _flash_square,
}


@pytest.mark.parametrize("case", list(CASES))
def test_flops_equal_flop_counter(case: str) -> None:
    fn = CASES[case]
    torch.manual_seed(0)
    theirs = _theirs(fn)
    torch.manual_seed(0)
    ours = _ours(fn)
    assert theirs, "flop_counter counted nothing: the case tests nothing"
    assert {op: ours.get(op) for op in theirs} == theirs


def test_flash_attention_layout_is_b_l_h_d() -> None:
    """Where flop_counter is wrong: (B, L, H, D) with L != H. Ours equals the same
    attention through sdpa's (B, H, L, D) op."""
    b, lq, h, d = 2, 24, 4, 16
    q = torch.empty(b, lq, h, d, device="meta")

    def flash() -> None:
        aten._flash_attention_forward(q, q, q, None, None, lq, lq, 0.0, False, False)

    def sdpa() -> None:
        qt = q.transpose(1, 2).contiguous()
        aten._scaled_dot_product_flash_attention(qt, qt, qt)

    assert _ours(flash)["aten._flash_attention_forward"] == 4 * b * h * lq * lq * d
    assert _ours(sdpa)["aten._scaled_dot_product_flash_attention"] == 4 * b * h * lq * lq * d
    assert _theirs(flash)["aten._flash_attention_forward"] != 4 * b * h * lq * lq * d
