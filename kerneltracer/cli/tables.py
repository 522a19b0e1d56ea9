"""Rich tables shared by ``run`` and ``status``: a models × tracers grid and failure reasons."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kerneltracer.core.identity import DEFAULT_PHASE, Variant, collapsed_alternatives, variant_of

# Keyed by status value so the CLI can style without importing the config/pydantic stack;
# here, not beside `run`'s live bar, so that `status` loads no rich.progress.
STYLE = {
    "ok": "green",
    "skipped": "cyan",
    "unsupported": "yellow",
    "failed": "red",
    "oom": "magenta",
    "timeout": "red",
    "crashed": "bold red",
    "interrupted": "yellow",
    "unreadable": "red",
}


@dataclass(frozen=True)
class JobRow:
    key: str
    model: str
    tracer: str
    mode: str
    status: str  # JobRecord.state: a JobStatus value, "pending" or "unreadable"
    duration_s: float | None
    peak_rss_bytes: int | None
    reason: str | None
    weights: str = "real"  # "fake": traced from the config on fake tensors
    phase: str = DEFAULT_PHASE

    @property
    def variant(self) -> Variant:
        return variant_of(self.mode, self.phase)


def console(stderr: bool = False) -> Console:
    """A rich console; off a terminal (logs, CI, pipes) wide enough not to fold the grid."""
    con = Console(stderr=stderr)
    return con if con.is_terminal else Console(stderr=stderr, width=200)


_GRID_LIMIT = 60  # beyond this a terminal grid is noise: show counts and problems only
_PROBLEM_LIMIT = 50


def status_table(rows: list[JobRow], full: bool = False) -> Group:
    if len(rows) > _GRID_LIMIT and not full:
        return Group(_counts_table(rows), *_problems(rows))
    folded = collapsed_alternatives({r.key: (r.status, r.reason) for r in rows})
    shown = [r for r in rows if r.key not in folded]
    alternatives = Counter(folded.values())
    tracers = list(dict.fromkeys(r.tracer for r in shown))
    models = {r.model for r in rows}
    variants = {(r.model, r.variant) for r in rows}
    grid = Table(title=f"jobs: {len(models)} models, {len(variants)} model variants")
    grid.add_column("model")
    grid.add_column("mode · phase")
    for t in tracers:
        grid.add_column(t)
    by_variant: dict[tuple[str, Variant], dict[str, JobRow]] = {}
    for r in sorted(shown, key=lambda r: r.variant.rank):
        by_variant.setdefault((r.model, r.variant), {})[r.tracer] = r
    for (model, variant), cells in sorted(
        by_variant.items(), key=lambda kv: _model_order(rows)[kv[0][0]]
    ):
        grid.add_row(
            Text(model),
            Text(variant.label),
            *[
                _cell(cells.get(t), alternatives.get(cells[t].key, 0) if t in cells else 0)
                for t in tracers
            ],
        )
    return Group(grid, *_problems(rows))


def _model_order(rows: list[JobRow]) -> dict[str, int]:
    return {m: i for i, m in enumerate(dict.fromkeys(r.model for r in rows))}


def _counts_table(rows: list[JobRow]) -> Table:
    per: dict[str, Counter[str]] = {}
    for r in rows:
        per.setdefault(r.tracer + r.variant.suffix, Counter())[r.status] += 1
    states = sorted({r.status for r in rows})
    models = len({r.model for r in rows})
    table = Table(
        title=f"jobs by tracer ({len(rows)} jobs of {models} models; "
        "`kerneltracer status --full` for the grid)"
    )
    table.add_column("tracer [mode, phase]")
    for state in states:
        table.add_column(state, justify="right")
    for tracer, counts in per.items():
        table.add_row(tracer, *[str(counts.get(s, 0)) for s in states])
    return table


def _problems(rows: list[JobRow]) -> list[Table]:
    problems = [r for r in rows if r.status not in ("ok", "skipped", "pending")]
    if not problems:
        return []
    shown = problems[:_PROBLEM_LIMIT]
    more = len(problems) - len(shown)
    why = Table(title="not ok" + (f" (first {len(shown)} of {len(problems)})" if more else ""))
    for col in ("job", "status", "reason"):
        why.add_column(col, overflow="fold")
    for r in shown:
        why.add_row(Text(r.key), _cell(r), Text(r.reason or ""))
    return [why]


def _cell(row: JobRow | None, alternatives: int = 0) -> Text:
    if row is None:
        return Text("-", style="dim")
    style = STYLE.get(row.status, "dim")
    took = f" {row.duration_s:.1f}s" if row.duration_s is not None and row.status == "ok" else ""
    fake = " fake" if row.weights == "fake" else ""
    # Skipped alternatives of its exclusive group live in the winner's cell, not in columns.
    alt = f" (+{alternatives} alt. skipped)" if alternatives else ""
    return Text(f"{row.status}{fake}{took}{alt}", style=style)


def summary_line(rows: list[JobRow], wall_s: float | None = None) -> str:
    counts = Counter(r.status for r in rows)
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    took = f" in {wall_s:.1f}s" if wall_s is not None else ""
    fake = sum(r.weights == "fake" for r in rows)
    note = f" ({fake} with weights fake: shapes and ops, no measured time)" if fake else ""
    return f"{len(rows)} jobs{took}: {parts}{note}"
