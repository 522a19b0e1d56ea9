"""``kerneltracer readiness RUN_DIR``: what a backend lacks, per model, and what to add first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kerneltracer.cli.options import device_options, echo_problems, out_option
from kerneltracer.core.layout import RUN, RunPaths

if TYPE_CHECKING:
    from kerneltracer.corpus.model import Signature

_RANKED_SHOWN = 20


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--support",
    "support_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Supported ops: YAML list (or {ops: [...]}) or CSV with an 'op' column.",
)
@click.option(
    "--dispatch-key",
    help="Supported = has a kernel for this key in this torch (Meta, CPU, CUDA, PrivateUse1, ...).",
)
@click.option(
    "--replay",
    "replay_dir",
    type=click.Path(path_type=Path, exists=True),
    help="A `kerneltracer replay` output, to weight ops by replayed time "
    "(default: time estimated from shapes on --device).",
)
@out_option(
    f"Output directory (default: RUN_DIR/{RUN.report.readiness}/, which the run report shows)."
)
@device_options
def readiness(
    run_dir: Path,
    support_file: Path | None,
    dispatch_key: str | None,
    replay_dir: Path | None,
    out_dir: Path | None,
    device_name: str | None,
    devices_file: Path | None,
) -> None:
    """Backend readiness: every unsupported op per model, and ops ranked by models unblocked.

    RUN_DIR is a run dir (its ok torch_dispatch jobs are read) or a `kerneltracer corpus`
    output. The ranking is an order to add ops in: each step takes the op that makes the
    most models fully supported, then the one that removes the most of their remaining
    blockers, then by time and calls. The time is the replayed one with --replay, else
    the roofline lower bound estimated from shapes on --device (the files say which).
    Writes readiness.json, readiness_ranked.csv and readiness_blockers.csv.
    """
    from kerneltracer.cli.options import resolve_device
    from kerneltracer.corpus.costs import est_time_note, est_time_us
    from kerneltracer.corpus.readiness import ESTIMATE, REPLAY, assess
    from kerneltracer.corpus.readiness_export import write_readiness
    from kerneltracer.corpus.replay_export import read_times
    from kerneltracer.corpus.support import support_from_dispatch_key, support_from_file
    from kerneltracer.errors import RunDirError, UsageError
    from kerneltracer.jsonio import outputs_all_or_none

    if (support_file is None) == (dispatch_key is None):
        raise UsageError("give exactly one of --support FILE or --dispatch-key KEY")
    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    support = (
        support_from_file(support_file)
        if support_file is not None
        else support_from_dispatch_key(str(dispatch_key))
    )
    device = resolve_device(device_name, devices_file)
    sigs, models, distinct = _signatures(run_dir)
    if replay_dir is not None:
        times, weight, note = read_times(replay_dir), REPLAY, f"replayed ({replay_dir})"
    else:
        times, weight, note = est_time_us(sigs, device), ESTIMATE, est_time_note(device)
    result = assess(sigs, support, models, times, weight, note)
    out = out_dir if out_dir is not None else RunPaths(run_dir).report.readiness
    with outputs_all_or_none(out):
        written = write_readiness(result, out)
    blocked = {m: bs for m, bs in result.blockers.items() if bs}
    click.echo(
        f"{distinct} model(s)"
        + (f" ({len(result.models)} model variants)" if len(result.models) != distinct else "")
        + f", {result.ops_checked} op(s) checked against "
        f"{result.support}: {len(result.ready_models)} ready, {len(blocked)} blocked"
    )
    for model, items in blocked.items():
        click.echo(f"  {model}: {len(items)} missing: " + ", ".join(b.op for b in items))
    if result.ranked:
        click.echo("ops to add, in order (models ready after each):")
        for o in result.ranked[:_RANKED_SHOWN]:
            click.echo(
                f"  {o.rank:>3}. {o.op}  blocks {len(o.models_blocked)}, "
                f"+{o.newly_ready} ready -> {o.ready_after}"
            )
    click.echo(f"time weight: {note}")
    click.echo(f"wrote {len(written)} files to {out}")


def _signatures(path: Path) -> tuple[list[Signature], tuple[str, ...], int]:
    """The signatures, the model labels (one per variant) and the number of models."""
    from kerneltracer.corpus.build import build_corpus
    from kerneltracer.corpus.schema import PARQUET, read_signatures

    if (path / PARQUET).is_file():
        sigs = read_signatures(path)
        labels = tuple(sorted({m for s in sigs for m in s.models}))
        return sigs, labels, len(labels)
    built = build_corpus(path)
    echo_problems([f"{p.path}: {p.reason}" for p in built.problems])
    return built.signatures, built.models, len(built.distinct_models)
