"""The TorchDispatchMode behind the torch_dispatch tracer (imports torch: worker only).

Signatures are hashable tuples built straight from tensor metadata (``torch.Size`` is a
tuple, dtypes and devices hash); turning them into JSON happens once per unique signature.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_TENSOR = "T"
_SEQ = "L"
_PLAIN = (int, float, bool, str, type(None))


class DispatchRecorder(TorchDispatchMode):
    def __init__(self, record_strides: bool = True) -> None:
        super().__init__()
        self.record_strides = record_strides
        self.phase = "forward"
        # (phase, op, args signature, kwargs signature) → [count, outputs signature]
        self.table: dict[Any, list[Any]] = {}

    def enter_backward(self) -> None:
        self.phase = "backward"

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        sig = self._sig
        key = (
            self.phase,
            func,
            tuple([sig(a) for a in args]),
            tuple([(k, sig(v)) for k, v in kwargs.items()]) if kwargs else (),
        )
        entry = self.table.get(key)
        if entry is None:
            self.table[key] = [1, sig(out)]
        else:
            entry[0] += 1
        return out

    def _sig(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if self.record_strides and value.layout == torch.strided:
                return (_TENSOR, value.shape, value.dtype, value.device.type, value.stride())
            return (_TENSOR, value.shape, value.dtype, value.device.type, None)
        if isinstance(value, _PLAIN):
            return value
        if isinstance(value, list | tuple):
            return (_SEQ, *[self._sig(v) for v in value])
        if isinstance(value, torch.dtype | torch.device | torch.layout | torch.memory_format):
            return str(value)
        return f"<{type(value).__name__}>"


def _json(sig: Any) -> Any:
    if isinstance(sig, tuple) and sig and sig[0] == _TENSOR:
        _, shape, dtype, device, stride = sig
        out: dict[str, Any] = {
            "shape": [_int(s) for s in shape],
            "dtype": str(dtype).removeprefix("torch."),
            "device": device,
        }
        if stride is not None:
            out["stride"] = [_int(s) for s in stride]
        return out
    if isinstance(sig, tuple) and sig and sig[0] == _SEQ:
        return [_json(s) for s in sig[1:]]
    if isinstance(sig, float) and sig != sig:  # NaN is not JSON
        return "nan"
    if isinstance(sig, float) and sig in (float("inf"), float("-inf")):
        return str(sig)
    return sig


def _int(v: Any) -> Any:
    try:
        return int(v)
    except (TypeError, ValueError):
        return str(v)  # symbolic sizes


def rows_of(table: dict[Any, list[Any]]) -> list[dict[str, Any]]:
    rows = []
    for (phase, func, args, kwargs), (count, outs) in table.items():
        rows.append(
            {
                "op": str(func),
                "phase": phase,
                "count": count,
                "inputs": [_json(a) for a in args],
                "kwargs": {k: _json(v) for k, v in kwargs},
                "outputs": _json(outs)
                if isinstance(outs, tuple) and outs[:1] == (_SEQ,)
                else [_json(outs)],
            }
        )
    rows.sort(key=lambda r: (r["phase"] != "forward", r["op"], -r["count"]))
    return rows
