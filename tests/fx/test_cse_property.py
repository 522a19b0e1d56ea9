"""Property test: on random programs mixing pure, random and in-place ops, redundant-op
elimination never changes the results and leaves no duplicate behind."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import fx

from kerneltracer.fx.cse import plan_cse
from kerneltracer.fx.graph_table import node_views
from kerneltracer.fx.passes.redundant_ops import RedundantOpElimination
from kerneltracer.fx.verify import compare

KINDS = ("relu", "sigmoid", "add", "mul", "add_", "view_mul_", "dropout", "clone", "neg")
step = st.tuples(st.sampled_from(KINDS), st.integers(0, 63), st.integers(0, 63))


def build(program: list[tuple[str, int, int]]) -> fx.GraphModule:
    g = fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    # Work on copies: mutating the inputs would leak from one verification run into the next.
    vals = [g.call_method("clone", (x,)), g.call_method("clone", (y,))]
    for kind, i, j in program:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        node: Any
        if kind in ("relu", "sigmoid", "neg"):
            node = g.call_function(getattr(torch, kind), (a,))
        elif kind == "add":
            node = g.call_function(operator.add, (a, b))
        elif kind == "mul":
            node = g.call_method("mul", (a, b))
        elif kind == "add_":
            node = g.call_method("add_", (a, 1.0))
        elif kind == "view_mul_":
            view = g.call_method("view", (a, -1))
            g.call_method("mul_", (view, 0.5))
            node = a
        elif kind == "dropout":
            node = g.call_function(F.dropout, (a, 0.5))
        else:
            node = g.call_method("clone", (a,))
        vals.append(node)
    # Clone at the end so outputs are the values *then*, not aliases mutated later.
    g.output(tuple(g.call_method("clone", (v,)) for v in vals))
    return fx.GraphModule(torch.nn.Module(), g)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14))
def test_cse_preserves_results_on_random_programs(program: list[tuple[str, int, int]]) -> None:
    reference = build(program)
    optimized = build(program)
    planned = len(plan_cse(node_views(optimized)))
    RedundantOpElimination().transform(optimized.graph)
    optimized.recompile()
    assert len(optimized.graph.nodes) == len(reference.graph.nodes) - planned
    assert plan_cse(node_views(optimized)) == []
    inputs = (torch.randn(3, 4), torch.randn(3, 4))
    result = compare(reference, optimized, inputs, rtol=0, atol=0, check_grads=False)
    assert result.ok, (program, result.detail, optimized.code)
