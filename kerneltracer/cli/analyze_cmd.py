"""``kerneltracer analyze RUN_DIR``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from kerneltracer.cli.options import MemorySize, input_limit_options
from kerneltracer.core.analysis_limits import (
    AUTO_PARALLEL_MIN_BYTES,
    DEFAULT_TIMEOUT_S,
    default_max_memory,
)


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
    help="Analyses run at once, in worker processes; 0 = auto: one per CPU (at most 8) "
    "when the outputs to analyse add up to 64 MiB, else one.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds one analysis of one job may take before it is killed (recorded "
    "'timeout'); 0 = no limit.",
)
@click.option(
    "--max-memory",
    "max_memory",
    type=MemorySize(),
    default=None,
    help="Memory ceiling of each analysis process (heap, RLIMIT_DATA), e.g. 4G or 512M; an "
    "analysis above it fails with a memory error. 0 = none. Default: half the RAM.",
)
@click.option(
    "--import",
    "imports",
    multiple=True,
    metavar="MODULE",
    help="Module defining more analyses (an ANALYSES mapping: name -> JobAnalysis "
    "subclass) to run beside the built-in ones; repeatable.",
)
@input_limit_options
def analyze(
    run_dir: Path,
    force: bool,
    only: tuple[str, ...],
    workers: int,
    timeout_s: float,
    max_memory: int | None,
    imports: tuple[str, ...],
) -> None:
    """Run every applicable analysis on every finished job of RUN_DIR.

    Reports go to JOB_DIR/analysis/<analysis>/. Unchanged jobs are skipped unless --force.
    Each analysis runs in a worker process bounded by --timeout and --max-memory: one that
    fails, times out or crashes is recorded in its _ANALYSIS.json (state, reason, log) and
    the others go on. Exit status 1 if any did not succeed.
    """
    from kerneltracer.analysis.isolation import Limits
    from kerneltracer.analysis.plugins import with_plugins
    from kerneltracer.analysis.registry import ANALYSES
    from kerneltracer.analysis.runner import AnalysisOutcome, analyze_run
    from kerneltracer.core.rundir import RunDir
    from kerneltracer.errors import UsageError, choices

    RunDir.open(run_dir)  # a missing dir, or one that is no run dir: one line, exit 1
    known = with_plugins(ANALYSES, imports)
    unknown = [name for name in only if name not in known]
    if unknown:
        raise UsageError(f"unknown analysis {unknown[0]!r} (valid: {choices(known) or 'none'})")
    selected = {k: v for k, v in known.items() if not only or k in only}
    if max_memory is None:
        max_memory = default_max_memory()
    limits = Limits(timeout_s=timeout_s or None, max_memory_bytes=max_memory or None)

    def show(o: AnalysisOutcome) -> None:
        log = f" (log: {o.log})" if o.log is not None and o.failed else ""
        click.echo(f"{o.state:<9} {o.analysis:<16} {o.job_key}  {o.detail}{log}".rstrip(), err=True)

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
        limits=limits,
    )
    failed = sum(o.failed for o in outcomes)
    click.echo(f"{len(outcomes)} analysis run(s), {failed} failed")
    if failed:
        sys.exit(1)
