"""The contract every FX optimisation pass follows: analyze, transform, verify, name.

Passes work in place on ``graph`` (the graph of a ``GraphModule``, reachable as
``graph.owning_module``); the optimizer keeps a copy of the module from before each pass to
roll back to, so a pass never has to undo its own work.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import fx


@dataclass(frozen=True)
class PassContext:
    """What a pass may need beyond the graph: example inputs to measure costs with."""

    example_inputs: tuple[Any, ...]
    device: torch.device
    # Parameters and buffers of the model: storage the pass must not count as activations.
    state_storages: frozenset[int] = field(default_factory=frozenset)


class OptimizationPass(ABC):
    """Base class for all optimisation passes."""

    # Unique name of the pass, as used in ``optimize(passes=[...])`` and reports.
    name: ClassVar[str]

    def bind(self, context: PassContext) -> None:  # noqa: B027 - optional hook
        """Called before :meth:`analyze`; passes with a cost model keep the inputs here."""

    @abstractmethod
    def analyze(self, graph: fx.Graph) -> dict[str, Any]:
        """Find opportunities without changing the graph.

        Returns a dict with ``opportunities`` (a list of JSON-able descriptions), ``stats``
        and ``safe`` (whether :meth:`transform` may run).
        """

    @abstractmethod
    def transform(self, graph: fx.Graph) -> fx.Graph:
        """Apply the optimisation in place and return the same graph."""

    def verify(self, graph: fx.Graph) -> bool:
        """Structural self-check after :meth:`transform`: the graph must lint."""
        try:
            graph.lint()
        except (RuntimeError, AssertionError):
            return False
        return True


def owning_module(graph: fx.Graph) -> fx.GraphModule:
    module = graph.owning_module
    if not isinstance(module, fx.GraphModule):
        raise TypeError("the pass needs a graph that belongs to a GraphModule")
    return module


def count_ops(
    graph: fx.Graph, ops: Sequence[str] = ("call_function", "call_method", "call_module")
) -> int:
    return sum(1 for n in graph.nodes if n.op in ops)
