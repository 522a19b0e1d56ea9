"""``kerneltracer download CONFIG``: get every model of a config ready, trace nothing.

Also home of :class:`DownloadView`, the download observer for a terminal (a bar per model
with bytes and files) or a log (one line per model), which ``run`` can pass to ``open_run``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kerneltracer.cli.options import models_option, split_values

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from kerneltracer.core.jobspec import ModelRef
    from kerneltracer.orchestrator.download import DownloadProgress, ModelDownload


class DownloadView:
    """Implements the orchestrator's DownloadObserver: live bars on a terminal, else lines."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress: Progress | None = None
        self.tasks: dict[str, TaskID] = {}

    def download_started(self, model: ModelRef) -> None:
        if not self.console.is_terminal:
            return
        from rich.markup import escape

        if self.progress is None:
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn("[bold]download[/] {task.description}"),
                BarColumn(),
                DownloadColumn(),
                TextColumn("{task.fields[files]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
        self.tasks[model.slug] = self.progress.add_task(escape(model.display), total=None, files="")

    def download_progress(self, model: ModelRef, progress: DownloadProgress) -> None:
        task = self.tasks.get(model.slug)
        if self.progress is None or task is None:
            return
        self.progress.update(
            task,
            completed=progress.done_bytes,
            total=progress.total_bytes or None,
            files=f"{progress.done_files}/{progress.total_files} files",
        )

    def download_finished(self, model: ModelRef, result: ModelDownload) -> None:
        from rich.markup import escape

        task = self.tasks.pop(model.slug, None)
        if self.progress is not None and task is not None:
            self.progress.remove_task(task)
        if result.ok and not result.fetched:
            return  # already complete on disk: nothing worth a line
        style = "green" if result.ok else "red"
        rev = f"@{result.resolved_revision[:12]}" if result.resolved_revision else ""
        why = f"  {result.reason}" if result.reason else ""
        took = f" {result.duration_s:.1f}s" if result.fetched else ""
        self.console.print(
            f"[{style}]{result.outcome.value:<18}[/] {escape(result.model + rev)}{took}"
            f"{_config_only(result)}{escape(why)}",
            highlight=False,
        )

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _config_only(result: ModelDownload) -> str:
    if result.weights != "fake":
        return ""
    return "  (config only: weights fake, no weight file fetched)"


@click.command()
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@models_option
@click.option(
    "-j",
    "--max-workers",
    type=click.IntRange(1, 64),
    help="Models downloaded at once (default: the config's download.max_workers).",
)
@click.option(
    "--refresh",
    is_flag=True,
    help="Ask the hub where branch revisions point now, even if the cache is complete.",
)
def download(config: Path, models: tuple[str, ...], max_workers: int | None, refresh: bool) -> None:
    """Download and check every model of CONFIG, as `run` does before tracing.

    Hub models go to the Hugging Face cache (HF_HOME, HF_ENDPOINT, HF_HUB_OFFLINE and
    HF_TOKEN are honoured); local `path:` models are checked in place. Exit code 0 if every
    model is ready, 1 otherwise.
    """
    from rich.markup import escape

    from kerneltracer.cli.tables import console
    from kerneltracer.orchestrator import select_jobs
    from kerneltracer.orchestrator.download import ensure_models_downloaded
    from kerneltracer.orchestrator.expand import plan_jobs
    from kerneltracer.orchestrator.planning import load_config

    cfg, base_dir = load_config(config)
    patterns = tuple(split_values(models))
    jobs = select_jobs(plan_jobs(cfg, base_dir), (), patterns)
    refs = list({job.model.slug: job.model for job in jobs}.values())
    view = DownloadView(console(stderr=True))
    try:
        results = ensure_models_downloaded(
            refs, cfg.download, max_workers=max_workers, observer=view, refresh=refresh
        )
    finally:
        view.close()
    out = console()
    failed = [r for r in results.values() if not r.ok]
    for r in results.values():
        rev = r.resolved_revision or "-"
        where = escape(r.local_dir or r.reason or "")
        out.print(
            f"{r.outcome.value:<18} {escape(r.model)}  {rev}  {where}{_config_only(r)}",
            highlight=False,
        )
    fake = sum(r.weights == "fake" for r in results.values())
    note = f" ({fake} config only, weights: fake)" if fake else ""
    out.print(f"{len(results) - len(failed)}/{len(results)} model(s) ready{note}", highlight=False)
    if failed:
        sys.exit(1)
