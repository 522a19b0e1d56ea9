"""``kerneltracer corpus RUN_DIR``: the run's unique op signatures as Parquet + operator_inp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kerneltracer.cli.options import device_options, echo_problems, out_option, strict_option
from kerneltracer.core.layout import RUN, RunPaths

TOP_SHOWN = 10


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@out_option(f"Output directory (default: RUN_DIR/{RUN.report.corpus}/).")
@strict_option("Fail if any job or line could not be read.")
@device_options
def corpus(
    run_dir: Path,
    out_dir: Path | None,
    strict: bool,
    device_name: str | None,
    devices_file: Path | None,
) -> None:
    """The replayable op-input corpus of a run: every unique aten op signature.

    Reads every ok torch_dispatch job and writes corpus.parquet (one row per signature:
    op, models, calls per model, forward/backward calls, module paths, inputs with integer
    ranges, outputs), operator_inp.txt (all signatures), operator_inp/<model>.txt (per model),
    corpus_summary.json and backendbench.parquet (BackendBench's TorchBench-suite layout).
    Replay it with `kerneltracer replay OUT`; benchmark a backend on it with

    \b
      python -m BackendBench.scripts.main --suite torchbench \\
        --alternative-torchbench-data-path OUT/backendbench.parquet

    Each signature also gets its cost estimated from shapes (FLOPs, bytes), ranked in
    costs_by_op.csv / costs_by_module.csv / costs_by_model.csv by the roofline time lower
    bound on --device; ops without an estimate are listed in unknown_ops.csv.
    """
    from kerneltracer.cli.options import resolve_device
    from kerneltracer.corpus.backendbench import write_backendbench
    from kerneltracer.corpus.build import build_corpus
    from kerneltracer.corpus.export import SUMMARY, write_corpus
    from kerneltracer.errors import KernelTracerError, RunDirError
    from kerneltracer.jsonio import outputs_all_or_none, read_json

    device = resolve_device(device_name, devices_file)  # a bad name fails before any work
    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    out = out_dir if out_dir is not None else RunPaths(run_dir).report.corpus
    built = build_corpus(run_dir)
    echo_problems([f"{p.path}: {p.reason}" for p in built.problems])
    if strict and built.problems:
        raise KernelTracerError(f"{len(built.problems)} unreadable input(s) and --strict")
    with outputs_all_or_none(out):
        written = write_corpus(built, out, device)
        bb = write_backendbench(built.signatures, out, placements=built.placements)
    written.append(bb.path)
    calls = sum(s.calls for s in built.signatures)
    variants = len(built.models)
    also = f" ({variants} model variants)" if variants != len(built.distinct_models) else ""
    click.echo(
        f"{len(built.distinct_models)} model(s){also}: {len(built.ops())} op(s), "
        f"{len(built.signatures)} signature(s), {calls} call(s)"
    )
    if built.fake_models:
        click.echo(
            f"{len(built.fake_models)} model(s) traced with weights fake (full-size shapes; "
            "integer ranges unknown, nothing timed)"
        )
    if built.not_ok:
        click.echo(f"{len(built.not_ok)} torch_dispatch job(s) left out (not ok)")
    if bb.excluded:
        click.echo(
            f"{bb.path.name}: {bb.excluded} of {bb.rows} row(s) excluded from the benchmark "
            "(args BackendBench cannot rebuild; see its why_excluded column)"
        )
    _echo_costs(read_json(out / SUMMARY)["est_costs"])
    click.echo(f"wrote {len(written)} files to {out}")


def _echo_costs(est: dict[str, Any]) -> None:
    if est["top_ops"]:
        click.echo(f"top ops by estimated time on {est['device']} (from shapes, not measured):")
        for row in est["top_ops"][:TOP_SHOWN]:
            us = row["est_time_lb_us"]
            click.echo(f"  {us:>12.3f} µs  {row['est_bound']:<7}  {row['op']}")
    unknown = est["unknown_ops"]
    if unknown:
        calls = sum(u["calls"] for u in unknown)
        names = ", ".join(u["op"] for u in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        click.echo(f"{len(unknown)} op(s) without a cost estimate ({calls} call(s)): {names}")
