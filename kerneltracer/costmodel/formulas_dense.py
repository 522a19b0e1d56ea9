"""FLOP formulas of the matrix ops: matmuls, grouped matmuls (MoE), convolutions, attention.

Conventions are torch.utils.flop_counter's (the test suite checks ours against it):

- a matmul of (M x K) by (K x N) is 2*M*N*K; the bias add of addmm / baddbmm / linear is
  not counted;
- a convolution is 2 * N * prod(output spatial) * prod(kernel) * Cout * Cin/groups (for a
  transposed convolution, the input's spatial size); bias not counted. Backward: each
  gradient asked for (input, weight) costs one forward;
- attention (sdpa and its flash / efficient / cuDNN / CPU variants) is its two matmuls:
  2*B*Hq*Lq*Lk*(Dqk + Dv), i.e. 4*B*H*Lq*Lk*D; no discount for causal masks (a causal
  kernel skips about half of that work: the estimate is the dense count). Backward is five
  matmuls: 2*B*Hq*Lq*Lk*(3*Dqk + 2*Dv), 2.5x the forward when Dqk == Dv. The
  _flash/_efficient_attention_* ops take (B, L, H, D) tensors: read as such here
  (flop_counter reads them as (B, H, L, D), which miscounts whenever L != H).

Bytes are the default of :meth:`Call.cost`: every input tensor read once, every output
written once.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from kerneltracer.costmodel import values
from kerneltracer.costmodel.call import ATTENTION, CONV, MATMUL, BadCall, Call, OpCost

Formula = Callable[[Call], OpCost]


def _mm(a: list[int], b: list[int]) -> int:
    if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
        raise BadCall(f"mm shapes {a} x {b}")
    return 2 * a[0] * b[1] * a[1]


def _bmm(a: list[int], b: list[int]) -> int:
    if len(a) != 3 or len(b) != 3 or a[2] != b[1]:
        raise BadCall(f"bmm shapes {a} x {b}")
    return 2 * a[0] * a[1] * b[2] * a[2]


def mm(c: Call) -> OpCost:
    a, b = c.shape(0), c.shape(1)
    return c.cost(_mm(a, b), MATMUL, out_numel=a[0] * b[-1])


def addmm(c: Call) -> OpCost:
    a, b = c.shape(1), c.shape(2)
    return c.cost(_mm(a, b), MATMUL, out_numel=a[0] * b[-1])


def bmm(c: Call) -> OpCost:
    a, b = c.shape(0), c.shape(1)
    return c.cost(_bmm(a, b), MATMUL, out_numel=a[0] * a[1] * b[-1])


def baddbmm(c: Call) -> OpCost:  # also addbmm: the same products, summed over the batch
    return c.cost(_bmm(c.shape(1), c.shape(2)), MATMUL, out_numel=prod(c.shape(0)))


def mv(c: Call) -> OpCost:
    a, v = c.shape(0), c.shape(1)
    return c.cost(2 * a[0] * v[0], MATMUL)


def addmv(c: Call) -> OpCost:
    a, v = c.shape(1), c.shape(2)
    return c.cost(2 * a[0] * v[0], MATMUL)


def dot(c: Call) -> OpCost:
    return c.cost(2 * c.shape(0)[0], MATMUL)


def matmul(c: Call) -> OpCost:
    """torch.matmul's broadcasting rules: 2 * batch * M * N * K."""
    a, b = c.shape(0), c.shape(1)
    k = a[-1]
    m = a[-2] if len(a) >= 2 else 1
    n = b[-1] if len(b) >= 2 else 1
    batch = values.broadcast(a[:-2], b[:-2])
    if batch is None:
        raise BadCall(f"matmul batch dims {a} x {b} do not broadcast")
    return c.cost(2 * prod(batch) * m * n * k, MATMUL, out_numel=prod(batch) * m * n)


def linear(c: Call) -> OpCost:
    x, w = c.shape(0), c.shape(1)
    n = w[0] if len(w) == 2 else 1
    return c.cost(2 * prod(x[:-1]) * n * x[-1], MATMUL, out_numel=prod(x[:-1]) * n)


def grouped_mm(c: Call) -> OpCost:
    """``_grouped_mm`` (MoE experts): the group sizes live in the offsets' values, which a
    signature does not have, so count the total: 2 * (sum of group rows) * N * K. With
    2-D x 2-D inputs the groups split K: 2 * M * N * (total K)."""
    a, b = c.shape(0), c.shape(1)
    if len(a) == 2 and len(b) == 3:  # (total M, K) x (G, K, N)
        flops = 2 * a[0] * a[1] * b[2]
    elif len(a) == 3 and len(b) == 3:  # batched
        flops = _bmm(a, b)
    elif len(a) == 3 and len(b) == 2:  # (G, M, K) x (K, total N)
        flops = 2 * a[1] * a[2] * b[1]
    elif len(a) == 2 and len(b) == 2:  # (M, total K) x (total K, N): groups split K
        flops = 2 * a[0] * a[1] * b[1]
    else:
        raise BadCall(f"_grouped_mm shapes {a} x {b}")
    return c.cost(flops, MATMUL)


def gemm_like(c: Call) -> OpCost:
    """A GEMM that no formula names (vendor ops: ``aiter::gemm_a16w16``,
    ``vllm::rocm_unquantized_gemm``, ``vllm::cutlass_scaled_mm``…), known to be one by its
    kernels: the first pair of input tensors, in order, whose inner dimensions meet, is
    the product: activations (…, K) by a 2-D weight (N, K) as ``linear`` takes it, or
    (K, N) as ``mm`` does (when N == K both read the same). 2 * M * N * K."""
    tensors = [s for x in c.inputs if (s := values.shape(x)) is not None and len(s) >= 2]
    for i, x in enumerate(tensors):
        for w in tensors[i + 1 :]:
            if len(w) != 2:
                continue
            k = x[-1]
            n = w[0] if w[1] == k else w[1] if w[0] == k else None
            if n is not None and k > 0:
                m = prod(x[:-1])
                return c.cost(2 * m * n * k, MATMUL, out_numel=m * n)
    raise BadCall(f"no two input tensors multiply: {tensors}")


def _conv_flops(x: list[int], w: list[int], spatial: list[int]) -> int:
    """flop_counter's count: 2 * N * prod(spatial) * prod(kernel) * w[0] * w[1]."""
    return 2 * x[0] * prod(spatial) * prod(w[2:]) * w[0] * w[1]


def _out_spatial(c: Call, x: list[int], w: list[int], args: tuple[int, int, int]) -> list[int]:
    """The output's spatial sizes: recorded, or from stride/padding/dilation (``args``:
    their argument positions)."""
    if c.outputs is not None:
        out = values.shape(next(values.tensors(c.outputs), None))
        if out is None:
            raise BadCall("convolution output not a tensor")
        return out[2:]
    nd = len(x) - 2
    stride, padding, dilation = (_per_dim(c.arg(i), nd) for i in args)
    return [
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(x[2:], w[2:], stride, padding, dilation, strict=True)
    ]


def convolution(c: Call) -> OpCost:
    """convolution / _convolution / convolution_overrideable (input, weight, bias, stride,
    padding, dilation, transposed, ...)."""
    x, w = c.shape(0), c.shape(1)
    transposed = bool(c.arg(6, "transposed", False))
    if transposed:
        return c.cost(_conv_flops(x, w, x[2:]), CONV)
    spatial = _out_spatial(c, x, w, (3, 4, 5))
    return c.cost(_conv_flops(x, w, spatial), CONV, out_numel=x[0] * w[0] * prod(spatial))


def _convolution_nobias_order(c: Call) -> OpCost:
    """cudnn_convolution (self, weight, padding, stride, dilation, ...)."""
    x, w = c.shape(0), c.shape(1)
    spatial = _out_spatial(c, x, w, (3, 2, 4))
    return c.cost(_conv_flops(x, w, spatial), CONV, out_numel=x[0] * w[0] * prod(spatial))


def mkldnn_convolution(c: Call) -> OpCost:
    """mkldnn_convolution (self, weight, bias, padding, stride, dilation, groups)."""
    x, w = c.shape(0), c.shape(1)
    spatial = _out_spatial(c, x, w, (4, 3, 5))
    return c.cost(_conv_flops(x, w, spatial), CONV, out_numel=x[0] * w[0] * prod(spatial))


def convolution_backward(c: Call) -> OpCost:
    """(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask): one forward per gradient asked for."""
    grad, x, w = c.shape(0), c.shape(1), c.shape(2)
    transposed = bool(c.arg(7, "transposed", False))
    mask = c.arg(10, "output_mask", [True, True, True])
    forward = _conv_flops(x, w, x[2:] if transposed else grad[2:])
    return c.cost(forward * (bool(mask[0]) + bool(mask[1])), CONV)


def _attention_dims(
    c: Call, first: int, offsets_at: int | None
) -> tuple[int, int, int, int, int, int]:
    """(batch, query heads, Lq, Lk, Dqk, Dv) of query/key/value at ``first``..``first+2``.

    ``offsets_at``: where the query's sequence offsets are, for the (B, L, H, D) layout of
    _flash/_efficient_attention_*; None for the (B, H, L, D) layout of sdpa. With offsets,
    the batch is packed (all tokens in one sequence dim, variable lengths): the lengths are
    in the offsets' values, which signatures lack, so equal lengths are assumed (the least
    work those totals allow).
    """
    q, k, v = c.shape(first), c.shape(first + 1), c.shape(first + 2)
    if not len(q) == len(k) == len(v) or len(q) not in (3, 4):
        raise BadCall(f"attention shapes q={q} k={k} v={v}")
    if offsets_at is None:
        if len(q) != 4:
            raise BadCall(f"sdpa query shape {q}")
        return q[0], q[1], q[2], k[2], q[3], v[3]
    if len(q) == 3:  # (total tokens, H, D)
        q, k, v = [1, *q], [1, *k], [1, *v]
    b, lq, h, dqk = q
    lk, dv = k[1], v[3]
    offsets = values.shape(c.arg(offsets_at))
    if offsets and offsets[0] > 1:  # a packed batch of offsets[0] - 1 sequences
        n = offsets[0] - 1
        return n, h, b * lq // n, b * lk // n, dqk, dv
    return b, h, lq, lk, dqk, dv


def _attention(first: int, backward: bool, offsets_at: int | None = None) -> Formula:
    def formula(c: Call) -> OpCost:
        b, h, lq, lk, dqk, dv = _attention_dims(c, first, offsets_at)
        depth = 3 * dqk + 2 * dv if backward else dqk + dv
        flops = 2 * b * h * lq * lk * depth
        if backward and c.outputs is None:
            # Outputs not recorded (a profiler trace): the backward writes the gradients
            # of query, key and value, each the size of its input.
            grads = [values.nbytes(c.arg(first + i)) for i in range(3)]
            if any(g is None for g in grads):
                raise BadCall("attention backward: q/k/v sizes")
            return c.cost(flops, ATTENTION, written=sum(g or 0 for g in grads))
        out = None if backward else b * h * lq * dv
        return c.cost(flops, ATTENTION, out_numel=out)

    return formula


def _per_dim(value: object, nd: int) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise BadCall(f"not a list of ints: {value!r}")
    return list(items) * nd if len(items) == 1 else list(items)  # type: ignore[arg-type]


_SDPA = (
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_attention_math",
    "_scaled_dot_product_attention_math_for_mps",
    "scaled_dot_product_attention",
)
_SDPA_BACKWARD = (
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward",
    "_scaled_dot_product_fused_attention_overrideable_backward",
)

FORMULAS: dict[str, Formula] = {
    "mm": mm,
    "_int_mm": mm,
    "_scaled_mm": mm,
    "_weight_int8pack_mm": lambda c: c.cost(_mm(c.shape(0), c.shape(1)[::-1]), MATMUL),
    "addmm": addmm,
    "_addmm_activation": addmm,
    "bmm": bmm,
    "baddbmm": baddbmm,
    "addbmm": baddbmm,
    "mv": mv,
    "addmv": addmv,
    "dot": dot,
    "vdot": dot,
    "matmul": matmul,
    "linear": linear,
    "_grouped_mm": grouped_mm,
    "_scaled_grouped_mm": grouped_mm,
    "convolution": convolution,
    "_convolution": convolution,
    "convolution_overrideable": convolution,
    "cudnn_convolution": _convolution_nobias_order,
    "mkldnn_convolution": mkldnn_convolution,
    "convolution_backward": convolution_backward,
    **{name: _attention(0, backward=False) for name in _SDPA},
    **{name: _attention(1, backward=True) for name in _SDPA_BACKWARD},
    # (query, key, value, cum_seq_q, ...) / (query, key, value, bias, cu_seqlens_q, ...)
    "_flash_attention_forward": _attention(0, backward=False, offsets_at=3),
    "_efficient_attention_forward": _attention(0, backward=False, offsets_at=4),
    # (grad_out, query, key, value, out, logsumexp, cum_seq_q, ...) and
    # (grad_out, query, key, value, bias, out, cu_seqlens_q, ...)
    "_flash_attention_backward": _attention(1, backward=True, offsets_at=6),
    "_efficient_attention_backward": _attention(1, backward=True, offsets_at=6),
}
