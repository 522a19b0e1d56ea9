"""Measurements on live modules: activation bytes saved for backward, step time, peak memory.

Saved activations are counted with ``torch.autograd.graph.saved_tensors_hooks`` while an
``fx.Interpreter`` runs the graph node by node, so each saved storage is attributed to the
node that produced it (the recompute pass's cost model). Non-reentrant
``torch.utils.checkpoint`` keeps its inputs alive in a closure instead of saving them, so the
tensor arguments of every checkpoint call are counted as held too. Parameters and buffers are
not activations and are left out. Storages are counted once, whole.
"""

from __future__ import annotations

import statistics
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils.checkpoint
from torch import fx
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode


@contextmanager
def preserved_state(module: torch.nn.Module) -> Iterator[None]:
    """Run measurements without touching the caller's RNG stream or the module's buffers."""
    saved = [(b, b.detach().clone()) for b in module.buffers()]
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            with torch.no_grad():
                for buf, value in saved:
                    buf.copy_(value)


def state_storages(module: torch.nn.Module) -> frozenset[int]:
    tensors = [*module.parameters(), *module.buffers()]
    return frozenset(t.untyped_storage().data_ptr() for t in tensors)


def tensor_leaves(value: Any) -> list[torch.Tensor]:
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def scalar_loss(output: Any) -> torch.Tensor:
    """A loss that gives every output element its own gradient (a weighted sum)."""
    terms = []
    for t in tensor_leaves(output):
        if t.is_floating_point() and t.requires_grad:
            weights = torch.linspace(0.5, 1.5, t.numel(), device=t.device, dtype=t.dtype)
            terms.append((t.reshape(-1) * weights).sum())
    if not terms:
        raise ValueError("the model has no floating-point output that requires grad")
    return torch.stack(terms).sum()


@dataclass
class SavedActivations:
    """Bytes the autograd graph holds for backward after one forward pass."""

    total_bytes: int = 0
    by_node: dict[str, int] = field(default_factory=dict)
    # Deterministic recompute-cost estimate per node: FLOPs (matmuls, convs, attention) plus
    # one operation per output element (elementwise work). Wall time per node would be the
    # truth but is too noisy on shared machines to plan with.
    node_cost: dict[str, float] = field(default_factory=dict)


class _Recorder(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule, exclude: frozenset[int]) -> None:
        super().__init__(gm)
        self.exclude = exclude
        # The allocator hands a freed block's address to later tensors, so an address alone
        # names a storage only while that storage lives: each producer keeps a weak reference
        # to the storage it made, and a dead one gives its address to the next producer.
        self.producer: dict[int, tuple[str, weakref.ref[torch.UntypedStorage]]] = {}
        self.saved: dict[int, int] = {}
        self.cost: dict[str, float] = {}

    def run_node(self, n: fx.Node) -> Any:
        counter = FlopCounterMode(display=False)
        with counter:
            result = super().run_node(n)
        leaves = tensor_leaves(result)
        self.cost[n.name] = float(counter.get_total_flops() + sum(t.numel() for t in leaves))
        for t in leaves:
            storage = t.untyped_storage()
            known = self.producer.get(storage.data_ptr())
            if known is None or known[1]() is not storage:
                self.producer[storage.data_ptr()] = (n.name, weakref.ref(storage))
        return result

    def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
        if target is torch.utils.checkpoint.checkpoint:
            for t in tensor_leaves(args[1:]):
                self.hold(t)
        return super().call_function(target, args, kwargs)

    def hold(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in self.exclude:
            self.saved[storage.data_ptr()] = storage.nbytes()
        return t


def _flat_inputs(gm: fx.GraphModule, inputs: tuple[Any, ...]) -> list[Any]:
    """Placeholder values for ``inputs`` (exported modules flatten a pytree of args)."""
    codegen = gm.graph._codegen
    process = getattr(codegen, "process_inputs", None)
    if callable(process) and getattr(codegen, "pytree_info", None) is not None:
        return list(process(*inputs))
    return list(inputs)


def saved_activations(
    gm: fx.GraphModule, inputs: tuple[Any, ...], exclude: frozenset[int] = frozenset()
) -> SavedActivations:
    """Run one forward pass of ``gm`` and count what autograd keeps for backward."""
    recorder = _Recorder(gm, exclude)
    with (
        preserved_state(gm),
        torch.enable_grad(),
        torch.autograd.graph.saved_tensors_hooks(recorder.hold, lambda t: t),
    ):
        recorder.run(*_flat_inputs(gm, inputs))
    by_node: dict[str, int] = {}
    for ptr, nbytes in recorder.saved.items():
        name = recorder.producer[ptr][0] if ptr in recorder.producer else "<input>"
        by_node[name] = by_node.get(name, 0) + nbytes
    return SavedActivations(sum(recorder.saved.values()), by_node, recorder.cost)


@dataclass(frozen=True)
class TimeStats:
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    runs: int


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(module: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    scalar_loss(module(*inputs)).backward()


def time_train_steps(
    modules: Sequence[torch.nn.Module],
    inputs: tuple[Any, ...],
    device: torch.device,
    runs: int = 20,
    warmup: int = 3,
) -> list[TimeStats]:
    """Forward + backward wall time of each module, interleaved step by step (in alternating
    order) so that noise from other processes and cache warmth hit all of them alike;
    gradients are cleared after every step."""
    times: list[list[float]] = [[] for _ in modules]
    pairs = list(zip(modules, times, strict=True))
    with preserved_state(modules[0]):
        for i in range(warmup + runs):
            for module, bucket in pairs if i % 2 == 0 else reversed(pairs):
                _sync(device)
                start = time.perf_counter()
                train_step(module, inputs)
                _sync(device)
                if i >= warmup:
                    bucket.append((time.perf_counter() - start) * 1000)
                module.zero_grad(set_to_none=True)
    return [_stats(bucket) for bucket in times]


def _stats(times: list[float]) -> TimeStats:
    return TimeStats(
        median_ms=statistics.median(times),
        mean_ms=statistics.fmean(times),
        std_ms=statistics.pstdev(times),
        min_ms=min(times),
        max_ms=max(times),
        runs=len(times),
    )


def cuda_peak_bytes(module: torch.nn.Module, inputs: tuple[Any, ...], device: torch.device) -> int:
    """Peak CUDA memory above the starting point over one forward + backward."""
    with preserved_state(module):
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        train_step(module, inputs)
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - base
        module.zero_grad(set_to_none=True)
    return int(peak)
