"""``kerneltracer analyze RUN_DIR``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

AUTO_PARALLEL_MIN_BYTES = 64 << 20


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True, help="Re-run analyses even if their inputs are unchanged.")
@click.option("--only", "only", multiple=True, metavar="ANALYSIS", help="Run only these analyses.")
@click.option(
    "--jobs",
    "-j",
    "workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Jobs analysed at once, in worker processes; 0 = auto: one per CPU (at most 8) "
    "when the outputs to analyse add up to 64 MiB, else one.",
)
def analyze(run_dir: Path, force: bool, only: tuple[str, ...], workers: int) -> None:
    """Run every applicable analysis on every finished job of RUN_DIR.

    Reports go to JOB_DIR/analysis/<analysis>/. Unchanged jobs are skipped unless --force.
    Jobs are analysed in parallel processes when there is enough work (see --jobs).
    """
    from kerneltracer.analysis.registry import ANALYSES
    from kerneltracer.analysis.runner import AnalysisOutcome, analyze_run
    from kerneltracer.errors import RunDirError, UsageError, choices

    if not run_dir.is_dir():
        raise RunDirError(f"run dir {run_dir} does not exist")
    unknown = [name for name in only if name not in ANALYSES]
    if unknown:
        raise UsageError(f"unknown analysis {unknown[0]!r} (valid: {choices(ANALYSES) or 'none'})")
    selected = {k: v for k, v in ANALYSES.items() if not only or k in only}

    def show(o: AnalysisOutcome) -> None:
        click.echo(f"{o.state:<9} {o.analysis:<16} {o.job_key}  {o.detail}".rstrip(), err=True)

    # Auto: parallel only for inputs big enough to repay each worker's own imports
    # (bench/bench_report.py --analyze); an explicit -j N is always honoured.
    min_bytes = AUTO_PARALLEL_MIN_BYTES if workers == 0 else 0
    if workers == 0:
        workers = min(len(os.sched_getaffinity(0)), 8)
    outcomes = analyze_run(
        run_dir,
        selected,
        force=force,
        on_outcome=show,
        workers=workers,
        min_parallel_bytes=min_bytes,
    )
    failed = sum(o.state == "failed" for o in outcomes)
    click.echo(f"{len(outcomes)} analysis run(s), {failed} failed")
    if failed:
        sys.exit(1)
