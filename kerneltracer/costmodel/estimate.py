"""``estimate(op, inputs, kwargs, outputs)``: the cost of one call, or None when unknown.

An op is known when a formula is registered for it (:mod:`.formulas_dense`,
:mod:`.formulas_simple`), by its name without overload; an in-place op (``add_``) uses its
out-of-place formula. None means "no estimate": the op has no formula (:func:`is_known` is
False), or its arguments are not what the formula expects (a symbolic size, a dtype the
table lacks). Callers count and list those calls; they are never taken as free.
"""

from __future__ import annotations

from typing import Any

from kerneltracer.costmodel import formulas_dense, formulas_simple
from kerneltracer.costmodel.call import BadCall, Call, OpCost

# FSDP2's copy-in / copy-out ops (``fsdp.*``) are plain copies, costed like aten's.
_NAMESPACES = ("aten", "prim", "fsdp")
# Per-call FLOPs and bytes are int64 columns everywhere they are written; a call past that
# (2^63 FLOPs, 8 EB) is no real call, only damaged shapes, and gets no estimate.
INT64_MAX = 2**63 - 1
FORMULAS = {**formulas_simple.FORMULAS, **formulas_dense.FORMULAS}


def _formula(op: str) -> formulas_dense.Formula | None:
    parts = op.split(".")
    if len(parts) < 2 or parts[0] not in _NAMESPACES:
        return None
    name = parts[1]
    found = FORMULAS.get(name)
    if found is None and name.endswith("_") and not name.endswith("__"):
        found = FORMULAS.get(name[:-1])
    return found


def is_known(op: str) -> bool:
    """Whether ``op`` (``aten.mm.default``) has a cost formula."""
    return _formula(op) is not None


def estimate(
    op: str, inputs: list[Any], kwargs: dict[str, Any], outputs: list[Any] | None
) -> OpCost | None:
    """FLOPs and bytes of one call of ``op`` with these (JSON signature form) arguments."""
    formula = _formula(op)
    if formula is None:
        return None
    try:
        cost = formula(Call(op, inputs, kwargs or {}, outputs))
    except (BadCall, IndexError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if cost is not None and (cost.flops > INT64_MAX or cost.bytes > INT64_MAX):
        return None
    return cost


def estimate_gemm_like(
    op: str, inputs: list[Any], kwargs: dict[str, Any], outputs: list[Any] | None
) -> OpCost | None:
    """The cost of one call of ``op`` read as a GEMM (:func:`.formulas_dense.gemm_like`),
    for an op the caller knows is one (its kernels are GEMMs); None when no two input
    tensors multiply."""
    try:
        cost = formulas_dense.gemm_like(Call(op, inputs, kwargs or {}, outputs))
    except (BadCall, IndexError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return None if cost.flops > INT64_MAX or cost.bytes > INT64_MAX else cost
