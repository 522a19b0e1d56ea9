"""Benchmark the FX graph optimizer: its report for MLP, Mini-ResNet, a tiny
Llama and the deep 10-layer net, then redundant_ops side by side with torch's own CSEPass.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_fx.py [--runs 30] [--device cpu]

Each report times original and optimised train steps interleaved step by step (median of
--runs after warm-up), and measures the activation bytes saved for backward (saved-tensor
hooks; CUDA peak too on GPU). The peer section runs both CSE passes on the same graphs,
verifies both results against the model, and times the passes (median of 7, interleaved).
"""

from __future__ import annotations

import os

# Single-threaded unless told otherwise: set before torch is imported (shared 2-core CI).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import fx
from torch.fx.passes.dialect.common.cse_pass import CSEPass, get_CSE_banned_ops

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # tests.support is not installed: it lives in the repo
    sys.path.insert(0, str(REPO))

from kerneltracer.fx.models import (  # noqa: E402
    DeepNet,
    MiniResNet,
    RedundantModel,
    SimpleMLP,
)
from kerneltracer.fx.optimizer import GraphOptimizer, clone_module  # noqa: E402
from kerneltracer.fx.passes.redundant_ops import RedundantOpElimination  # noqa: E402
from kerneltracer.fx.tracing import trace  # noqa: E402
from kerneltracer.fx.verify import compare  # noqa: E402
from kerneltracer.worker.frameworks.huggingface.causal_lm import load_model  # noqa: E402
from tests.support.fx_models import ImpureRepeats, build_tiny_llama  # noqa: E402

Case = tuple[str, torch.nn.Module, tuple[Any, ...]]


def report_cases(llama_dir: Path) -> list[Case]:
    torch.manual_seed(0)
    llama, llama_inputs = load_model(str(llama_dir), seq_len=64)
    return [
        ("SimpleMLP", SimpleMLP(784, 256, 10).train(), (torch.randn(128, 784),)),
        (
            "MiniResNet (frozen BatchNorm)",
            MiniResNet(5, (16, 32, 64)).eval(),
            (torch.randn(8, 3, 32, 32),),
        ),
        ("TinyLlama (hidden 128, 2 layers)", llama, llama_inputs),
        ("DeepNet (10 layers)", DeepNet(256, 10).train(), (torch.randn(256, 256),)),
    ]


def run_reports(cases: list[Case], runs: int, device: str) -> None:
    for name, model, inputs in cases:
        optimizer = GraphOptimizer(model, device=device, example_inputs=inputs)
        optimizer.optimize(["redundant_ops", "recompute"])
        print(optimizer.benchmark(num_runs=runs, warmup=5, name=name).format_text())
        print()


def _time(fn: Callable[[], Any], repeats: int) -> list[float]:
    return [_once(fn) for _ in range(repeats)]


def _once(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def peer_cases(llama_dir: Path) -> list[tuple[str, torch.nn.Module, tuple[Any, ...], bool]]:
    torch.manual_seed(0)
    llama, llama_inputs = load_model(str(llama_dir), seq_len=16)
    x = torch.randn(2, 3, 16, 16)
    return [
        ("RedundantModel, symbolic_trace", RedundantModel(), (x,), False),
        ("RedundantModel, torch.export (aten)", RedundantModel(), (x,), True),
        (
            "ImpureRepeats train, symbolic_trace",
            ImpureRepeats().train(),
            (torch.randn(2, 4, 8, 8),),
            False,
        ),
        (
            "ImpureRepeats train, torch.export (aten)",
            ImpureRepeats().train(),
            (torch.randn(2, 4, 8, 8),),
            True,
        ),
        ("TinyLlama, torch.export (aten)", llama, llama_inputs, True),
    ]


def _graph(model: torch.nn.Module, inputs: tuple[Any, ...], export: bool) -> fx.GraphModule:
    if not export:
        return trace(model, inputs).module
    module = torch.export.export(model, inputs, strict=False).module()
    assert isinstance(module, fx.GraphModule)
    return module


def run_peer(llama_dir: Path) -> None:
    print(
        "PEER: redundant_ops vs torch.fx.passes.dialect.common.cse_pass.CSEPass "
        "(banned_ops=get_CSE_banned_ops())"
    )
    header = (
        f"  {'graph':<42} {'nodes':>5} {'ours':>5} {'torch':>5}  {'ours ok':<8}"
        f"{'torch ok':<9} {'ours ms':>8} {'torch ms':>9}"
    )
    print(header)
    for name, model, inputs, export in peer_cases(llama_dir):
        gm = _graph(model, inputs, export)
        ours_gm = clone_module(gm)
        RedundantOpElimination().transform(ours_gm.graph)
        ours_gm.recompile()
        peer_gm = CSEPass(get_CSE_banned_ops())(clone_module(gm)).graph_module
        ours_ok = compare(model, ours_gm, inputs).ok
        peer_ok = compare(model, peer_gm, inputs).ok
        ours_ms: list[float] = []
        peer_ms: list[float] = []
        for _ in range(7):  # interleaved so machine noise hits both alike
            copy_a, copy_b = clone_module(gm), clone_module(gm)
            ours_ms.append(_once(lambda g=copy_a: RedundantOpElimination().transform(g.graph)))
            peer_ms.append(_once(lambda g=copy_b: CSEPass(get_CSE_banned_ops())(g)))
        n = len(gm.graph.nodes)
        print(
            f"  {name:<42} {n:>5} {n - len(ours_gm.graph.nodes):>5} "
            f"{n - len(peer_gm.graph.nodes):>5}  {_ok(ours_ok):<8}{_ok(peer_ok):<9}"
            f"{statistics.median(ours_ms):>8.2f} {statistics.median(peer_ms):>9.2f}"
        )
    print("  (nodes: before; ours/torch: nodes removed; ok: outputs and gradients match)")


def _ok(flag: bool) -> str:
    return "yes" if flag else "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    print(
        f"torch {torch.__version__}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
        f"device {args.device}\n"
    )
    with tempfile.TemporaryDirectory(prefix="bench-fx-") as tmp:
        llama_dir = build_tiny_llama(Path(tmp))
        run_reports(report_cases(llama_dir), args.runs, args.device)
        if not args.skip_peer:
            run_peer(llama_dir)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"\npeak RSS of this benchmark process: {peak_kb / 1024:.0f} MB")


if __name__ == "__main__":
    main()
