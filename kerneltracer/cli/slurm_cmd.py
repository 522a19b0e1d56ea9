"""``kerneltracer slurm submit|status|resubmit``: run a config as a Slurm job array."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kerneltracer.core.layout import RunPaths

if TYPE_CHECKING:
    from kerneltracer.slurm.submit import Prepared


@click.group()
def slurm() -> None:
    """Run a config on a Slurm cluster: one array task per shard, resumable."""


@slurm.command()
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Print the sbatch scripts; submit nothing.")
@click.option("--partition", help="Partition (overrides slurm.partition).")
@click.option(
    "--array-size",
    type=click.IntRange(1, 100_000),
    help="Shards, one array task each (default: slurm.array_size, else one per model).",
)
@click.option(
    "--max-parallel",
    type=click.IntRange(1, 100_000),
    help="Array tasks running at once (sbatch --array=...%M).",
)
@click.option(
    "--wait",
    is_flag=True,
    help="Follow the array until it ends; exit 1 if a task fails or can never start.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.5, 3600),
    default=10.0,
    show_default=True,
    help="Seconds between polls with --wait.",
)
def submit(
    config: Path,
    dry_run: bool,
    partition: str | None,
    array_size: int | None,
    max_parallel: int | None,
    wait: bool,
    interval: float,
) -> None:
    """Submit a download job, then a job array that depends on it (afterok).

    The request is first checked against the partition (sinfo/scontrol): what no node can
    run is refused, settings left unset are fitted to it. Task I runs
    `kerneltracer run CONFIG --shard I/N`; scripts and per-task logs go to RUN_DIR/slurm/.
    """
    from kerneltracer.slurm import submit as sub
    from kerneltracer.slurm.partition import read_partition

    have_slurm = shutil.which("scontrol") is not None and shutil.which("sinfo") is not None
    if dry_run and not have_slurm:
        click.echo("note: no Slurm here: the request is not checked against a partition", err=True)
    prepared = sub.prepare(
        config,
        partition=partition,
        array_size=array_size,
        max_parallel=max_parallel,
        lookup=read_partition if have_slurm or not dry_run else None,
    )
    for note in prepared.notes:
        click.echo(f"note: {note}", err=True)
    if dry_run:
        _print_scripts(prepared)
        return
    record = sub.submit(prepared)
    array = record.arrays[-1]
    click.echo(f"download job {record.download_job}")
    click.echo(
        f"array job {array.job_id}: {record.shards} shard(s), after the download; "
        f"{_resources(prepared)}"
    )
    click.echo(f"run dir: {record.run_dir}   (kerneltracer slurm status {record.run_dir})")
    if wait:
        _wait(Path(record.run_dir), interval)


def _print_scripts(prepared: Prepared) -> None:
    tasks = list(range(1, prepared.spec.shards + 1))
    click.echo(f"# {prepared.download_path}  (sbatch --parsable)")
    click.echo(prepared.download_script)
    args = " ".join(prepared.array_args(tasks, "<download job id>"))
    click.echo(f"# {prepared.array_path}  (sbatch --parsable {args})")
    click.echo(prepared.array_script, nl=False)


def _resources(prepared: Prepared) -> str:
    s = prepared.spec.settings
    parts = [f"{s.cpus_per_task} CPU(s)"]
    parts += [f"{s.mem} memory"] if s.mem else []
    parts += [f"{s.gpus} GPU(s)"] if s.gpus else []
    parts.append(f"time {prepared.spec.task_time} per task")
    if prepared.partition is not None:
        parts.append(f"partition {prepared.partition.name}")
    return ", ".join(parts)


def _wait(run_dir: Path, interval: float) -> None:
    """A progress line whenever something changes, each stuck task once, then the table."""
    from kerneltracer.cli.slurm_view import print_problems, print_table, problem_line
    from kerneltracer.cli.slurm_view import progress_line as line_of
    from kerneltracer.slurm.follow import follow

    started = time.monotonic()
    last, seen = "", set()
    reports = []
    try:
        for snapshot in follow(run_dir, interval):
            reports = snapshot.reports
            line = line_of(snapshot, time.monotonic() - started)
            body = line.split("] ", 1)[1]  # without the elapsed time, which always changes
            if body != last:
                click.echo(line)
                last = body
            for r in snapshot.problems:
                if r.stuck and r.task not in seen:
                    seen.add(r.task)
                    click.echo(f"error: {problem_line(r)}", err=True)
    except KeyboardInterrupt as exc:
        from kerneltracer.core.interrupts import signal_of

        click.echo(
            f"stopped following ({signal_of(exc)}); the Slurm jobs go on: "
            f"kerneltracer slurm status {run_dir}",
            err=True,
        )
        sys.exit(130)
    print_table(reports)
    # Stuck tasks were reported as they were found; the rest of the problems now.
    print_problems([r for r in reports if not r.stuck], str(RunPaths(run_dir).slurm_logs))
    if any(r.problem for r in reports):
        sys.exit(1)


@slurm.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per shard.")
def status(run_dir: Path, as_json: bool) -> None:
    """Each shard's array task state (squeue/sacct, or scontrol + the job-completion log)
    with its jobs' status; a pending task shows Slurm's reason, and one that can never
    start by itself (PartitionConfig, a hold, a failed dependency...) is an error.
    Exit 1 if any shard has incomplete jobs and no live task, or a task that never starts."""
    from kerneltracer.cli.slurm_view import print_json, print_problems, print_table
    from kerneltracer.slurm.status import shard_reports

    reports = shard_reports(run_dir)
    if as_json:
        print_json(reports)
    else:
        print_table(reports)
        print_problems(reports, str(RunPaths(run_dir).slurm_logs))
    if any(r.problem for r in reports):
        sys.exit(1)


@slurm.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--max-parallel", type=click.IntRange(1, 100_000), help="Array tasks at once.")
def resubmit(run_dir: Path, max_parallel: int | None) -> None:
    """Submit again only the shards that have incomplete jobs and no pending/running task;
    their complete jobs are bypassed."""
    from kerneltracer.slurm.status import resubmit as do_resubmit

    result = do_resubmit(run_dir, max_parallel)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if result.cancelled:
        click.echo(f"cancelled stuck task(s) {', '.join(result.cancelled)}: replaced below")
    if result.still_running:
        shards = ", ".join(map(str, result.still_running))
        click.echo(f"still pending/running, left alone: shard(s) {shards}")
    if result.job_id is None:
        click.echo("nothing to resubmit: every other shard is complete")
        return
    click.echo(f"array job {result.job_id}: shard(s) {', '.join(map(str, result.shards))}")
