"""Numerical verification: same forward outputs, gradients and buffer updates (rtol/atol).

Both modules run from the same RNG seed (so dropout draws the same masks) with the model's
buffers restored between runs (so BatchNorm's running stats are unchanged). Gradients are
taken with ``torch.autograd.grad`` with respect to the *reference's* parameters: optimised
graph modules share those parameter objects, and ``.grad`` fields are left untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kerneltracer.fx.measure import preserved_state, scalar_loss, tensor_leaves


@dataclass(frozen=True)
class Verification:
    ok: bool
    detail: str
    max_abs_diff: float = 0.0


@dataclass(frozen=True)
class _Run:
    outputs: list[torch.Tensor]
    grads: list[torch.Tensor | None]
    buffers: list[torch.Tensor]  # the model's buffers after the forward (running stats)


def _run(
    module: Callable[..., Any],
    inputs: tuple[Any, ...],
    reference: torch.nn.Module,
    params: list[torch.nn.Parameter],
    seed: int,
    grads: bool,
) -> _Run:
    torch.manual_seed(seed)
    got: list[torch.Tensor | None] = []
    with torch.enable_grad() if grads else torch.no_grad():
        output = module(*inputs)
        # Optimised modules share the reference's buffers, so this sees their updates too.
        buffers = [b.detach().clone() for b in reference.buffers()]
        if grads and params:
            got = list(torch.autograd.grad(scalar_loss(output), params, allow_unused=True))
    return _Run([t.detach() for t in tensor_leaves(output)], got, buffers)


def compare(
    reference: torch.nn.Module,
    candidate: Callable[..., Any],
    inputs: tuple[Any, ...],
    rtol: float = 1e-5,
    atol: float = 1e-6,
    check_grads: bool = True,
    seed: int = 0,
) -> Verification:
    """Run both on ``inputs``; report the first output or gradient that differs."""
    params = [p for p in reference.parameters() if p.requires_grad]
    with preserved_state(reference):
        want = _run(reference, inputs, reference, params, seed, check_grads)
    with preserved_state(reference):
        got = _run(candidate, inputs, reference, params, seed, check_grads)
    if len(want.outputs) != len(got.outputs):
        return Verification(
            False, f"{len(got.outputs)} output tensors, expected {len(want.outputs)}"
        )
    worst = 0.0
    for i, (a, b) in enumerate(zip(want.outputs, got.outputs, strict=True)):
        problem, diff = _mismatch(a, b, rtol, atol)
        worst = max(worst, diff)
        if problem:
            return Verification(False, f"output {i}: {problem}", diff)
    names = [n for n, p in reference.named_parameters() if p.requires_grad]
    for name, ga, gb in zip(names, want.grads, got.grads, strict=False):
        if (ga is None) != (gb is None):
            return Verification(False, f"gradient of {name}: present in only one model")
        if ga is None or gb is None:
            continue
        problem, diff = _mismatch(ga, gb, rtol, atol)
        worst = max(worst, diff)
        if problem:
            return Verification(False, f"gradient of {name}: {problem}", diff)
    for name, ba, bb in zip(
        [n for n, _ in reference.named_buffers()], want.buffers, got.buffers, strict=True
    ):
        problem, _ = _mismatch(ba, bb, rtol, atol)
        if problem:
            return Verification(False, f"buffer {name} after forward: {problem}")
    what = "outputs and gradients" if check_grads and params else "outputs"
    return Verification(True, f"{what} match (max abs diff {worst:.3g})", worst)


def _mismatch(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> tuple[str, float]:
    if a.shape != b.shape:
        return f"shape {tuple(b.shape)} != {tuple(a.shape)}", float("inf")
    if a.dtype != b.dtype:
        return f"dtype {b.dtype} != {a.dtype}", float("inf")
    if not a.is_floating_point():
        return ("values differ", 1.0) if not torch.equal(a, b) else ("", 0.0)
    diff = float((a.double() - b.double()).abs().max()) if a.numel() else 0.0
    if torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return "", diff
    return f"max abs diff {diff:.3g} exceeds rtol={rtol:g}, atol={atol:g}", diff
