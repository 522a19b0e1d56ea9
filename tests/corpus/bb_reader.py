"""BackendBench's reading of its TorchBench-suite Parquet file, re-implemented for the tests
(BackendBench is not on PyPI). Rules from meta-pytorch/BackendBench:

- ``BackendBench/utils.py`` ``deserialize_args``: strip whitespace and single quotes at both
  ends, unquote ``'f16'``-style dtype abbreviations anywhere, strip quotes again, then
  ``eval`` with ``T``, ``th``/``torch``, ``inf`` and the abbreviations as globals;
  ``_deserialize_tensor(size, dtype, stride=None, device="cuda")`` builds a strided tensor
  as ``make_tensor(extent).as_strided(size, stride)`` with
  ``extent = 1 + sum((size - 1) * stride)``.
- ``BackendBench/data_loaders.py`` ``_load_from_parquet`` + ``op_list_to_benchmark_dict``:
  every row as a dict (pandas ``to_dict("records")``), keep ``included_in_benchmark`` rows,
  group ``args`` by ``op_name``; ``suite/torchbench.py`` resolves ``op_name`` with
  ``eval(f"torch.ops.{op}")``, and so does ``scripts/dataset_filters.py`` for every
  ``runnable`` row (read at meta-pytorch/BackendBench c2d55626 / 0f3f721d / 03e53f8c).

Tensors are built on the meta device here: the shapes and strides are checked the way
BackendBench uses them, without allocating full-size data.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import torch

from kerneltracer.corpus.backendbench import TorchRegistry
from kerneltracer.worker.oplookup import lookup

ABBREVIATIONS = {
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.float32: "f32",
    torch.float16: "f16",
    torch.complex32: "c32",
    torch.complex64: "c64",
    torch.complex128: "c128",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "b8",
    torch.uint8: "u8",
}
_PARSING = {v: k for k, v in ABBREVIATIONS.items()}


class Tensor:
    """What ``T(...)`` stood for: size, dtype, stride (None: contiguous)."""

    def __init__(self, size: Any, dtype: Any, stride: Any = None, device: str = "cuda") -> None:
        self.size, self.dtype, self.stride = list(size), dtype, stride
        if all(isinstance(s, int) for s in self.size) and isinstance(dtype, torch.dtype):
            if stride is None:
                torch.empty(self.size, dtype=dtype, device="meta")
            else:
                extent = 1 + sum((n - 1) * s for n, s in zip(self.size, stride, strict=True))
                base = torch.empty(extent, dtype=dtype, device="meta")
                base.as_strided(self.size, tuple(stride))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensor) and (self.size, self.dtype, self.stride) == (
            other.size,
            other.dtype,
            other.stride,
        )

    def __repr__(self) -> str:
        return f"Tensor({self.size}, {self.dtype}, {self.stride})"


def expected(value: Any) -> Any:
    """What BackendBench should rebuild from a recorded value, worked out from the JSON."""
    if isinstance(value, dict) and "shape" in value:
        shape = value["shape"]
        contiguous = [math.prod(max(n, 1) for n in shape[i + 1 :]) for i in range(len(shape))]
        stride = value.get("stride")
        empty = 0 in shape  # no data to lay out
        stride = None if stride is None or stride == contiguous or empty else tuple(stride)
        return Tensor(shape, getattr(torch, value["dtype"]), stride)
    if isinstance(value, dict) and "$" in value:
        tag, v = value["$"], value["v"]
        if tag == "float":
            return float(v)
        return v.split(":")[0] if tag == "device" else getattr(torch, v)
    if isinstance(value, dict):
        return {k: expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expected(v) for v in value]
    return value


def nan_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list | tuple):
        return [nan_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: nan_safe(v) for k, v in value.items()}
    return value


def deserialize_args(text: str) -> tuple[Any, dict[str, Any]]:
    text = text.strip().strip("'")
    names: dict[str, Any] = {"T": Tensor, "th": torch, "inf": math.inf, "torch": torch}
    names.update(_PARSING)
    for key in _PARSING:
        text = text.replace(f"'{key}'", key)
    args, kwargs = eval(text.strip().strip("'").strip('"'), names)
    return args, kwargs


def benchmark_dict(path: Path) -> dict[str, list[str]]:
    """``op_name`` -> the ``args`` strings the TorchBench suite would run."""
    out: dict[str, list[str]] = {}
    for row in pq.read_table(path).to_pandas().to_dict("records"):
        if row["included_in_benchmark"]:
            out.setdefault(row["op_name"], []).append(row["args"])
    return out


def resolve(op_name: str) -> Any:
    """``torch.ops.<op_name>``, as the suite evaluates it: ``suite/torchbench.py``
    ``TorchBenchOpTest`` and ``scripts/dataset_filters.py`` run
    ``eval(f"torch.ops.{op}")`` (module globals, where ``torch`` is imported)."""
    return eval(f"torch.ops.{op_name}", {"torch": torch})


def runnable_rows(path: Path) -> list[tuple[str, str]]:
    """(op_name, args) of the rows ``scripts/dataset_filters.py`` ``apply_runtime_filter``
    deserialises and evaluates: every ``runnable`` one, included in the benchmark or not."""
    rows = pq.read_table(path).to_pandas().to_dict("records")
    return [(row["op_name"], row["args"]) for row in rows if row["runnable"]]


def registry(*ops: str) -> TorchRegistry:
    """This torch's registry for ``ops``, looked up in-process (the tests import torch)."""
    return TorchRegistry.of_lookup(lookup(list(ops)))
