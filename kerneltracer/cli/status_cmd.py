"""``kerneltracer status RUN_DIR``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from kerneltracer.cli.tables import JobRow
    from kerneltracer.core.rundir import JobRecord


def collect(run_dir: Path, keys: set[str] | None = None) -> list[JobRow]:
    """One row per job the run planned (run.json, or a shard's run.shard-*.json) or that has
    started; only ``keys`` when given."""
    from kerneltracer.core.rundir import RunDir

    return [row_of(record) for record in RunDir.open(run_dir).records(keys)]


def row_of(record: JobRecord) -> JobRow:
    """A table row from a job record: its status file, else the run manifest's entry."""
    # Here, not at the top: the table module loads rich, which `status --help` never needs.
    from kerneltracer.cli.tables import JobRow
    from kerneltracer.core.rundir import UNREADABLE

    state = record.state
    # problem, not status: a status file as we write it needs no pydantic to read; one
    # pydantic converts (a "3.5" duration) is shown as converted.
    raw = None if record.problem is not None else record.values
    if raw is None:
        return JobRow(
            record.key,
            record.model,
            record.tracer,
            record.mode,
            state,
            None,
            None,
            record.problem_text if state == UNREADABLE else None,
            phase=record.phase,
        )
    return JobRow(
        key=record.key,
        model=record.model,
        tracer=record.tracer,
        mode=record.mode,
        status=state,
        duration_s=raw.get("duration_s"),
        peak_rss_bytes=raw.get("tree_peak_rss_bytes") or raw.get("peak_rss_bytes"),
        reason=raw.get("reason"),
        weights=str(raw.get("weights") or "real"),
        phase=record.phase,
    )


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per job instead.")
@click.option("--full", is_flag=True, help="Always print the full models × tracers grid.")
def status(run_dir: Path, as_json: bool, full: bool) -> None:
    """Show every job of RUN_DIR: models × tracers with status, and why any is not ok."""
    from dataclasses import asdict

    from kerneltracer.cli.tables import console, status_table, summary_line
    from kerneltracer.jsonio import dumps

    rows = collect(run_dir)
    if as_json:
        for row in rows:
            click.echo(dumps(asdict(row), indent=False).decode())
        return
    con = console()
    con.print(status_table(rows, full=full))
    con.print(summary_line(rows), highlight=False)
