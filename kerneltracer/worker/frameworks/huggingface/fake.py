"""Fake weights: a transformers model built from its config on fake tensors, at full size.

Every parameter, buffer and input is a ``FakeTensor``: it has a shape, dtype, device and
strides but no storage, so a 405B model costs the metadata of its tensors, and every aten op
still runs its real shape logic (meta kernels). What a fake run records faithfully: which
ops, at which shapes, dtypes and strides, in which modules, and the graphs. What it cannot
know: values. Integer tensors therefore have no recorded range, nothing it times is a
measurement, and control flow that reads values (``generate()``'s stopping checks) cannot run.

The mode stays entered for the rest of the worker: tensors a forward creates from nothing
(``torch.arange``, masks) must be fake too, or a 4,096-token causal mask would be real.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kerneltracer.errors import UnsupportedError

# Why phase generate is refused: a reason a user reads in the job's status.
GENERATE_REFUSAL = (
    "phase generate with weights fake: generate() decides every step from the values of the "
    "previous one (next token, stopping criteria), and fake tensors have none; trace phase "
    "prefill and phase decode instead (every generated token runs the decode step)"
)


@contextlib.contextmanager
def fake_session() -> Iterator[Any]:
    """A FakeTensorMode (known input values flow through it: _keeping_mode) that turns real
    constants a forward makes into fake ones, with the
    meta functions that are stricter than the CPU kernels widened (see _widen_grouped_mm),
    and value checks off: torch.distributions' argument checks, and transformers'
    input-consistency checks, which compare counts of our own inputs (image tokens against
    image features) with ``torch._check`` and so read the values of tensors; the inputs are
    built consistent, and a fake run has no values to check."""
    from torch.distributions import Distribution

    _widen_grouped_mm()
    _ctc_from_known_lengths()
    before = os.environ.get(_NO_CHECKS)
    os.environ[_NO_CHECKS] = "1"
    # Forecasters return a distribution, whose constructor checks its parameters' values
    # (a scale > 0): a check of values the fake run has none of, not a computation.
    validating = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        with _keeping_mode()(allow_non_fake_inputs=True) as mode:
            yield mode
    finally:
        Distribution.set_default_validate_args(validating)
        if before is None:
            os.environ.pop(_NO_CHECKS, None)
        else:
            os.environ[_NO_CHECKS] = before


_NO_CHECKS = "TRANSFORMERS_DISABLE_TORCH_CHECK"
# kerneltracer's package directory: frames below it are the tracer's, not the model's.
_OURS = str(Path(__file__).parents[3]) + os.sep
# The largest result computed for real from inputs whose values are known (kept_values):
# grids, sizes, token ids and what is derived from them alone are far smaller.
_KEPT_NUMEL = 1 << 16


def _keeping_mode() -> Any:
    """A FakeTensorMode whose known values flow: an op whose every tensor input has a value
    (a kept input, or what was computed from kept inputs alone) runs for real and its result
    keeps its value, up to _KEPT_NUMEL elements (torch keeps only single values). So
    transformers can read an image grid or a token id mask (``.tolist()``, ``.item()``) as
    with real weights, while everything that touches a weight stays fake."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.utils import _pytree as pytree
    from torch.utils._mode_utils import no_dispatch

    class KeepingMode(FakeTensorMode):
        _from_known = False

        def dispatch(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            leaves = pytree.arg_tree_leaves(*args, **kwargs)
            if not any(isinstance(a, torch.Tensor) for a in leaves) and (
                _index_factory(func, args, kwargs) or _one_draw(func, args, kwargs)
            ):
                # Counting and index tensors made from Python numbers (aranges, zeros of
                # positions): known values, as ops on kept inputs compute from them.
                with no_dispatch():
                    real = func(*args, **kwargs)
                return self.fake_tensor_converter.from_real_tensor(self, real, make_constant=True)
            fakes = [a for a in leaves if isinstance(a, FakeTensor)]
            known = bool(fakes) and all(a.constant is not None for a in fakes)
            if func in self.lift_fns and not fakes:
                # torch.tensor(python integers): a literal, its values known.
                known = all(
                    not (a.dtype.is_floating_point or a.dtype.is_complex)
                    for a in leaves
                    if isinstance(a, torch.Tensor)
                )
            before, self._from_known = self._from_known, known
            try:
                return super().dispatch(func, types, args, kwargs)
            finally:
                self._from_known = before

        def may_turn_const(self, t: Any) -> bool:
            if super().may_turn_const(t):
                return True
            return (
                self._from_known
                and t.numel() <= _KEPT_NUMEL
                and t.layout == torch.strided
                and not self.is_our_fake(t)
                and t.device.type != "meta"
            )

    return KeepingMode


_FACTORIES = ("arange", "zeros", "ones", "full")


def _index_factory(func: Any, args: Any, kwargs: Any) -> bool:
    """An integer or bool tensor on the CPU of at most _KEPT_NUMEL elements made from Python
    numbers alone (torch.arange(n), torch.zeros(3, b, n, dtype=long)): cheap to make real."""
    import math

    import torch

    name = getattr(func, "__name__", "").split(".")[0]
    if getattr(func, "namespace", None) != "aten" or name not in _FACTORIES:
        return False
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    dtype = kwargs.get("dtype")
    if name == "arange":
        numbers = [a for a in args if isinstance(a, int | float)]
        if dtype is None and not all(isinstance(a, int) for a in numbers):
            return False
        ends: list[float] = [*numbers, 0, 0, 0]
        start: float
        end: float
        step: float
        if len(numbers) == 1:
            start, end, step = 0, ends[0], 1
        else:
            start, end, step = ends[0], ends[1], ends[2] or 1
        count = math.ceil((end - start) / step)
    else:
        size = args[0] if args else kwargs.get("size")
        if not isinstance(size, list | tuple) or not all(isinstance(n, int) for n in size):
            return False
        count = math.prod(size)
    if dtype is not None and (dtype.is_floating_point or dtype.is_complex):
        return False
    if dtype is None and name != "arange":
        return False  # zeros / ones / full default to float
    return 0 <= count <= _KEPT_NUMEL


def _one_draw(func: Any, args: Any, kwargs: Any) -> bool:
    """A single random number on the CPU (``torch.rand([])``): LayerDrop draws one per layer
    in train mode and skips the layer on it in Python. Its value comes from the generator,
    not from weights or data, so a fake run draws it for real, as a real run does."""
    import math

    import torch

    name = getattr(func, "__name__", "").split(".")[0]
    if getattr(func, "namespace", None) != "aten" or name not in ("rand", "randn"):
        return False
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    size = args[0] if args else kwargs.get("size")
    return isinstance(size, list | tuple) and math.prod(size) <= 1


def keep_values(mode: Any) -> Any:
    """spec.keep_values for a fake run: the input built outside the fake mode, from the real
    values of the known inputs before it, then made a fake tensor that keeps its value."""

    def keep(build: Any, built: dict[str, Any]) -> Any:
        import torch
        from torch.utils import _pytree as pytree
        from torch.utils._python_dispatch import _disable_current_modes

        real = {k: _value(v) for k, v in built.items()}
        with _disable_current_modes():
            value = build(real)
        # Detection labels are a list of dicts of tensors: every tensor in it is kept.
        return pytree.tree_map_only(
            torch.Tensor,
            lambda t: mode.fake_tensor_converter.from_real_tensor(mode, t, make_constant=True),
            value,
        )

    return keep


def _value(tensor: Any) -> Any:
    constant = getattr(tensor, "constant", None)
    return tensor if constant is None else constant


@contextlib.contextmanager
def values_unsupported() -> Iterator[None]:
    """A model that reads a tensor's value in Python (``.item()``, ``.tolist()``, an ``if``
    on a tensor: SpecAugment masks, data-dependent routing in Python) cannot run on fake
    tensors: that is ``unsupported``, with the model's line that did it. (LayerDrop's draw
    of one random number runs: _one_draw.)"""
    try:
        yield
    except Exception as exc:
        cause = _data_dependent(exc)
        if cause is None:
            raise
        where, line = _model_frame(cause) or ("the model", "")
        # The line names the value read (LayerDrop's random draw, a count of placeholders).
        read = f": `{line}`" if line else ""
        raise UnsupportedError(
            f"weights fake: {where} {_how_read(cause)}{read}, and fake tensors have no values"
        ) from None  # the reason names the model's line; torch's frames below say nothing more


def _how_read(cause: BaseException) -> str:
    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    if isinstance(cause, DynamicOutputShapeException):
        # No Python read at all: the op's output size is the count of true values.
        return (
            "makes a tensor whose size depends on a tensor's values (a boolean mask "
            "index, nonzero, masked_select)"
        )
    return "reads a tensor's value in Python (.item(), .tolist() or a branch on a tensor)"


def _data_dependent(exc: BaseException) -> BaseException | None:
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
    )
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    kinds = (DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return current
        # A graph tracer tries several capture methods and keeps each one's error: when
        # every one of them read a value, so would the eager step.
        causes = getattr(current, "causes", None)
        if causes:
            found = [_data_dependent(c) for c in causes]
            return found[0] if all(found) else None
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _model_frame(exc: BaseException) -> tuple[str, str] | None:
    """``file:line in function`` of the innermost frame outside torch (the code that asked),
    and its source line."""
    import traceback

    # Our own frames are left out too: a tracer's dispatch mode runs every op, so it is the
    # innermost caller of the read, never the code that asked for it.
    # Dynamo runs the model's code symbolically: the model's frames are not in the
    # traceback but in the user stack it attaches (real_stack).
    stack = list(getattr(exc, "real_stack", None) or traceback.extract_tb(exc.__traceback__))
    frames = [f for f in stack if "/torch/" not in f.filename and not f.filename.startswith(_OURS)]
    if not frames:
        return None
    f = frames[-1]
    where = f"{'/'.join(f.filename.split('/')[-3:])}:{f.lineno} in {f.name}"
    return where, (f.line or "").strip()[:120]


def _widen_grouped_mm() -> None:
    """torch's meta for aten._grouped_mm (transformers 5 runs MoE experts through it) takes
    only bf16, the CUDA kernel's rule, where the CPU kernel also takes fp32 and fp16. Such a
    call gets its output's metadata from the meta function run in bf16, cast back.

    A fake-tensor rule, not a dispatch mode: a mode above the fake mode would make Dynamo
    refuse the frames print_fx and print_aten capture. The ops issued here run on fake
    tensors below every mode, so a recorder sees the call as the model made it.
    """
    import torch
    from torch._subclasses import fake_impls

    target = getattr(getattr(torch.ops.aten, "_grouped_mm", None), "default", None)
    checks = fake_impls.op_implementations_checks
    if target is None or any(check is _is_grouped_mm for check, _ in checks):
        return

    def widened(mode: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) < 2 or args[0].dtype not in (torch.float32, torch.float16):
            return NotImplemented
        out_dtype = kwargs.pop("out_dtype", None) or args[0].dtype
        mats = [a.to(torch.bfloat16) for a in args[:2]]
        return func(*mats, *args[2:], **kwargs).to(out_dtype)

    fake_impls.op_implementations_checks.append((_is_grouped_mm, widened))


def _is_grouped_mm(func: Any) -> bool:
    return getattr(func, "__name__", "") == "_grouped_mm.default"


def _ctc_from_known_lengths() -> None:
    """CTC's forward returns its alignment table, ``(batch, frames, 2·longest target + 1)``:
    torch's fake mode refuses the op, as that size is a value of ``target_lengths``. The
    labels and their lengths are ours (built, kept known), so the longest target is known
    and the op gets its outputs' metadata from it (CTC heads' training loss: Parakeet,
    Wav2Vec2). Unknown lengths keep torch's refusal."""
    from torch._subclasses import fake_impls

    checks = fake_impls.op_implementations_checks
    if any(check is _is_ctc for check, _ in checks):
        return

    # _ctc_loss.Tensor(log_probs, targets, input_lengths, target_lengths, blank, …)
    def known(mode: Any, func: Any, log_probs: Any, *args: Any, **kwargs: Any) -> Any:
        target_lengths = args[2] if len(args) > 2 else kwargs.get("target_lengths")
        lengths = getattr(target_lengths, "constant", None)
        if lengths is None or log_probs.dim() != 3:
            return NotImplemented
        frames, batch = log_probs.shape[0], log_probs.shape[1]
        longest = int(lengths.max()) if lengths.numel() else 0
        return (
            log_probs.new_empty((batch,)),
            log_probs.new_empty((batch, frames, 2 * longest + 1)),
        )

    # First: torch's own check for this op (dynamic output shape) would refuse it.
    checks.insert(0, (_is_ctc, known))


def _is_ctc(func: Any) -> bool:
    return getattr(func, "__name__", "") == "_ctc_loss.Tensor"


def check_fake_device(device: str) -> None:
    """Fake CUDA tensors only dispatch faithfully on a torch built with CUDA.

    On a CPU-only build, FakeTensorMode creates ``cuda`` tensors and even runs sdpa on them,
    but plain indexing (``x[:, :1]``) asks the CUDA runtime for a device guard and fails: a
    run would stop at the first mask a model builds.
    """
    import torch

    if device.startswith("cuda") and not torch.backends.cuda.is_built():
        raise UnsupportedError(
            "device cuda with weights fake needs a torch built with CUDA (this one is CPU-only: "
            "fake CUDA tensors fail on indexing); use device cpu, or run on a CUDA build "
            "(no GPU memory is used)"
        )


def fake_dtype(requested: str, config: Any) -> Any:
    """``auto`` is the config's own dtype (what the checkpoint holds); fp32 if it names none."""
    import torch

    if requested != "auto":
        return getattr(torch, requested)
    configured = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(configured, str):
        configured = getattr(torch, configured, None)
    return configured if isinstance(configured, torch.dtype) else torch.float32


def build_fake_model(
    cls: Any, config: Any, dtype: Any, device: str, mode: Any, remote: bool
) -> Any:
    """The model with fake parameters and buffers, built outside the fake mode.

    Constructors compute with tensors in Python (drop-path rates from
    ``torch.linspace(...).tolist()``, relative position tables): built on fake tensors they
    would have no values to read. So the model is built with real tensors except its
    parameters, which go to the meta device as they are registered (``torch.empty`` pages
    are never touched: a 405B model costs no memory), weight initialisation skipped; then
    every parameter and buffer becomes a fake tensor on ``device``.
    """
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), _no_init_weights(), _params_on_meta():
        if hasattr(cls, "_from_config"):
            model = cls._from_config(config, dtype=dtype)
        else:
            model = cls.from_config(config, dtype=dtype, trust_remote_code=remote)
        # Skipping initialisation also skips tying (an LM head sharing the embedding): an
        # untied head would add a weight and drop a gradient sum from the backward.
        tie = getattr(model, "tie_weights", None)
        if callable(tie):
            tie()
    _to_fake(model, mode, device)
    return model


@contextlib.contextmanager
def _params_on_meta() -> Iterator[None]:
    import torch

    register = torch.nn.Module.register_parameter

    def on_meta(module: Any, name: str, param: Any) -> None:
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register  # type: ignore[method-assign]


def _to_fake(model: Any, mode: Any, device: str) -> None:
    """Parameters (meta) and buffers (real) become fake tensors on ``device``; a tensor
    shared by several modules (tied weights) stays one tensor."""
    import torch

    target = torch.device(device)
    memo: dict[int, Any] = {}
    for module in model.modules():
        for name, param in module._parameters.items():
            if param is None:
                continue
            if id(param) not in memo:
                fake = mode.fake_tensor_converter.from_meta_and_device(mode, param, target)
                memo[id(param)] = torch.nn.Parameter(fake, requires_grad=param.requires_grad)
            module._parameters[name] = memo[id(param)]
        for name, buf in module._buffers.items():
            if buf is None:
                continue
            if id(buf) not in memo:
                memo[id(buf)] = _fake_buffer(mode, buf).to(target)
            module._buffers[name] = memo[id(buf)]
    _forget(mode, memo)


def _fake_buffer(mode: Any, buf: Any) -> Any:
    """A buffer as a fake tensor; a one-value buffer keeps its value. Buffers exist before
    any input does, so their values come from the config: a conv's stride and kernel size
    kept as tensors (EnCodec's padding arithmetic reads them with Python ints). Kept as a
    fake tensor's constant, ops on them still dispatch (and are traced) and fold to values
    the model can read; torch's fake mode folds constants of one value only."""
    from torch._subclasses.fake_tensor import CONSTANT_NUMEL_LIMIT

    constant = buf.numel() <= CONSTANT_NUMEL_LIMIT and buf.device.type != "meta"
    return mode.fake_tensor_converter.from_real_tensor(mode, buf, make_constant=constant)


def _forget(mode: Any, ours: dict[int, Any]) -> None:
    """Drop the converter's weak references to the model's tensors. Module.to() swaps a fake
    parameter for its converted self (torch.utils.swap_tensors), which refuses a tensor
    anything holds a weakref to: a router that calls ``self.classifier.to(self.dtype)`` in
    its forward (Switch Transformers, NLLB-MoE) would fail "Cannot swap t1 because it has
    weakref". Every tensor is converted once (``ours`` keeps tied ones tied), so the
    converter's memo has nothing left to do for them."""
    keep = {id(t) for t in ours.values()}
    table = mode.fake_tensor_converter.tensor_memo
    for key, value in list(table.items()):
        if id(value) in keep:
            del table[key]


@contextlib.contextmanager
def _no_init_weights() -> Iterator[None]:
    import importlib

    # transformers 5 moved it from modeling_utils to initialization.
    for name in ("transformers.initialization", "transformers.modeling_utils"):
        try:
            skip = getattr(importlib.import_module(name), "no_init_weights", None)
        except ImportError:
            continue
        if skip is not None:
            with skip():
                yield
            return
    yield


def notes(config: Any) -> list[str]:
    """What a reader of the status must know about a fake-weight job of this model."""
    out = [
        "weights fake: built from the config on fake tensors; shapes, dtypes and ops are the "
        "model's, values are not (integer ranges unknown, no measured time)"
    ]
    # A checkpoint quantized on the hub (DeepSeek-V3's fp8) is traced unquantized.
    quant = getattr(config, "quantization_config", None)
    if quant:
        method = (
            quant.get("quant_method")
            if isinstance(quant, dict)
            else getattr(quant, "quant_method", None)
        )
        out.append(
            f"the checkpoint is quantized ({method}); traced in the job's dtype, unquantized"
        )
    return out
