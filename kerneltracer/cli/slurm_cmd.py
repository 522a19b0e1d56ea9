"""``kerneltracer slurm submit|status|resubmit``: run a config as a Slurm job array."""

from __future__ import annotations

import sys
from pathlib import Path

import click


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
def submit(
    config: Path,
    dry_run: bool,
    partition: str | None,
    array_size: int | None,
    max_parallel: int | None,
) -> None:
    """Submit a download job, then a job array that depends on it (afterok).

    Task I runs `kerneltracer run CONFIG --shard I/N`; scripts and per-task logs go to
    RUN_DIR/slurm/.
    """
    from kerneltracer.slurm import submit as sub

    prepared = sub.prepare(
        config, partition=partition, array_size=array_size, max_parallel=max_parallel
    )
    if dry_run:
        tasks = list(range(1, prepared.spec.shards + 1))
        click.echo(f"# {prepared.download_path}  (sbatch --parsable)")
        click.echo(prepared.download_script)
        args = " ".join(prepared.array_args(tasks, "<download job id>"))
        click.echo(f"# {prepared.array_path}  (sbatch --parsable {args})")
        click.echo(prepared.array_script, nl=False)
        return
    record = sub.submit(prepared)
    array = record.arrays[-1]
    click.echo(f"download job {record.download_job}")
    click.echo(f"array job {array.job_id}: {record.shards} shard(s), after the download")
    click.echo(f"run dir: {record.run_dir}   (kerneltracer slurm status {record.run_dir})")


@slurm.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per shard.")
def status(run_dir: Path, as_json: bool) -> None:
    """Each shard's array task state (squeue/sacct, or scontrol + the job-completion log)
    with its jobs' status. Exit 1 if any shard has incomplete jobs and no live task."""
    from kerneltracer.cli.tables import console
    from kerneltracer.jsonio import dumps
    from kerneltracer.slurm.status import shard_reports

    reports = shard_reports(run_dir)
    if as_json:
        for r in reports:
            row = {
                "shard": r.shard,
                "job_id": r.job_id,
                "state": r.state,
                "reason": r.reason,
                "jobs": r.jobs,
                "statuses": dict(r.statuses),
                "incomplete": r.incomplete,
                "live": r.live,
            }
            click.echo(dumps(row, indent=False).decode())
    else:
        from rich.table import Table

        table = Table("shard", "slurm job", "state", "jobs", "status", "incomplete")
        for r in reports:
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items()))
            state = f"{r.state} ({r.reason})" if r.reason and r.reason != "None" else r.state
            task = f"{r.job_id}_{r.shard}" if r.job_id else "-"
            table.add_row(
                str(r.shard), task, state, str(r.jobs), statuses, ", ".join(r.incomplete) or "-"
            )
        console().print(table)
    if any(r.incomplete and not r.live for r in reports):
        sys.exit(1)


@slurm.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--max-parallel", type=click.IntRange(1, 100_000), help="Array tasks at once.")
def resubmit(run_dir: Path, max_parallel: int | None) -> None:
    """Submit again only the shards that have incomplete jobs and no pending/running task;
    their complete jobs are bypassed."""
    from kerneltracer.slurm.status import resubmit as do_resubmit

    result = do_resubmit(run_dir, max_parallel)
    if result.still_running:
        shards = ", ".join(map(str, result.still_running))
        click.echo(f"still pending/running, left alone: shard(s) {shards}")
    if result.job_id is None:
        click.echo("nothing to resubmit: every other shard is complete")
        return
    click.echo(f"array job {result.job_id}: shard(s) {', '.join(map(str, result.shards))}")
