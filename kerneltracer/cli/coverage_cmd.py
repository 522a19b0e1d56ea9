"""``kerneltracer coverage RUN_DIR``: the cross-model operator coverage as CSV/Parquet/JSON."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import device_options, echo_problems, out_option, strict_option
from kerneltracer.core.layout import RUN, RunPaths


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@out_option(f"Output directory (default: RUN_DIR/{RUN.report.coverage}/).")
@click.option("--top", default=10, show_default=True, help="How many top ops by time to print.")
@strict_option("Fail (exit 1, nothing written) on any unreadable input or malformed row.")
@device_options
def coverage(
    run_dir: Path,
    out_dir: Path | None,
    top: int,
    strict: bool,
    device_name: str | None,
    devices_file: Path | None,
) -> None:
    """Which ops each model runs: coverage of every ok torch_dispatch / profiler job.

    Writes coverage.csv (long: op,model,source,calls,signatures,self_time_us,est_flops,
    est_bytes,est_time_lb_us), coverage.parquet (same columns, typed), coverage_matrix.csv
    (ops x models call counts from torch_dispatch) and coverage_summary.json. The est_*
    columns are estimated from the recorded shapes (time: roofline lower bound on
    --device), never measured. Jobs that are not ok are left out; inputs that cannot be
    read are listed and do not stop the others.
    """
    from kerneltracer.cli.options import resolve_device
    from kerneltracer.coverage import build_coverage, write_coverage
    from kerneltracer.errors import KernelTracerError, RunDirError

    device = resolve_device(device_name, devices_file)
    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    out = out_dir if out_dir is not None else RunPaths(run_dir).report.coverage
    cov = build_coverage(run_dir, device)
    echo_problems([f"{p.path}: {p.reason}" for p in cov.problems])
    for b in cov.bad_rows:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(b.counts.items()))
        click.echo(f"malformed rows skipped: {b.path}: {b.total} ({kinds})", err=True)
    if strict and (cov.problems or cov.bad_rows):
        bad = sum(b.total for b in cov.bad_rows)
        raise KernelTracerError(
            f"--strict: {len(cov.problems)} unreadable input(s), {bad} malformed row(s); "
            "nothing written"
        )
    written = write_coverage(cov, out)
    models = len(cov.distinct_models())
    variants = f" ({len(cov.models)} model variants)" if len(cov.models) != models else ""
    click.echo(f"{models} model(s){variants}, {len(cov.jobs_read)} job(s) read")
    for source in cov.sources():
        unique = sum(len(v) for v in cov.unique_ops(source).values())
        ops = len(cov.ops(source))
        click.echo(f"  {source}: {ops} op(s), {unique} used by one model variant only")
    if cov.not_ok:
        click.echo(f"{len(cov.not_ok)} job(s) left out (not ok)")
    ranked = cov.top_ops_by_time(top)
    if ranked:
        click.echo("top ops by self time (summed over models):")
        for op, us in ranked:
            click.echo(f"  {us / 1000:>10.3f} ms  {op}")
    elif cov.top_ops_by_est_time(top):
        click.echo(
            f"top ops by estimated time on {cov.est_device} (from shapes, not measured; "
            "summed over models):"
        )
        for op, us in cov.top_ops_by_est_time(top):
            click.echo(f"  {us:>12.3f} µs  {op}")
    click.echo(f"wrote {len(written)} files to {out}")
