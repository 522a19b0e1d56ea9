"""Progress for ``kerneltracer run``: a live bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from kerneltracer.cli.tables import STYLE

if TYPE_CHECKING:
    from kerneltracer.core.jobspec import JobSpec
    from kerneltracer.core.status import TraceStatus


class ConsoleObserver:
    """Implements the orchestrator's RunObserver for a terminal or a log file."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self.done = 0
        self.total = 0
        self.running: dict[str, float] = {}
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def planned(self, total: int, to_run: int) -> None:
        self.total = to_run
        bypassed = total - to_run
        self.console.print(
            f"{total} job(s): {to_run} to run, {bypassed} already complete (bypassed)"
        )
        if self.live and to_run:
            self.progress = Progress(
                TextColumn("[bold]tracing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("", total=to_run)

    def job_started(self, job: JobSpec) -> None:
        self.running[job.key] = time.monotonic()
        self._refresh()
        if not self.live:
            self.console.print(f"start  {escape(job.key)}", highlight=False)

    def job_finished(self, job: JobSpec, status: TraceStatus) -> None:
        self.running.pop(job.key, None)
        self.done += 1
        style = STYLE.get(status.status.value, "")
        took = f"{status.duration_s:.1f}s" if status.duration_s is not None else ""
        why = f"  {status.reason}" if status.reason and status.status.value != "ok" else ""
        # Keys and reasons are untrusted text: escape them so rich reads no markup in them.
        head = f"[{self.done}/{self.total}] [{style}]{status.status.value:<11}[/]"
        self.console.print(f"{head} {escape(job.key)} {took}{escape(why)}", highlight=False)
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task)
        self._refresh()

    def notice(self, text: str) -> None:
        self.console.print(f"note: {escape(text)}", highlight=False)

    def _refresh(self) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, description=escape(", ".join(self.running)))

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
