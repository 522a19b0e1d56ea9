"""``kerneltracer report RUN_DIR``."""

from __future__ import annotations

from pathlib import Path

import click

from kerneltracer.cli.options import out_option


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@out_option("Write the report here instead of RUN_DIR/report.")
def report(run_dir: Path, out_dir: Path | None) -> None:
    """Build the run report of RUN_DIR: a static HTML page set plus JSON and CSV.

    index.html has the run summary and the models x tracers grid; models/<slug>.html each
    model's jobs, files, analyses and phase times; coverage.html the ops x models coverage.
    Works on runs in progress. Run `kerneltracer analyze RUN_DIR` first for analysis links.
    """
    from kerneltracer.errors import RunDirError
    from kerneltracer.report import build_report

    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise RunDirError(f"--out {out_dir} exists and is not a directory")
    result = build_report(run_dir, out_dir)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    run = result.run
    counts = ", ".join(f"{n} {state}" for state, n in run.counts.items()) or "no jobs"
    tracers = len({j.tracer for j in run.jobs})
    variants = f" ({run.variants} model variants)" if run.variants != len(run.models) else ""
    click.echo(
        f"{len(run.models)} models{variants} x {tracers} tracers: {counts}"
        f"{' (run in progress)' if run.in_progress else ''}"
    )
    click.echo(f"{len(result.pages)} pages, {result.html_bytes / 1024:.0f} KiB of HTML")
    click.echo(f"report: {result.index}")
