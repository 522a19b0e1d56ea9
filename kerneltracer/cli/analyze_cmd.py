"""``kerneltracer analyze RUN_DIR``."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True, help="Re-run analyses even if their inputs are unchanged.")
@click.option("--only", "only", multiple=True, metavar="ANALYSIS", help="Run only these analyses.")
def analyze(run_dir: Path, force: bool, only: tuple[str, ...]) -> None:
    """Run every applicable analysis on every finished job of RUN_DIR.

    Reports go to JOB_DIR/analysis/<analysis>/. Unchanged jobs are skipped unless --force.
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

    outcomes = analyze_run(run_dir, selected, force=force, on_outcome=show)
    failed = sum(o.state == "failed" for o in outcomes)
    click.echo(f"{len(outcomes)} analysis run(s), {failed} failed")
    if failed:
        sys.exit(1)
