"""What a cost formula gets (:class:`Call`, one op call in JSON signature form) and gives
(:class:`OpCost`), and the cost categories."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from kerneltracer.costmodel import values

MATMUL = "matmul"
ATTENTION = "attention"
CONV = "conv"
NORM = "norm"
ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
EMBEDDING = "embedding"
MEMORY = "memory"  # copies, concatenation, gathers and scatters: bytes, no arithmetic
CREATION = "creation"  # new tensors (zeros, full, arange); empty ones touch no memory
VIEW = "view"  # views and metadata: no kernel, no bytes
CATEGORIES = (
    MATMUL,
    ATTENTION,
    CONV,
    NORM,
    ELEMENTWISE,
    REDUCTION,
    EMBEDDING,
    MEMORY,
    CREATION,
    VIEW,
)
# Categories whose FLOPs run on the matrix units (tensor cores / matrix cores)
MATRIX_CATEGORIES = frozenset({MATMUL, ATTENTION, CONV})


@dataclass(frozen=True, slots=True)
class OpCost:
    """The estimated cost of one call: FLOPs and bytes moved, from shapes and dtypes."""

    flops: int
    bytes_read: int
    bytes_written: int
    category: str
    dtype: str | None = None  # the dtype it computes in: picks the device's peak

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


class BadCall(Exception):
    """The call's arguments are not what the op's formula expects (or a size is symbolic)."""


@dataclass(frozen=True)
class Call:
    op: str  # "aten.addmm.default"
    inputs: list[Any]
    kwargs: dict[str, Any]
    outputs: list[Any] | None  # None: not recorded (an operator_inp log)

    @property
    def overload(self) -> str:
        parts = self.op.split(".")
        return parts[2] if len(parts) >= 3 else "default"

    def arg(self, i: int, name: str | None = None, default: Any = None) -> Any:
        if i < len(self.inputs):
            return self.inputs[i]
        return self.kwargs.get(name, default) if name is not None else default

    def shape(self, i: int, name: str | None = None) -> list[int]:
        dims = values.shape(self.arg(i, name))
        if dims is None:
            raise BadCall(f"argument {i} is not a tensor with a known shape")
        return dims

    def has_tensor(self, i: int, name: str | None = None) -> bool:
        return values.is_tensor(self.arg(i, name))

    def bytes_in(self) -> int:
        """Every input tensor once (``out=`` tensors are written, not read)."""
        read = [self.inputs, {k: v for k, v in self.kwargs.items() if k != "out"}]
        return _known(values.total_bytes(read))

    def bytes_out(self) -> int:
        if self.outputs is None:
            raise BadCall("outputs not recorded")
        return _known(values.total_bytes(self.outputs))

    def out_numel(self) -> int:
        """Elements of the first output; without outputs, of the inputs' broadcast shape."""
        if self.outputs is not None:
            first = next(values.tensors(self.outputs), None)
            n = values.numel(first)
            if n is None:
                raise BadCall("no output tensor with a known shape")
            return n
        dims = values.broadcast(*[_known(values.shape(t)) for t in values.tensors(self.inputs)])
        if dims is None:
            raise BadCall("inputs do not broadcast")
        return prod(dims)

    def in_numel(self, i: int = 0) -> int:
        return prod(self.shape(i))

    def dtype(self) -> str | None:
        return values.compute_dtype(self.inputs, self.outputs)

    def cost(
        self,
        flops: int,
        category: str,
        read: int | None = None,
        written: int | None = None,
        out_numel: int | None = None,
    ) -> OpCost:
        """An :class:`OpCost`; bytes default to every input read and every output written.

        ``out_numel``: the main output's elements, to estimate the bytes written when the
        outputs were not recorded (in the first input tensor's dtype)."""
        if written is None and self.outputs is None and out_numel is not None:
            first = next(values.tensors(self.inputs), None)
            size = values.DTYPE_BYTES.get(str(first["dtype"])) if first else None
            written = out_numel * _known(size)
        return OpCost(
            flops=int(flops),
            bytes_read=self.bytes_in() if read is None else read,
            bytes_written=self.bytes_out() if written is None else written,
            category=category,
            dtype=self.dtype(),
        )


def _known(value: Any) -> Any:
    if value is None:
        raise BadCall("a tensor has a symbolic size or an unknown dtype")
    return value
