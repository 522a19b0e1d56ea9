"""A profiler op's recorded arguments in the JSON signature form the cost formulas read.

torch.profiler (``record_shapes=True``) writes each host op's arguments positionally as
``Input Dims`` (a shape per argument, ``[]`` for non-tensors; a list of shapes for a tensor
list), ``Input type`` (the tensor's C++ scalar type, ``Scalar``, ``ScalarList``,
``TensorList`` or ``""``) and, in newer versions, ``Concrete Inputs`` (the values of
non-tensor arguments as strings: ``"1"``, ``"[1, 1]"``, ``"False"``). Outputs are never
recorded: formulas fall back to the broadcast / known output size (``Call.outputs`` None).
"""

from __future__ import annotations

import ast
from typing import Any

# C++ scalar type names (c10::toString / typeid names Kineto writes) -> torch dtype names.
_SCALAR_TYPES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "long int": "int64",
    "long": "int64",
    "int64_t": "int64",
    "int": "int32",
    "short int": "int16",
    "short": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
    "c10::complex<c10::Half>": "complex32",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e4m3fnuz": "float8_e4m3fnuz",
    "c10::Float8_e5m2": "float8_e5m2",
    "c10::Float8_e5m2fnuz": "float8_e5m2fnuz",
    "c10::Float8_e8m0fnu": "float8_e8m0fnu",
    "c10::Float4_e2m1fn_x2": "float4_e2m1fn_x2",
    "unsigned short": "uint16",
    "unsigned int": "uint32",
    "unsigned long": "uint64",
}


# Concrete values are short (a stride, a flag); longer text is not parsed at all.
_MAX_CONCRETE = 4096


def dtype_name(type_name: str) -> str | None:
    """``c10::BFloat16`` -> ``bfloat16``; None for a non-tensor type (``Scalar``, ``""``)."""
    return _SCALAR_TYPES.get(type_name)


def signature_inputs(dims: Any, types: Any, concrete: Any = None) -> list[Any] | None:
    """The op's inputs as JSON signature values; None when the args are not a recording
    (absent, or lists of different lengths)."""
    if not isinstance(dims, list) or not isinstance(types, list) or len(dims) != len(types):
        return None
    values = concrete if isinstance(concrete, list) and len(concrete) == len(dims) else None
    return [
        _value(d, t, values[i] if values is not None else None)
        for i, (d, t) in enumerate(zip(dims, types, strict=True))
    ]


def _value(dims: Any, type_name: Any, concrete: Any) -> Any:
    dtype = dtype_name(type_name) if isinstance(type_name, str) else None
    if dtype is not None and _is_shape(dims):
        return {"shape": list(dims), "dtype": dtype}
    if type_name == "TensorList" and isinstance(dims, list) and all(map(_is_shape, dims)):
        # A tensor list records shapes only: its dtype is unknown, so its bytes are too.
        return [{"shape": list(d), "dtype": "unknown"} for d in dims]
    return _concrete(concrete)


def _is_shape(dims: Any) -> bool:
    return isinstance(dims, list) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in dims
    )


def _concrete(text: Any) -> Any:
    """``"[1, 1]"`` -> [1, 1], ``"False"`` -> False, ``"0.5"`` -> 0.5; None if unreadable."""
    if not isinstance(text, str) or not text or len(text) > _MAX_CONCRETE:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, tuple):
        value = list(value)
    return value if isinstance(value, int | float | bool | list) else None


def shapes_text(dims: Any) -> str:
    """Shapes as one stable string for tables: ``[[8, 512], [512, 512]]``."""
    return "" if dims is None else str(dims)


def signature_outputs(op: str, inputs: list[Any]) -> list[Any] | None:
    """The profiler records no outputs; an in-place op (``add_``, ``copy_``) writes its
    first argument, so that is its output. None (unknown) for every other op."""
    name = op.rpartition("::")[2].split(".")[0]
    if name.endswith("_") and not name.endswith("__") and inputs and isinstance(inputs[0], dict):
        return [inputs[0]]
    return None
