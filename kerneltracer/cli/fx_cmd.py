"""``kerneltracer fx``: the FX graph optimizer from the command line."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import split_values


@click.group("fx")
def fx() -> None:
    """Optimise FX graphs (redundant-op elimination, recomputation) and find redundancy."""


@fx.command("optimize")
@click.argument("model_spec")
@click.option(
    "--passes", "passes", multiple=True, default=("redundant_ops",), show_default=True,
    metavar="NAME[,NAME…]", help="Passes in order (repeat or comma-separate): redundant_ops, "
    "recompute.",
)  # fmt: skip
@click.option(
    "--checkpoint-every", type=click.IntRange(min=1), default=None,
    help="recompute: checkpoint every Nth layer instead of the memory-budget policy.",
)  # fmt: skip
@click.option(
    "--memory-budget", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
    help="recompute: keep saved activations under this fraction of the original (the "
    "report says whether it was met, and when no choice of layers can meet it).",
)  # fmt: skip
@click.option("--device", default="cpu", show_default=True, help="cpu, cuda, cuda:1, ...")
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Timed train steps per model (after --warmup).",
)
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True)
@click.option(
    "--seq-len",
    type=click.IntRange(min=1),
    default=32,
    show_default=True,
    help="Tokens per input for Hugging Face models.",
)
@click.option("--rtol", type=float, default=1e-5, show_default=True)
@click.option("--atol", type=float, default=1e-6, show_default=True)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the report as JSON here.",
)
def optimize(
    model_spec: str,
    passes: tuple[str, ...],
    checkpoint_every: int | None,
    memory_budget: float,
    device: str,
    runs: int,
    warmup: int,
    seq_len: int,
    rtol: float,
    atol: float,
    json_path: Path | None,
) -> None:
    """Optimise MODEL_SPEC, verify it, and print the benchmark report.

    MODEL_SPEC is a built-in test model (mlp, cnn_bn, resnet_block, redundant, deep,
    mini_resnet, dynamic) or a local Hugging Face model directory (config.json + weights).
    """
    from kerneltracer.fx.optimizer import GraphOptimizer
    from kerneltracer.fx.passes.base import OptimizationPass
    from kerneltracer.fx.passes.recompute import EveryNth, MemoryBudget, RecomputationPass
    from kerneltracer.fx.passes.registry import resolve
    from kerneltracer.jsonio import atomic_write_json
    from kerneltracer.worker.frameworks.huggingface.causal_lm import load_model

    policy = EveryNth(checkpoint_every) if checkpoint_every else MemoryBudget(memory_budget)
    chosen: list[OptimizationPass] = [
        RecomputationPass(policy) if name == "recompute" else resolve(name)
        for name in split_values(passes)
    ]
    model, inputs = load_model(model_spec, seq_len=seq_len)
    optimizer = GraphOptimizer(model, device=device, example_inputs=inputs, rtol=rtol, atol=atol)
    optimizer.optimize(chosen)
    report = optimizer.benchmark(num_runs=runs, warmup=warmup, name=_display(model_spec, model))
    click.echo(report.format_text())
    if json_path is not None:
        atomic_write_json(json_path, report.to_json())


def _display(spec: str, model: object) -> str:
    from kerneltracer.fx.models import BUILTIN

    name = type(model).__name__
    return name if spec in BUILTIN else f"{name} ({Path(spec).name})"


@fx.command("redundancy")
@click.argument(
    "tables", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
def redundancy(tables: tuple[Path, ...]) -> None:
    """List the redundant computations in FX node tables (graphs/graph_<i>.json)."""
    from kerneltracer.fx.passes.redundant_ops import analyze

    for path in tables:
        result = analyze(path)
        click.echo(
            f"{path}: {len(result.duplicates)} redundant of {result.compute_nodes} compute nodes"
        )
        for dup in result.duplicates:
            click.echo(f"  {dup.node} = {dup.same_as}  ({dup.target})")
