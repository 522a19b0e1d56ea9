"""Rich tables shared by ``run`` and ``status``: a models × tracers grid and failure reasons."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kerneltracer.cli.progress import STYLE
from kerneltracer.status import JobStatus


@dataclass(frozen=True)
class JobRow:
    key: str
    model: str
    tracer: str
    mode: str
    status: str  # a JobStatus value, or "pending" when the job never ran
    duration_s: float | None
    peak_rss_bytes: int | None
    reason: str | None


def status_table(rows: list[JobRow]) -> Group:
    tracers = list(dict.fromkeys(f"{r.tracer}" + ("" if r.mode == "eval" else f".{r.mode}") for r in rows))
    grid = Table(title="jobs", show_lines=False)
    grid.add_column("model")
    for t in tracers:
        grid.add_column(t)
    by_model: dict[str, dict[str, JobRow]] = {}
    for r in rows:
        col = r.tracer + ("" if r.mode == "eval" else f".{r.mode}")
        by_model.setdefault(r.model, {})[col] = r
    for model, cells in by_model.items():
        grid.add_row(Text(model), *[_cell(cells.get(t)) for t in tracers])
    problems = [r for r in rows if r.status not in (JobStatus.OK, JobStatus.SKIPPED, "pending")]
    if not problems:
        return Group(grid)
    why = Table(title="not ok", show_lines=False)
    for col in ("job", "status", "reason"):
        why.add_column(col, overflow="fold")
    for r in problems:
        why.add_row(Text(r.key), _cell(r), Text(r.reason or ""))
    return Group(grid, why)


def _cell(row: JobRow | None) -> Text:
    if row is None:
        return Text("-", style="dim")
    known = {s.value for s in JobStatus}
    style = STYLE.get(JobStatus(row.status), "") if row.status in known else "dim"
    took = f" {row.duration_s:.1f}s" if row.duration_s is not None and row.status == "ok" else ""
    return Text(f"{row.status}{took}", style=style)


def summary_line(rows: list[JobRow], wall_s: float | None = None) -> str:
    counts = Counter(r.status for r in rows)
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    took = f" in {wall_s:.1f}s" if wall_s is not None else ""
    return f"{len(rows)} jobs{took}: {parts}"
