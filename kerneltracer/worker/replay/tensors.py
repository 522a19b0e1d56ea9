"""Build real arguments from recorded values (the replay worker's tensors).

Tensors get random data with the recorded shape, strides and dtype; integer tensors stay
within the recorded ``min``..``max`` (indices must be in bounds), others are small
non-negative ints; bools have exactly the recorded count of true values at random places
(a mask decides the output shape of ``index``, ``masked_select``, ``nonzero`` and what
``masked_scatter`` reads), else are random. Recorded devices map to the replay device.
An op whose output size counts distinct values (``unique_consecutive`` of a ``cu_seqlens``)
gets an input with the recorded number of them (:func:`apply_constraints`).
"""

from __future__ import annotations

from typing import Any

import torch

from kerneltracer.core.signature import TAG, is_tensor


class InputError(Exception):
    """A recorded value cannot be turned into an argument (symbolic size, unknown dtype)."""


def build_value(value: Any, device: torch.device, gen: torch.Generator) -> Any:
    if is_tensor(value):
        return build_tensor(value, device, gen)
    if isinstance(value, dict) and TAG in value:
        return _tagged(str(value[TAG]), str(value.get("v")), device)
    if isinstance(value, dict):
        return {k: build_value(v, device, gen) for k, v in value.items()}
    if isinstance(value, list):
        return [build_value(v, device, gen) for v in value]
    return value


def build_kwargs(kwargs: dict[str, Any], device: torch.device, gen: torch.Generator) -> Any:
    return {k: build_value(v, device, gen) for k, v in kwargs.items()}


def build_tensor(spec: dict[str, Any], device: torch.device, gen: torch.Generator) -> torch.Tensor:
    shape = spec["shape"]
    if not all(isinstance(s, int) for s in shape):
        raise InputError(f"symbolic shape {shape}")
    dtype = _dtype(str(spec["dtype"]))
    stride = spec.get("stride") or _contiguous(shape)
    target = device if spec.get("device") != "meta" else torch.device("meta")
    # Enough storage for every element the strides reach (overlapping strides included).
    numel = 1 + sum((s - 1) * st for s, st in zip(shape, stride, strict=True)) if all(shape) else 0
    if dtype == torch.bool and isinstance(spec.get("true"), int):
        return _mask(shape, stride, int(spec["true"]), gen).to(target)
    flat = _data(numel, dtype, spec, gen)
    return flat.to(target).as_strided(shape, stride)


def _mask(shape: list[int], stride: list[int], true: int, gen: torch.Generator) -> torch.Tensor:
    """A bool tensor with exactly ``true`` true elements, laid out with the recorded strides."""
    n = 1
    for size in shape:
        n *= size
    if not 0 <= true <= n:
        raise InputError(f"{true} true values recorded for a bool tensor of {n} elements")
    values = torch.zeros(n, dtype=torch.bool)
    values[torch.randperm(n, generator=gen)[:true]] = True
    values = values.reshape(shape)
    if list(stride) == _contiguous(shape):
        return values
    # The strides reach the data in another order (or overlap): written element by element
    # through the view, an overlapping layout could lose trues, so it keeps contiguous data.
    try:
        out = torch.empty_strided(shape, stride, dtype=torch.bool)
        out.copy_(values)
    except RuntimeError:
        return values
    return out if int(out.sum()) == true else values


def _data(n: int, dtype: torch.dtype, spec: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(n, generator=gen, dtype=torch.float32).to(dtype)
    lo, hi = int(spec.get("min", 0)), int(spec.get("max", 1))
    return torch.randint(lo, hi + 1, (n,), generator=gen, dtype=torch.int64).to(dtype)


def _contiguous(shape: list[int]) -> list[int]:
    stride, acc = [], 1
    for size in reversed(shape):
        stride.append(acc)
        acc *= max(size, 1)
    return stride[::-1]


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise InputError(f"unknown dtype {name!r}")
    return dtype


def _tagged(tag: str, text: str, device: torch.device) -> Any:
    if tag == "float":
        return float(text)
    if tag == "device":
        return torch.device("meta") if text.startswith("meta") else device
    if tag in ("dtype", "layout", "memory_format"):
        obj = getattr(torch, text, None)
        if obj is None:
            raise InputError(f"unknown torch.{text}")
        return obj
    raise InputError(f"cannot rebuild a {text} argument")


# Class targets mix real classes with ``ignore_index`` (-100 by default): the recorded range
# [-100, C) would draw invalid classes in between, so negative targets become class 0.
_CLASS_TARGET_ARG = {
    "aten.nll_loss_forward": 1,
    "aten.nll_loss_backward": 2,
    "aten.nll_loss2d_forward": 1,
    "aten.nll_loss2d_backward": 2,
}


# Ops whose first output holds the distinct values of the flattened input (no ``dim``): its
# recorded length is how many there were, which random data within the range does not keep.
_UNIQUE = frozenset({"aten.unique_consecutive", "aten._unique2", "aten._unique"})


def apply_constraints(
    item: dict[str, Any], args: list[Any], kwargs: dict[str, Any], gen: torch.Generator
) -> None:
    """Op-specific input constraints that a value range cannot express (``item``: the
    recorded signature, with its outputs)."""
    packet = ".".join(str(item["op"]).split(".")[:2])
    pos = _CLASS_TARGET_ARG.get(packet)
    if pos is not None and pos < len(args) and isinstance(args[pos], torch.Tensor):
        args[pos].clamp_(min=0)
    flattened = kwargs.get("dim") is None and not _positional_dim(packet, args)
    if packet in _UNIQUE and args and isinstance(args[0], torch.Tensor) and flattened:
        specs = tensor_specs(item.get("outputs"))
        recorded = item["inputs"][0] if is_tensor(item["inputs"][0]) else {}
        if specs and len(specs[0][0]) == 1:
            _distinct_runs(args[0], specs[0][0][0], recorded, gen)


def _positional_dim(packet: str, args: list[Any]) -> bool:
    # unique_consecutive(self, return_inverse, return_counts, dim): only it takes a dim.
    return packet == "aten.unique_consecutive" and len(args) > 3 and args[3] is not None


def _distinct_runs(
    x: torch.Tensor, distinct: int, recorded: dict[str, Any], gen: torch.Generator
) -> None:
    """Rewrite ``x`` in place as ``distinct`` runs of increasing values within its range
    (a recorded ``cu_seqlens`` is such a series): unique_consecutive and unique then return
    the recorded number of values. Left random when the range cannot hold that many."""
    n = x.numel()
    if not 0 < distinct <= n or x.dtype == torch.bool or x.device.type == "meta":
        return
    if x.dtype.is_floating_point or x.dtype.is_complex:
        values = torch.arange(distinct, dtype=torch.float32).to(x.dtype)
    else:
        lo, hi = int(recorded.get("min", 0)), int(recorded.get("max", 1))
        span = hi - lo + 1
        if span < distinct:
            return
        if span <= 1 << 20:
            picked = torch.randperm(span, generator=gen)[:distinct].sort().values
        else:
            picked = torch.arange(distinct) * (span // distinct)
        values = (picked + lo).to(x.dtype)
    # Run lengths: every run at least one element, the rest cut at random places.
    cuts = (torch.randperm(n - 1, generator=gen)[: distinct - 1] + 1).sort().values
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), cuts, torch.tensor([n])])
    runs = values.repeat_interleave(bounds.diff()).reshape(x.shape).to(x.device)
    try:
        x.copy_(runs)
    except RuntimeError:  # overlapping strides: no layout holds distinct runs
        return


def resolve_op(name: str) -> Any:
    """``aten.addmm.default`` -> the OpOverload, or InputError naming what is missing.

    Only an OpOverload of the registry counts: an attribute on the way that is something
    else (``aten.add.overloads``, ``aten.__class__.mro``) is no op, whatever it would do
    when called.
    """
    parts = name.split(".")
    if len(parts) != 3 or not all(p.isidentifier() and p.isascii() for p in parts):
        raise InputError(f"not a namespace.op.overload name: {name!r}")
    if any(p.startswith("__") for p in parts):
        raise InputError(f"{name} does not exist in torch {torch.__version__}")
    ns, op, overload = parts
    try:
        found = getattr(getattr(getattr(torch.ops, ns), op), overload)
    except (AttributeError, RuntimeError):
        raise InputError(f"{name} does not exist in torch {torch.__version__}") from None
    if not isinstance(found, torch._ops.OpOverload):
        raise InputError(f"{name} does not exist in torch {torch.__version__}")
    return found


def tensor_specs(value: Any) -> list[tuple[list[int], str]]:
    """(shape, dtype) of every tensor in a recorded output, in order."""
    if is_tensor(value):
        return [(list(value["shape"]), str(value["dtype"]))]
    if isinstance(value, list):
        return [spec for v in value for spec in tensor_specs(v)]
    return []


def actual_specs(value: Any) -> list[tuple[list[int], str]]:
    if isinstance(value, torch.Tensor):
        return [(list(value.shape), str(value.dtype).removeprefix("torch."))]
    if isinstance(value, list | tuple):
        return [spec for v in value for spec in actual_specs(v)]
    return []
