"""How ``kerneltracer slurm`` shows shards: the status table, JSON rows, problems, progress."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from kerneltracer.cli.tables import console

if TYPE_CHECKING:
    from kerneltracer.slurm.follow import Snapshot
    from kerneltracer.slurm.status import ShardReport


def _json_row(r: ShardReport) -> dict[str, Any]:
    return {
        "shard": r.shard,
        "job_id": r.job_id,
        "state": r.state,
        "reason": r.reason,
        "jobs": r.jobs,
        "statuses": dict(r.statuses),
        "incomplete": r.incomplete,
        "node": r.node or None,
        "lost": r.lost,
        "lost_reason": r.lost_reason or None,
        "live": r.live,
        "stuck": r.stuck or None,
        "problem": r.problem or None,
    }


def print_json(reports: list[ShardReport]) -> None:
    from kerneltracer.jsonio import dumps

    for r in reports:
        click.echo(dumps(_json_row(r), indent=False).decode())


def print_table(reports: list[ShardReport]) -> None:
    table = Table("shard", "slurm job", "state", "node", "jobs", "status", "incomplete")
    for r in reports:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items()))
        state = f"{r.state} ({r.reason})" if r.reason and r.reason != "None" else r.state
        style = "red" if r.problem else ""
        table.add_row(
            str(r.shard),
            r.task,
            f"[{style}]{escape(state)}[/]" if style else escape(state),
            escape(r.node or "-"),
            str(r.jobs),
            statuses,
            escape(", ".join(r.incomplete) or "-"),
        )
    console().print(table)


def problem_line(r: ShardReport) -> str:
    return f"shard {r.shard} (slurm job {r.task}): {r.problem}"


def print_problems(reports: list[ShardReport], logs_hint: str) -> None:
    """One ``error:`` line per shard that needs the user, on stderr."""
    problems = [r for r in reports if r.problem]
    for r in problems:
        click.echo(f"error: {problem_line(r)}", err=True)
    for r in reports:
        if r.lost and not r.problem:  # requeued: its task redoes them
            click.echo(
                f"note: shard {r.shard}: {len(r.lost)} job(s) lost ({r.lost_reason}), "
                f"its task runs them again: {', '.join(r.lost)}",
                err=True,
            )
    if any(not r.stuck for r in problems):
        click.echo(f"  task logs: {logs_hint}", err=True)


def progress_line(snapshot: Snapshot, elapsed_s: float) -> str:
    counts = ", ".join(f"{n} {state}" for state, n in sorted(snapshot.task_counts().items()))
    done, total = snapshot.jobs_done()
    minutes, seconds = divmod(int(elapsed_s), 60)
    download = f"download {snapshot.download}; " if snapshot.download else ""
    return f"[{minutes:02d}:{seconds:02d}] {download}tasks: {counts}; jobs done {done}/{total}"
