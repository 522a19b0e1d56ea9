"""Cost formulas of everything that is not a matrix op.

- elementwise (add, mul, silu, gelu, exp, where, comparisons, their backward ops, dropout,
  random fills): 1 FLOP per output element, transcendental or not (flop_counter does not
  count them at all; DeepSpeed's profiler counts one per element, as here);
- reductions (sum, mean, amax, softmax, log_softmax, topk, cumsum, losses, pooling): 1 FLOP
  per input element;
- norms: DeepSpeed's profiler's counts, 5 FLOPs per element with an affine weight, 4
  without (layer, group, batch norm); RMS norm 4 with a weight, 3 without. Their backward
  ops count twice the forward (our convention: no peer counts them);
- embedding: no FLOPs; reads the gathered rows (indices x row), not the whole table;
  the backward reads the gradient and writes the whole weight gradient;
- memory (copies, cat, index, gather, scatter, padding): bytes only. Gathers read what
  they gather (output-sized), not their whole source;
- creation: zeros / full / arange write their output; empty ones touch no memory;
- views and metadata (view, t, transpose, expand, slice, permute, as_strided, detach,
  prim.device, sym_size…): no kernel, 0 FLOPs and 0 bytes.

Bytes, unless said otherwise: every input tensor read once, every output written once
(numel x element size; no cache modelling).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from kerneltracer.costmodel import values
from kerneltracer.costmodel.call import (
    CREATION,
    ELEMENTWISE,
    EMBEDDING,
    MEMORY,
    NORM,
    REDUCTION,
    VIEW,
    BadCall,
    Call,
    OpCost,
)

Formula = Callable[[Call], OpCost]

_ELEMENTWISE_OPS = """
abs absolute acos acosh add addcdiv addcmul angle asin asinh atan atan2 atanh bernoulli
bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor
ceil clamp clamp_max clamp_min clip conj_physical copysign cos cosh deg2rad div
div_floor elu elu_backward eq erf erfc erfinv exp exp2 expm1 exponential fix floor
floor_divide fmax fmin fmod frac ge gelu gelu_backward glu glu_backward gt hardshrink
hardsigmoid hardsigmoid_backward hardswish hardswish_backward hardtanh
hardtanh_backward heaviside hypot i0 isfinite isinf isnan isneginf isposinf le
leaky_relu leaky_relu_backward lerp lgamma log log10 log1p log2 log_normal
log_sigmoid_backward log_sigmoid_forward logaddexp logaddexp2 logical_and logical_not
logical_or logical_xor logit logit_backward lt masked_fill maximum minimum mish
mish_backward mul nan_to_num native_dropout native_dropout_backward ne neg nextafter
normal polar pow prelu _prelu_kernel _prelu_kernel_backward rad2deg rand rand_like
randint randint_like randn randn_like random reciprocal relu relu6 remainder round
rrelu_with_noise rsqrt rsub sgn sigmoid sigmoid_backward sign signbit silu
silu_backward sin sinc sinh softplus softplus_backward softshrink sqrt square sub tan
tanh tanh_backward threshold threshold_backward tril triu true_divide trunc uniform
where xlogy _conj_physical _masked_scale upsample_bilinear2d upsample_nearest1d
upsample_nearest2d upsample_nearest3d upsample_linear1d upsample_bicubic2d
upsample_trilinear3d _upsample_bilinear2d_aa _upsample_nearest_exact1d
_upsample_nearest_exact2d _upsample_nearest_exact3d upsample_bilinear2d_backward
upsample_nearest2d_backward grid_sampler_2d grid_sampler_2d_backward _fused_dropout
__and__ __or__ __xor__ __lshift__ __rshift__ __iand__ __ior__ __ixor__ __ilshift__ __irshift__
"""

_REDUCTION_OPS = """
all amax amin aminmax any argmax argmin argsort _adaptive_avg_pool2d
_adaptive_avg_pool2d_backward _adaptive_avg_pool3d adaptive_max_pool2d
binary_cross_entropy binary_cross_entropy_backward binary_cross_entropy_with_logits
bincount count_nonzero cummax cummin cumprod cumsum histc huber_loss kthvalue
linalg_vector_norm logcumsumexp logsumexp _log_softmax _log_softmax_backward_data mean
median mode mse_loss mse_loss_backward nansum nll_loss2d_backward nll_loss2d_forward
nll_loss_backward nll_loss_forward nonzero norm prod _safe_softmax smooth_l1_loss
smooth_l1_loss_backward _softmax _softmax_backward_data sort std std_mean sum topk
_unique2 unique_consecutive unique_dim var var_mean kl_div _is_all_true _is_any_true
_weight_norm_interface _weight_norm_interface_backward
"""

_POOL_OPS = """
avg_pool1d avg_pool2d avg_pool3d max_pool2d_with_indices max_pool3d_with_indices
avg_pool2d_backward avg_pool3d_backward max_pool2d_with_indices_backward
max_pool3d_with_indices_backward
"""

_MEMORY_OPS = """
_to_copy clone contiguous cat stack _cat concat repeat roll flip constant_pad_nd
reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d
replication_pad3d slice_scatter select_scatter diagonal_scatter as_strided_scatter
slice_backward select_backward diagonal_backward unfold_backward index_select_backward
narrow_copy split_with_sizes_copy split_copy chunk_cat _chunk_cat unbind_copy view_copy alias_copy
expand_copy permute_copy transpose_copy t_copy unsqueeze_copy squeeze_copy
as_strided_copy slice_copy select_copy detach_copy _unsafe_view_copy masked_scatter
masked_select scatter scatter_add scatter_reduce index_add index_copy index_fill
index_put _index_put_impl put take repeat_interleave _local_scalar_dense lift_fresh_copy
im2col col2im pixel_shuffle pixel_unshuffle channel_shuffle _pdist_forward
"""

_GATHER_OPS = "index index_select gather _unsafe_index embedding_bag _embedding_bag"

_FILL_OPS = """
fill zeros ones full zeros_like ones_like full_like new_zeros new_ones new_full arange
linspace logspace eye scalar_tensor zero tensor _pin_memory
"""

_EMPTY_OPS = """
empty empty_like empty_strided new_empty new_empty_strided empty_permuted resize
resize_as set record_stream
"""

_VIEW_OPS = """
view _unsafe_view reshape _reshape_alias t transpose expand expand_as slice select
alias unsqueeze squeeze permute as_strided detach split split_with_sizes unbind chunk
narrow diagonal unfold view_as view_as_real view_as_complex movedim moveaxis flatten
unflatten lift_fresh lift resolve_conj resolve_neg _conj _neg_view real imag numpy_T
mT mH matrix_H adjoint swapaxes swapdims _nested_view_from_buffer _assert_async
_assert_scalar _assert_tensor_metadata _functional_assert_async sym_constrain_range
sym_constrain_range_for_size _has_compatible_shallow_copy_type is_same_size is_nonzero
sym_size sym_stride sym_numel sym_storage_offset _shape_as_tensor dim size stride
storage_offset is_contiguous _version _make_dep_token _indices _values
"""

_NORMS: dict[str, tuple[int, int, int]] = {
    # packet -> (argument index of the input, of the weight, FLOPs per element with a weight)
    "native_layer_norm": (0, 2, 5),
    "native_group_norm": (0, 1, 5),
    "native_batch_norm": (0, 1, 5),
    "_native_batch_norm_legit": (0, 1, 5),
    "_native_batch_norm_legit_no_training": (0, 1, 5),
    "_native_batch_norm_legit_functional": (0, 1, 5),
    "_batch_norm_with_update": (0, 1, 5),
    "_batch_norm_with_update_functional": (0, 1, 5),
    "_batch_norm_no_update": (0, 1, 5),
    "cudnn_batch_norm": (0, 1, 5),
    "miopen_batch_norm": (0, 1, 5),
    "layer_norm": (0, 2, 5),
    "group_norm": (0, 2, 5),
    "batch_norm": (0, 1, 5),
    "instance_norm": (0, 1, 5),
    "rms_norm": (0, 2, 4),
    "_fused_rms_norm": (0, 2, 4),
}
_NORM_BACKWARDS: dict[str, tuple[int, int, int]] = {
    # (input position, weight position, forward FLOPs per element with a weight)
    "native_layer_norm_backward": (1, 5, 5),
    "native_group_norm_backward": (1, 4, 5),
    "native_batch_norm_backward": (1, 2, 5),
    "batch_norm_backward": (1, 2, 5),
    "cudnn_batch_norm_backward": (0, 2, 5),
    "miopen_batch_norm_backward": (0, 2, 5),
    "_fused_rms_norm_backward": (1, 4, 4),
}


def _names(text: str) -> list[str]:
    return text.split()


def elementwise(c: Call) -> OpCost:
    if c.outputs is None:
        # no recorded output: the broadcast of the inputs, in the first tensor's dtype
        n = c.out_numel()
        first = next(values.tensors(c.inputs), None)
        size = values.DTYPE_BYTES.get(str(first["dtype"])) if first else None
        if size is None:
            raise BadCall("no output recorded and no input tensor to infer it")
        return c.cost(n, ELEMENTWISE, written=n * size)
    return c.cost(c.out_numel(), ELEMENTWISE)


def _minmax(c: Call) -> OpCost:
    """max/min: ``.other`` is elementwise, the rest reduce."""
    return elementwise(c) if c.overload in ("other", "out") else reduction(c)


def reduction(c: Call) -> OpCost:
    return c.cost(c.in_numel(0), REDUCTION)


def pool(c: Call) -> OpCost:
    """Each output element reduces a kernel window: numel(out) x prod(kernel) (the kernel
    size is argument 1 of the forward ops, 2 of the backward ones, which read the gradient
    at 0 and the input at 1)."""
    backward = c.op.split(".")[1].endswith("_backward")
    kernel = c.arg(2 if backward else 1)
    nd = len(c.shape(1 if backward else 0)) - 2
    sizes = kernel if isinstance(kernel, list) else [kernel]
    if not sizes or not all(isinstance(k, int) for k in sizes):
        raise BadCall(f"pool kernel {kernel!r}")
    window = 1
    for k in sizes * nd if len(sizes) == 1 else sizes:
        window *= k
    out = c.shape(0) if backward else _first_output_shape(c)
    return c.cost(prod(out) * window, REDUCTION)


def norm(spec: tuple[int, int, int], backward: bool = False) -> Formula:
    x_at, w_at, per_element = spec

    def formula(c: Call) -> OpCost:
        per = per_element if c.has_tensor(w_at) else per_element - 1
        n = c.in_numel(x_at)
        # Outputs not recorded (a profiler trace): the normalised tensor (forward) or the
        # input's gradient (backward) is written, the size of x; statistics are negligible.
        return c.cost(n * per * (2 if backward else 1), NORM, out_numel=n)

    return formula


def embedding(c: Call) -> OpCost:
    """(weight [V, D...], indices): reads the gathered rows and the indices."""
    w, idx = c.shape(0), c.arg(1)
    row = prod(w[1:]) * values.DTYPE_BYTES[str(c.arg(0)["dtype"])]
    n = values.numel(idx)
    index_bytes = values.nbytes(idx)
    if n is None or index_bytes is None:
        raise BadCall("embedding indices")
    return c.cost(0, EMBEDDING, read=n * row + index_bytes)


def _embedding_backward(c: Call) -> OpCost:
    """(grad_output, indices, num_weights, ...): one add per gradient element; reads the
    gradient and indices, writes the (num_weights x D) weight gradient (the default)."""
    return c.cost(c.in_numel(0), EMBEDDING)


def gather(c: Call) -> OpCost:
    """Reads what it gathers (the output's size) and the index tensors, not its source."""
    index_bytes = sum(values.nbytes(t) or 0 for t in values.tensors(c.inputs[1:]))
    written = c.bytes_out()
    return c.cost(0, MEMORY, read=written + index_bytes, written=written)


def copy_(c: Call) -> OpCost:
    """copy_(self, src): reads src, writes self."""
    src = values.nbytes(c.arg(1))
    if src is None:
        raise BadCall("copy_ source")
    return c.cost(0, MEMORY, read=src, written=c.bytes_out())


def memory(c: Call) -> OpCost:
    return c.cost(0, MEMORY)


def all_gather_copy_in(c: Call) -> OpCost:
    """FSDP2's ``fsdp.all_gather_copy_in``: the shards copied into the all-gather's input
    (its first output); the second output, the all-gather's result, is only allocated."""
    if not c.outputs:
        raise BadCall("outputs not recorded")
    written = values.total_bytes(c.outputs[:1])
    if written is None:
        raise BadCall("a tensor has a symbolic size or an unknown dtype")
    return c.cost(0, MEMORY, written=written)


def fill(c: Call) -> OpCost:
    return c.cost(0, CREATION, read=0)


def empty(c: Call) -> OpCost:
    return c.cost(0, CREATION, read=0, written=0)


def view(c: Call) -> OpCost:
    return OpCost(0, 0, 0, VIEW, None)


def _first_output_shape(c: Call) -> list[int]:
    out = values.shape(next(values.tensors(c.outputs or []), None))
    if out is None:
        raise BadCall("no output tensor recorded")
    return out


FORMULAS: dict[str, Formula] = {
    **dict.fromkeys(_names(_ELEMENTWISE_OPS), elementwise),
    **dict.fromkeys(_names(_REDUCTION_OPS), reduction),
    **dict.fromkeys(_names(_POOL_OPS), pool),
    **dict.fromkeys(_names(_MEMORY_OPS), memory),
    "all_gather_copy_in": all_gather_copy_in,
    **dict.fromkeys(_names(_GATHER_OPS), gather),
    **dict.fromkeys(_names(_FILL_OPS), fill),
    **dict.fromkeys(_names(_EMPTY_OPS), empty),
    **dict.fromkeys(_names(_VIEW_OPS), view),
    **{name: norm(spec) for name, spec in _NORMS.items()},
    **{name: norm(spec, backward=True) for name, spec in _NORM_BACKWARDS.items()},
    "max": _minmax,
    "min": _minmax,
    "embedding": embedding,
    "embedding_dense_backward": _embedding_backward,
    "copy": copy_,
    "device": view,  # prim.device
}
