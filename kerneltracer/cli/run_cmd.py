"""``kerneltracer run CONFIG``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kerneltracer.cli.options import models_option, split_values


@click.command()
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-j",
    "--jobs",
    default=1,
    show_default=True,
    type=click.IntRange(1, 512),
    help="Workers to run at once (GPU jobs never share a GPU unless --share-gpus).",
)
@click.option(
    "--only",
    multiple=True,
    metavar="TRACER",
    help="Run only these tracers (repeat or comma-separate).",
)
@models_option
@click.option("--force", is_flag=True, help="Re-run jobs even if they are complete.")
@click.option(
    "--verify",
    is_flag=True,
    help="Re-hash every output when checking completeness (default: size + mtime).",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Run dir (default: the config's output_dir).",
)
@click.option(
    "--kill-grace",
    default=5.0,
    show_default=True,
    type=click.FloatRange(0, 600),
    help="Seconds between SIGTERM and SIGKILL when stopping a worker.",
)
@click.option(
    "--share-gpus",
    is_flag=True,
    help="Let several GPU jobs run on one GPU (default: one GPU job per visible GPU).",
)
@click.option(
    "--preload/--no-preload",
    default=True,
    show_default=True,
    help="Fork light jobs from a server that imported the framework once (seconds saved "
    "per job); --no-preload starts every worker as a fresh interpreter.",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N (1-based): a stable slice of the models, all their tracers.",
)
def run(
    config: Path,
    jobs: int,
    only: tuple[str, ...],
    models: tuple[str, ...],
    force: bool,
    verify: bool,
    output_dir: Path | None,
    kill_grace: float,
    share_gpus: bool,
    preload: bool,
    shard: str | None,
) -> None:
    """Trace every (model, tracer) of CONFIG, one isolated worker process per job.

    Complete jobs (ok, same request, outputs intact) are bypassed, so re-running a config
    only runs what is missing or failed. Exit code: 0 if no job failed, 1 if any job ended
    failed/oom/timeout/crashed, 130 if interrupted.
    """
    from kerneltracer.cli.progress import ConsoleObserver
    from kerneltracer.cli.tables import console, status_table, summary_line
    from kerneltracer.core.status import FAILURE_STATUSES
    from kerneltracer.orchestrator import RunRequest, open_run
    from kerneltracer.orchestrator.shard import parse_shard

    err = console(stderr=True)
    request = RunRequest(
        config_path=config,
        output_dir=output_dir,
        only=tuple(split_values(only)),
        models=tuple(split_values(models)),
        force=force,
        verify=verify,
        jobs=jobs,
        kill_grace_s=kill_grace,
        share_gpus=share_gpus,
        preload=preload,
        shard=parse_shard(shard) if shard is not None else None,
    )
    from kerneltracer.cli.download_cmd import DownloadView

    downloads = DownloadView(err)
    try:
        session = open_run(request, downloads)
    finally:
        downloads.close()
    with session:
        err.print(f"run dir: {session.run_dir}", highlight=False)
        observer = ConsoleObserver(err)
        try:
            result = session.execute(observer)
        finally:
            observer.close()
    from kerneltracer.cli.status_cmd import row_of
    from kerneltracer.core.layout import RunPaths
    from kerneltracer.core.rundir import JobRecord, PlannedJob

    # The statuses are known already: those that ran from the result, the rest from the plan.
    planned = {p.job.key: p.status for p in session.plan.jobs}
    rows = []
    paths = RunPaths(session.run_dir)
    for job in session.jobs:
        done = result.statuses.get(job.key)
        raw = done.model_dump(mode="json") if done is not None else planned.get(job.key)
        meta = PlannedJob(key=job.key, model=job.model.display, tracer=job.tracer, mode=job.mode)
        record = JobRecord.known(paths.job(job.key).dir, job.key, raw, meta)
        rows.append(row_of(record))
    out = console()
    out.print(status_table(rows))
    out.print(summary_line(rows, result.wall_s), highlight=False)
    out.print(f"run dir: {session.run_dir}", highlight=False)
    if result.interrupted:
        err.print("interrupted: running jobs were stopped and marked interrupted")
        sys.exit(130)
    if result.stopped_by is not None:
        click.echo(  # one unwrapped line, like every error the CLI prints
            f"error: {result.stopped_by}: the run stopped (running jobs were marked "
            "interrupted); free space and run again to finish it",
            err=True,
        )
        sys.exit(1)
    if any(s.status in FAILURE_STATUSES for s in result.statuses.values()):
        sys.exit(1)
