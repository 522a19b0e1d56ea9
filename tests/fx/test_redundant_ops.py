"""Redundant-op elimination on the seed's test models, through GraphOptimizer."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch
from torch import fx

from kerneltracer.errors import VerificationError
from kerneltracer.fx.models import (
    CNNWithBN,
    DeepNet,
    RedundantModel,
    ResNetBlock,
    SimpleMLP,
)
from kerneltracer.fx.optimizer import GraphOptimizer
from kerneltracer.fx.passes.base import OptimizationPass
from kerneltracer.fx.passes.redundant_ops import RedundantOpElimination
from tests.support.fx_models import ImpureRepeats


def targets(gm: fx.GraphModule) -> Counter[str]:
    return Counter(
        getattr(n.target, "__name__", str(n.target))
        for n in gm.graph.nodes
        if n.op.startswith("call_")
    )


def optimize(model: torch.nn.Module, shape: tuple[int, ...], *passes: Any) -> GraphOptimizer:
    torch.manual_seed(0)
    opt = GraphOptimizer(model, example_inputs=(torch.randn(*shape),))
    opt.optimize(list(passes) or ["redundant_ops"])
    return opt


def test_redundant_model_duplicates_are_removed() -> None:
    opt = optimize(RedundantModel(), (2, 3, 8, 8))
    before, after = targets(opt.original), targets(opt.optimized)
    assert len(opt.original.graph.nodes) == 15
    assert len(opt.optimized.graph.nodes) == 10
    for name in ("conv", "relu", "sigmoid", "mean", "mul"):
        assert (before[name], after[name]) == (2, 1), name
    record = opt.history[0]
    assert (record.name, record.nodes_before, record.nodes_after) == ("redundant_ops", 15, 10)
    assert "outputs and gradients match" in record.verification
    assert opt.verify_correctness()


@pytest.mark.parametrize(("model", "shape", "nodes"), [
    (SimpleMLP(32, 16, 4), (4, 32), 7),
    (CNNWithBN(), (2, 3, 8, 8), 10),
    (ResNetBlock(), (2, 8, 8, 8), 9),
    (DeepNet(16, 10), (4, 16), 43),
])  # fmt: skip
def test_models_without_redundancy_are_unchanged(
    model: torch.nn.Module, shape: tuple[int, ...], nodes: int
) -> None:
    opt = optimize(model, shape)
    assert len(opt.original.graph.nodes) == len(opt.optimized.graph.nodes) == nodes
    assert opt.history[0].stats["redundant"] == 0
    assert opt.verify_correctness()


def test_batchnorm_dropout_rng_and_inplace_are_left_alone_in_train_mode() -> None:
    opt = optimize(ImpureRepeats().train(), (2, 4, 8, 8))
    assert targets(opt.optimized) == targets(opt.original)
    after = targets(opt.optimized)
    assert (after["bn"], after["drop"], after["dropout"], after["rand_like"], after["relu"]) == (
        2,
        2,
        2,
        2,
        2,
    )


def test_eval_mode_batchnorm_and_dropout_modules_are_pure() -> None:
    opt = optimize(ImpureRepeats().eval(), (2, 4, 8, 8))
    after = targets(opt.optimized)
    # BatchNorm reads running stats and Dropout is the identity in eval mode; F.dropout
    # defaults to training=True, rand_like is random and relu(y) straddles y.add_(1).
    assert (after["bn"], after["drop"], after["dropout"], after["rand_like"], after["relu"]) == (
        1,
        1,
        2,
        2,
        2,
    )
    assert opt.history[0].nodes_before - opt.history[0].nodes_after == 2


def test_batchnorm_running_stats_untouched_by_verification() -> None:
    model = CNNWithBN().train()
    mean = model.bn.running_mean.clone()
    optimize(model, (2, 3, 8, 8))
    assert torch.equal(model.bn.running_mean, mean)


class _ReluToSigmoid(OptimizationPass):
    """Deliberately wrong: changes the forward output."""

    @property
    def name(self) -> str:
        return "relu_to_sigmoid"

    def analyze(self, graph: fx.Graph) -> dict[str, Any]:
        return {"opportunities": [], "stats": {}, "safe": True}

    def transform(self, graph: fx.Graph) -> fx.Graph:
        for node in graph.nodes:
            if node.op == "call_function" and node.target is torch.nn.functional.relu:
                node.target = torch.sigmoid
                node.kwargs = {}
        return graph


class _DetachFirstLayer(_ReluToSigmoid):
    """Deliberately wrong in backward only: same outputs, fc1 loses its gradient."""

    @property
    def name(self) -> str:
        return "detach_fc1"

    def transform(self, graph: fx.Graph) -> fx.Graph:
        fc1 = next(n for n in graph.nodes if n.target == "fc1")
        with graph.inserting_after(fc1):
            detached = graph.call_method("detach", (fc1,))
        fc1.replace_all_uses_with(detached, delete_user_cb=lambda u: u is not detached)
        return graph


class _NaiveCSE(_ReluToSigmoid):
    """Merges repeated calls without asking whether they are pure (dropout included)."""

    @property
    def name(self) -> str:
        return "naive_cse"

    def transform(self, graph: fx.Graph) -> fx.Graph:
        seen: dict[Any, fx.Node] = {}
        for node in list(graph.nodes):
            if node.op in ("call_function", "call_module", "call_method"):
                key = (node.op, node.target, node.args, tuple(sorted(node.kwargs.items())))
                if key in seen:
                    node.replace_all_uses_with(seen[key])
                    graph.erase_node(node)
                else:
                    seen[key] = node
        return graph


class _UseBeforeDefine(_ReluToSigmoid):
    """Deliberately malformed graph: fc2 reads a node defined after it."""

    @property
    def name(self) -> str:
        return "use_before_define"

    def transform(self, graph: fx.Graph) -> fx.Graph:
        fc2 = next(n for n in graph.nodes if n.target == "fc2")
        fc3 = next(n for n in graph.nodes if n.target == "fc3")
        fc2.args = (fc3,)
        return graph


class _Crashes(_ReluToSigmoid):
    """Deliberately broken module: the graph lints but fails when run."""

    @property
    def name(self) -> str:
        return "crashes"

    def transform(self, graph: fx.Graph) -> fx.Graph:
        fc1 = next(n for n in graph.nodes if n.target == "fc1")
        with graph.inserting_after(fc1):
            bad = graph.call_function(torch.reshape, (fc1, (7, -1, 3)))
        fc1.replace_all_uses_with(bad, delete_user_cb=lambda u: u is not bad)
        return graph


class _TwiceBN(torch.nn.Module):
    """Train-mode BatchNorm applied twice: outputs use batch stats, buffers move twice."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x) + self.bn(x)


@pytest.mark.parametrize(("bad", "model", "shape", "message"), [
    (_ReluToSigmoid(), SimpleMLP(32, 16, 4), (4, 32), "output 0: max abs diff"),
    (_DetachFirstLayer(), SimpleMLP(32, 16, 4), (4, 32),
     "gradient of fc1.weight: present in only one model"),
    (_NaiveCSE(), ImpureRepeats().train(), (2, 4, 8, 8), "output 0"),
    (_NaiveCSE(), _TwiceBN().train(), (2, 4, 8, 8), "buffer bn.running_mean after forward"),
    (_UseBeforeDefine(), SimpleMLP(32, 16, 4), (4, 32), "fails its own check"),
    (_Crashes(), SimpleMLP(32, 16, 4), (4, 32), "the optimised module fails to run"),
])  # fmt: skip
def test_wrong_pass_is_rolled_back_with_an_error_naming_it(
    bad: OptimizationPass, model: torch.nn.Module, shape: tuple[int, ...], message: str
) -> None:
    torch.manual_seed(0)
    opt = GraphOptimizer(model, example_inputs=(torch.randn(*shape),))
    opt.optimize(["redundant_ops"])
    good_code = opt.optimized.code
    with pytest.raises(VerificationError, match=rf"pass '{bad.name}' failed verification") as err:
        opt.optimize([bad])
    assert message in str(err.value)
    assert err.value.pass_name == bad.name
    assert opt.optimized.code == good_code
    assert [r.name for r in opt.history] == ["redundant_ops"]
    assert opt.verify_correctness()


def test_train_mode_batchnorm_twice_is_kept_twice() -> None:
    opt = optimize(_TwiceBN().train(), (2, 4, 8, 8))
    assert targets(opt.optimized)["bn"] == 2


def test_passes_by_instance_and_by_name_agree() -> None:
    by_name = optimize(RedundantModel(), (2, 3, 8, 8), "redundant_ops")
    by_instance = optimize(RedundantModel(), (2, 3, 8, 8), RedundantOpElimination())
    assert len(by_name.optimized.graph.nodes) == len(by_instance.optimized.graph.nodes) == 10


def test_analyze_reports_without_changing_the_graph() -> None:
    gm = fx.symbolic_trace(RedundantModel())
    code = gm.code
    analysis = RedundantOpElimination().analyze(gm.graph)
    assert analysis["safe"] is True
    assert analysis["stats"]["redundant"] == 5
    assert {d["node"]: d["same_as"] for d in analysis["opportunities"]}["conv_1"] == "conv"
    assert gm.code == code


def test_optimized_model_runs_repeatedly_without_nans() -> None:
    opt = optimize(RedundantModel(), (2, 3, 8, 8))
    x = torch.randn(2, 3, 8, 8)
    for _ in range(5):
        assert not torch.isnan(opt.optimized(x)).any()
