"""The TorchDispatchMode behind the torch_dispatch tracer (imports torch: worker only).

Signatures are hashable tuples built straight from tensor metadata (``torch.Size`` is a
tuple, dtypes and devices hash); turning them into JSON happens once per unique signature.

Besides the signature, each entry keeps what replaying the call needs and the signature
does not say: the value range of every integer input tensor (indices of embedding, gather,
index, nll_loss must stay in bounds), merged over calls, and the module path of every call
(maintained by global module hooks, see :class:`ModulePaths`; an 80-layer model gives a
signature one path per layer, written with layer indices folded, see
:mod:`kerneltracer.core.modulepaths`). Bool tensors keep their count of true values
(``true``) from the first call, the one whose outputs are recorded: a boolean mask decides
the output shape of ``index``, ``masked_select``, ``nonzero``, and how much of its source
``masked_scatter`` reads.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.utils._python_dispatch import TorchDispatchMode

from kerneltracer.core.modulepaths import bounded

_TENSOR = "T"
_SEQ = "L"
_TAG = "$"  # a scalar that JSON has no type for: dtype, device, layout, memory format
_PLAIN = (int, float, bool, str, type(None))
_TAGGED = (torch.dtype, torch.device, torch.layout, torch.memory_format)

# Dispatched only for tensor subclasses (fake tensors ask their device through it): never
# an op a real run executes, so a fake-weight trace leaves it out like a real one does.
_NOT_OPS = frozenset({torch.ops.prim.device.default})

# Entry slots: [count, outputs signature, integer ranges, module path -> calls]
_COUNT, _OUTS, _RANGES, _MODULES = range(4)


class ModulePaths:
    """The qualified name of the innermost module running, from global forward hooks."""

    def __init__(self, model: Any = None) -> None:
        self.names: dict[int, str] = {}
        if model is not None:
            self.names = {id(m): name or "" for name, m in model.named_modules()}
        self.stack: list[str] = []
        self._handles: list[Any] = []

    def current(self) -> str:
        return self.stack[-1] if self.stack else ""

    def __enter__(self) -> ModulePaths:
        from torch.nn.modules import module as nn_module

        self._handles = [
            nn_module.register_module_forward_pre_hook(self._push),
            nn_module.register_module_forward_hook(self._pop),
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self.stack.clear()

    def _push(self, module: Any, _args: Any) -> None:
        self.stack.append(self.names.get(id(module), f"<{type(module).__name__}>"))

    def _pop(self, _module: Any, _args: Any, _out: Any) -> None:
        if self.stack:
            self.stack.pop()


class DispatchRecorder(TorchDispatchMode):
    def __init__(self, record_strides: bool = True, modules: ModulePaths | None = None) -> None:
        super().__init__()
        self.record_strides = record_strides
        self.modules = modules
        self.phase = "forward"
        # (phase, op, args signature, kwargs signature) → [count, outs, ranges, modules]
        self.table: dict[Any, list[Any]] = {}

    def enter_backward(self) -> None:
        self.phase = "backward"

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if func in _NOT_OPS:
            return out
        ranges: list[Any] = []
        sig = self._sig
        key = (
            self.phase,
            func,
            tuple([sig(a, ranges) for a in args]),
            tuple([(k, sig(v, ranges)) for k, v in kwargs.items()]) if kwargs else (),
        )
        path = self.modules.current() if self.modules is not None else ""
        entry = self.table.get(key)
        if entry is None:
            self.table[key] = [1, sig(out, None), ranges, {path: 1}]
            return out
        entry[_COUNT] += 1
        if ranges:
            entry[_RANGES] = [_merge(a, b) for a, b in zip(entry[_RANGES], ranges, strict=True)]
        mods = entry[_MODULES]
        # Every call keeps its path: the table is bounded by the model's modules, and rows
        # fold layer indices when written (rows_of), never by dropping calls here.
        mods[path] = mods.get(path, 0) + 1
        return out

    def _sig(self, value: Any, ranges: list[Any] | None) -> Any:
        if isinstance(value, torch.Tensor):
            if ranges is not None and _is_integer(value.dtype):
                ranges.append(_range(value))
            elif ranges is not None and value.dtype == torch.bool:
                ranges.append(_true_count(value))
            if self.record_strides and value.layout == torch.strided:
                return (_TENSOR, value.shape, value.dtype, value.device.type, value.stride())
            return (_TENSOR, value.shape, value.dtype, value.device.type, None)
        if isinstance(value, _PLAIN):
            return value
        if isinstance(value, list | tuple):
            return (_SEQ, *[self._sig(v, ranges) for v in value])
        if isinstance(value, _TAGGED):
            return (_TAG, type(value).__name__, str(value).removeprefix("torch."))
        return (_TAG, "opaque", type(value).__name__)


def _is_integer(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def _range(t: torch.Tensor) -> tuple[int, int] | None:
    if t.numel() == 0 or t.device.type == "meta" or t.is_sparse:
        return None
    try:
        lo, hi = torch.aminmax(t)
        return int(lo), int(hi)
    except (RuntimeError, NotImplementedError):  # fake / functional tensors have no data
        return None


def _true_count(t: torch.Tensor) -> int | None:
    # A fake tensor has no values, and counting them would dispatch a decomposition
    # (sum, _to_copy) that lands in the trace.
    if t.device.type == "meta" or t.is_sparse or is_fake(t):
        return None
    try:
        return int(torch.count_nonzero(t))
    except (RuntimeError, NotImplementedError):  # fake / functional tensors have no data
        return None


Span = tuple[int, int] | int | None


def _merge(a: Span, b: Span) -> Span:
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, int) or isinstance(b, int):
        return a  # a true count: the first call's, which the recorded outputs match
    return min(a[0], b[0]), max(a[1], b[1])


def _json(sig: Any, ranges: Any = None) -> Any:
    """JSON of one signature part; integer tensors take their range from the ``ranges`` iterator."""
    if isinstance(sig, tuple) and sig and sig[0] == _TENSOR:
        _, shape, dtype, device, stride = sig
        out: dict[str, Any] = {
            "shape": [_int(s) for s in shape],
            "dtype": str(dtype).removeprefix("torch."),
            "device": device,
        }
        if stride is not None:
            out["stride"] = [_int(s) for s in stride]
        if ranges is not None and _is_integer(dtype):
            span = next(ranges, None)
            if isinstance(span, tuple):
                out["min"], out["max"] = span
        elif ranges is not None and dtype == torch.bool:
            count = next(ranges, None)
            if isinstance(count, int):
                out["true"] = count
        return out
    if isinstance(sig, tuple) and sig and sig[0] == _SEQ:
        return [_json(s, ranges) for s in sig[1:]]
    if isinstance(sig, tuple) and sig and sig[0] == _TAG:
        return {_TAG: sig[1], "v": sig[2]}
    if isinstance(sig, float) and (sig != sig or sig in (float("inf"), float("-inf"))):
        return {_TAG: "float", "v": str(sig)}  # NaN and infinities are not JSON
    return sig


def _int(v: Any) -> Any:
    try:
        return int(v)
    except (TypeError, ValueError):
        return str(v)  # symbolic sizes


def rows_of(table: dict[Any, list[Any]]) -> list[dict[str, Any]]:
    rows = []
    for (phase, func, args, kwargs), (count, outs, ranges, modules) in table.items():
        it = iter(ranges)
        rows.append(
            {
                "op": str(func),
                "phase": phase,
                "count": count,
                "inputs": [_json(a, it) for a in args],
                "kwargs": {k: _json(v, it) for k, v in kwargs},
                "outputs": _json(outs)
                if isinstance(outs, tuple) and outs[:1] == (_SEQ,)
                else [_json(outs)],
                "modules": dict(sorted(bounded(modules).items(), key=lambda kv: (-kv[1], kv[0]))),
            }
        )
    rows.sort(key=lambda r: (r["phase"] != "forward", r["op"], -r["count"]))
    return rows
