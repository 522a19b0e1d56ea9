"""Tracing paths: symbolic_trace, torch.export for a tiny offline Llama, untraceable models."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kerneltracer.errors import UnsupportedError, UsageError
from kerneltracer.fx.models import DynamicControlFlow, SimpleMLP
from kerneltracer.fx.optimizer import GraphOptimizer
from kerneltracer.fx.passes.recompute import EveryNth, RecomputationPass
from kerneltracer.fx.tracing import trace
from kerneltracer.worker.frameworks.huggingface.causal_lm import load_model
from tests.support.fx_models import build_tiny_llama


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def test_plain_modules_use_symbolic_trace() -> None:
    traced = trace(SimpleMLP(8, 8, 2), (torch.randn(2, 8),))
    assert traced.method == "symbolic_trace"
    assert any(n.op == "call_module" for n in traced.module.graph.nodes)


def test_dynamic_control_flow_gets_one_clear_error() -> None:
    opt = GraphOptimizer(DynamicControlFlow(), example_inputs=(torch.randn(4, 8),))
    with pytest.raises(UnsupportedError) as err:
        opt.optimize(["redundant_ops"])
    message = str(err.value)
    assert "\n" not in message
    assert "cannot capture DynamicControlFlow" in message
    assert "symbolic_trace: TraceError" in message and "torch.export:" in message


def test_unknown_model_spec_lists_the_builtins() -> None:
    with pytest.raises(UsageError, match=r"built-in model \(cnn_bn, deep, dynamic"):
        load_model("no-such-model")


def test_tiny_llama_dir_is_offline_and_complete(tiny_llama: Path) -> None:
    assert (tiny_llama / "config.json").is_file()
    assert list(tiny_llama.glob("*.safetensors"))
    model, (ids,) = load_model(str(tiny_llama), seq_len=8)
    assert model.config.hidden_size == 128 and model.config.num_hidden_layers == 2
    assert ids.shape == (1, 8) and int(ids.max()) < 512


def test_tiny_llama_goes_through_export_and_is_optimised(tiny_llama: Path) -> None:
    model, inputs = load_model(str(tiny_llama), seq_len=8)
    with pytest.raises(Exception):  # noqa: B017 - any failure: HF forward defeats symbolic_trace
        torch.fx.symbolic_trace(model)
    opt = GraphOptimizer(model, example_inputs=inputs)
    opt.optimize(["redundant_ops", RecomputationPass(EveryNth(1))])
    assert opt.trace_method == "torch.export"
    cse, recompute = opt.history
    assert cse.stats["redundant"] >= 1
    assert cse.nodes_after == cse.nodes_before - cse.stats["redundant"]
    assert recompute.stats["checkpointed"] >= 2  # both decoder layers
    assert "outputs and gradients match" in recompute.verification
    assert opt.verify_correctness()
