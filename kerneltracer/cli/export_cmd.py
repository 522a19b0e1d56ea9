"""``kerneltracer export chakra RUN_DIR``: per-rank Chakra execution traces of parallel jobs."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import device_options, out_option
from kerneltracer.core.layout import REPORT, RUN


@click.group()
def export() -> None:
    """Export a run's records to other tools' formats."""


@export.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--job",
    "jobs",
    multiple=True,
    metavar="KEY",
    help="Only this job (<model slug>/<column>); repeatable. Default: every parallel job.",
)
@out_option(
    f"Output directory (default: RUN_DIR/{RUN.report.dir / REPORT.chakra('<key>')}/ per job; "
    "with one job, the files go straight into it)."
)
@device_options
def chakra(
    run_dir: Path,
    jobs: tuple[str, ...],
    out_dir: Path | None,
    device_name: str | None,
    devices_file: Path | None,
) -> None:
    """Per-rank Chakra execution traces (ASTRA-sim's input) of the run's parallel jobs.

    RUN_DIR is a run dir (its ok jobs with rank_<r>/ dirs are exported) or one such job dir.
    Per rank: trace.<rank>.et with a compute node per layer block (FLOPs, bytes, time
    estimated on --device from shapes) and a communication node per collective (type,
    size, process group; comm_group.json lists each group's ranks), each depending on the
    step before. Also chakra_export.json: the layout, node counts, collectives of unknown
    size, ranks without a dir. Times are estimates, never measured.
    """
    from kerneltracer.cli.options import resolve_device
    from kerneltracer.core.layout import RunPaths
    from kerneltracer.core.ranks import rank_dirs, rank_jobs, read_rank_job
    from kerneltracer.errors import RunDirError, UsageError, choices
    from kerneltracer.export.chakra import export_chakra

    device = resolve_device(device_name, devices_file)
    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    if rank_dirs(run_dir):  # a job dir itself
        key = f"{run_dir.parent.name}/{run_dir.name}"
        found = {key: run_dir}
        if out_dir is None and run_dir.resolve().parent.parent.name != RUN.jobs.name:
            raise UsageError(f"{run_dir} is a job dir outside a run dir: give -o DIR")
        default_out = {key: RunPaths(run_dir.resolve().parents[2]).report.chakra(key)}
    else:
        found = rank_jobs(run_dir)
        default_out = {key: RunPaths(run_dir).report.chakra(key) for key in found}
        if not found:
            raise UsageError(
                f"{run_dir} has no ok job with rank dirs (a parallel layout's jobs write "
                "rank_<r>/; set parallel: {tp: N, ...} with weights: fake)"
            )
    unknown = [key for key in jobs if key not in found]
    if unknown:
        raise UsageError(f"no parallel job {unknown[0]!r} in {run_dir} (valid: {choices(found)})")
    selected = {key: found[key] for key in jobs} if jobs else found
    for key, job_dir in selected.items():
        ranks = read_rank_job(job_dir)
        if ranks is None:
            continue
        if out_dir is None:
            out = default_out[key]
        else:
            out = out_dir if len(selected) == 1 else out_dir / key
        result = export_chakra(ranks, device, out)
        nodes = sum(len(t.nodes) for t in result.traces)
        comm = sum(t.comm_nodes for t in result.traces)
        click.echo(
            f"{key}: {result.layout.label()} ({result.layout_source}), "
            f"{len(result.files)} rank trace(s), {nodes} nodes ({comm} collectives) -> {out}"
        )
        unsized = sum(t.unknown_size for t in result.traces)
        if unsized:
            click.echo(
                f"  {unsized} collective(s) of unknown size written without comm_size "
                "(a simulator needs one: give the routing assumption in the config)",
                err=True,
            )
        if result.missing_ranks:
            shown = ", ".join(map(str, result.missing_ranks[:8]))
            more = "…" if len(result.missing_ranks) > 8 else ""
            click.echo(f"  no rank dir for rank(s) {shown}{more}: no trace for them", err=True)
        for what, n in sorted(result.bad.items()):
            click.echo(f"  skipped {n} bad line(s): {what}", err=True)
