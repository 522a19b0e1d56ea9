"""``kerneltracer config schema|validate``."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def config() -> None:
    """Inspect run configs: JSON Schema, validation and the jobs a config plans."""


@config.command()
def schema() -> None:
    """Print the JSON Schema of a run config."""
    from kerneltracer.config import RunConfig
    from kerneltracer.jsonio import dumps

    click.echo(dumps(RunConfig.model_json_schema()).decode())


@config.command()
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
def validate(path: Path) -> None:
    """Validate CONFIG, its worker interpreters, and list the jobs it plans (nothing runs)."""
    from kerneltracer.orchestrator.expand import plan_jobs
    from kerneltracer.orchestrator.interpreters import worker_interpreters
    from kerneltracer.orchestrator.planning import load_config

    cfg, base_dir = load_config(path)
    jobs = plan_jobs(cfg, base_dir)
    interpreters = worker_interpreters(cfg, path, base_dir, {j.framework for j in jobs})
    for job in jobs:
        click.echo(
            f"{job.key}  ({job.framework}, {job.mode}, device={job.device}, dtype={job.dtype})"
        )
    for framework, python in sorted(interpreters.items()):
        click.echo(f"{framework} workers run in {python}")
    click.echo(f"{path}: ok, {len(jobs)} job(s)")
