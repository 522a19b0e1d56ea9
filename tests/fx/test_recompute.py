"""Activation recomputation: measured activation savings with identical gradients."""

from __future__ import annotations

import pytest
import torch
import torch.utils.checkpoint
from torch import fx

from kerneltracer.fx.measure import saved_activations, state_storages
from kerneltracer.fx.models import DeepNet, MiniResNet, ResNetBlock
from kerneltracer.fx.optimizer import GraphOptimizer
from kerneltracer.fx.passes.recompute import (
    EveryNth,
    Layer,
    MemoryBudget,
    RecomputationPass,
    _min_cost_cover,
    find_layers,
)
from kerneltracer.fx.verify import compare


def deep_optimizer() -> GraphOptimizer:
    torch.manual_seed(0)
    return GraphOptimizer(DeepNet(32, 10), example_inputs=(torch.randn(16, 32),))


def checkpoint_calls(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.target is torch.utils.checkpoint.checkpoint)


def saved(opt: GraphOptimizer, gm: fx.GraphModule) -> int:
    assert opt.example_inputs is not None
    return saved_activations(gm, opt.example_inputs, state_storages(opt.model)).total_bytes


@pytest.mark.parametrize(("policy", "calls"), [
    (EveryNth(2), 5),
    (EveryNth(1), 11),
    (MemoryBudget(0.5), None),
])  # fmt: skip
def test_deep_net_saves_at_least_30_percent_with_identical_gradients(
    policy: EveryNth | MemoryBudget, calls: int | None
) -> None:
    opt = deep_optimizer()
    opt.optimize([RecomputationPass(policy)])
    before, after = saved(opt, opt.original), saved(opt, opt.optimized)
    assert after <= 0.7 * before, (before, after)
    if calls is not None:
        assert checkpoint_calls(opt.optimized) == calls
    # Bit-identical: recomputation replays the same kernels on the same inputs.
    result = compare(opt.model, opt.optimized, opt.example_inputs or (), rtol=0, atol=0)
    assert result.ok, result.detail


def test_every_nth_wraps_the_odd_layers() -> None:
    opt = deep_optimizer()
    opt.optimize([RecomputationPass(EveryNth(2))])
    wrapped = [
        str(n.args[0].target)
        for n in opt.optimized.graph.nodes
        if n.target is torch.utils.checkpoint.checkpoint
    ]
    assert wrapped == [f"recompute_layers_{i}" for i in (1, 3, 5, 7, 9)]


def test_budget_policy_meets_the_budget_it_was_given() -> None:
    for fraction in (0.7, 0.4):
        opt = deep_optimizer()
        opt.optimize([RecomputationPass(MemoryBudget(fraction))])
        before, after = saved(opt, opt.original), saved(opt, opt.optimized)
        assert after <= fraction * before, (fraction, before, after)


def test_budget_policy_checkpoints_fewer_layers_for_a_looser_budget() -> None:
    counts = []
    for fraction in (0.8, 0.5, 0.25):
        opt = deep_optimizer()
        opt.optimize([RecomputationPass(MemoryBudget(fraction))])
        counts.append(checkpoint_calls(opt.optimized))
    assert counts == sorted(counts) and counts[0] < counts[-1]


def test_min_cost_cover_picks_the_cheapest_feasible_set() -> None:
    layers = [
        Layer(0, "a", (), True, "", saved_bytes=100, recompute_cost=10.0),
        Layer(1, "b", (), True, "", saved_bytes=60, recompute_cost=1.0),
        Layer(2, "c", (), True, "", saved_bytes=60, recompute_cost=1.0),
        Layer(3, "d", (), True, "", saved_bytes=30, recompute_cost=0.1),
    ]
    assert _min_cost_cover(layers, 100) == [1, 2]
    assert _min_cost_cover(layers, 90) == [1, 3]
    assert _min_cost_cover(layers, 30) == [3]
    assert _min_cost_cover(layers, 250) == [0, 1, 2, 3]
    many = [
        Layer(i, str(i), (), True, "", saved_bytes=1000 + i, recompute_cost=1.0 + i % 7)
        for i in range(60)
    ]
    chosen = _min_cost_cover(many, 20_000)
    assert sum(many[i].saved_bytes for i in chosen) >= 20_000


def test_batchnorm_in_train_mode_is_not_recomputed() -> None:
    gm = fx.symbolic_trace(ResNetBlock().train())
    blocked = {x.key: x.reason for x in find_layers(gm) if not x.eligible}
    assert set(blocked) == {"bn1", "bn2"}
    assert "running stats" in blocked["bn1"]
    gm_eval = fx.symbolic_trace(ResNetBlock().eval())
    assert all(x.eligible for x in find_layers(gm_eval))


def test_frozen_batchnorm_resnet_is_recomputed_correctly() -> None:
    torch.manual_seed(0)
    model = MiniResNet(num_blocks=3, channels=(8, 16)).eval()
    opt = GraphOptimizer(model, example_inputs=(torch.randn(2, 3, 16, 16),))
    opt.optimize(["redundant_ops", RecomputationPass(EveryNth(1))])
    assert checkpoint_calls(opt.optimized) > 0
    assert saved(opt, opt.optimized) < saved(opt, opt.original)


def test_layers_follow_numbered_modules() -> None:
    gm = fx.symbolic_trace(DeepNet(8, 3))
    layers = find_layers(gm)
    assert [x.key for x in layers] == ["layers.0", "layers.1", "layers.2", "head"]
    assert layers[0].nodes == ("layers_0_fc1", "gelu", "layers_0_fc2", "add")


def test_benchmark_reports_memory_and_time_overhead() -> None:
    opt = deep_optimizer()
    opt.optimize(["redundant_ops", RecomputationPass(EveryNth(2))])
    report = opt.benchmark(num_runs=2, warmup=1)
    text = report.format_text()
    assert report.memory_reduction_pct >= 30
    assert report.graph_optimized.compute_nodes == report.graph_original.compute_nodes
    assert report.graph_optimized.recomputed_nodes == 20
    for line in (
        "Model: DeepNet",
        "GRAPH STATISTICS:",
        "MEMORY (activations saved",
        "TIME (train step fwd+bwd, median over 2 runs):",
        "Overhead: ",
        "recompute: 43 -> 33 nodes; checkpointed 5 of 11 layers",
    ):
        assert line in text
    assert report.to_json()["time_optimized"]["runs"] == 2


def test_report_says_whether_the_budget_was_met_and_when_it_is_out_of_reach() -> None:
    opt = deep_optimizer()
    opt.optimize([RecomputationPass(MemoryBudget(0.5))])
    report = opt.benchmark(num_runs=1, warmup=0)
    assert "  Budget: 50% of original (0.05 MB): met" in report.format_text().splitlines()
    assert report.to_json()["passes"][0]["stats"]["budget_fraction"] == 0.5

    torch.manual_seed(0)
    model = MiniResNet(num_blocks=3, channels=(8, 16)).eval()
    opt = GraphOptimizer(model, example_inputs=(torch.randn(2, 3, 16, 16),))
    opt.optimize([RecomputationPass(MemoryBudget(0.125))])
    report = opt.benchmark(num_runs=1, warmup=0)
    stats = report.passes[0].stats
    share = stats["least_saved_bytes"] / stats["saved_bytes_before"]
    assert report.saved_bytes_optimized > 0.125 * report.saved_bytes_original and share > 0.125
    assert (
        f"  Budget: 12.5% of original ({0.125 * report.saved_bytes_original / 2**20:.2f} MB): "
        f"not met, out of reach: checkpointing every recomputable layer leaves {share:.0%}"
    ) in report.format_text().splitlines()

    opt = deep_optimizer()
    opt.optimize([RecomputationPass(EveryNth(2))])
    assert "Budget:" not in opt.benchmark(num_runs=1, warmup=0).format_text()


def test_budget_policy_requires_inputs() -> None:
    gm = fx.symbolic_trace(DeepNet(8, 2))
    with pytest.raises(ValueError, match="needs example inputs"):
        RecomputationPass().analyze(gm.graph)
    assert RecomputationPass(EveryNth(2)).analyze(gm.graph)["stats"]["checkpointed"] == 1


class _Arena(torch.nn.Module):
    """Hands every call's output the same memory, as an allocator does with a freed block."""

    def __init__(self, numel: int) -> None:
        super().__init__()
        self.memory = bytearray(4 * numel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.frombuffer(self.memory, dtype=torch.float32).view(x.shape)
        return out.copy_(x)


class _ReusingNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.arena = _Arena(16 * 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first = self.arena(x * 2)  # dies after the add: nothing saves it
        second = self.arena(first + 1)  # a new storage at the same address
        return second.sin()  # sin saves its input for backward


class _ArenaLeaf(fx.Tracer):
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return isinstance(m, _Arena) or super().is_leaf_module(m, module_qualified_name)


def test_saved_bytes_go_to_the_node_that_made_them_when_an_address_is_reused() -> None:
    model = _ReusingNet()
    gm = fx.GraphModule(model, _ArenaLeaf().trace(model))
    assert [n.name for n in gm.graph.nodes if n.op == "call_module"] == ["arena", "arena_1"]
    x = torch.randn(16, 32, requires_grad=True)
    assert saved_activations(gm, (x,)).by_node == {"arena_1": 16 * 32 * 4}


def test_optimize_for_memory_and_for_speed_shortcuts() -> None:
    memory = deep_optimizer()
    memory.optimize_for_memory()
    assert [r.name for r in memory.history] == ["redundant_ops", "recompute"]
    assert saved(memory, memory.optimized) <= 0.5 * saved(memory, memory.original)
    speed = deep_optimizer()
    speed.optimize_for_speed()
    assert [r.name for r in speed.history] == ["redundant_ops"]
