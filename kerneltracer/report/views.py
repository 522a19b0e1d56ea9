"""Turn collected run data into the small, precomputed rows the templates print.

Templates stay dumb: every number formatted for sorting, every _tooltip and every relative
link is decided here, where it can be unit-tested.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from kerneltracer.core.identity import Variant
from kerneltracer.core.status import FAILURE_STATUSES
from kerneltracer.report.collect import PENDING, PHASES, UNREADABLE, Job, ModelRow

# Sorting a tracer column ascending puts the jobs that need attention first.
_STATUS_RANK = {
    **{s.value: 0 for s in FAILURE_STATUSES},
    UNREADABLE: 1,
    PENDING: 2,
    "ok": 3,
    "unsupported": 4,
    "skipped": 5,
}
_SAFE_PAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Cell:
    column: str
    status: str
    duration: float | None
    rss: int | None
    title: str
    sort: str
    files_href: str | None
    report_href: str | None  # the job's first HTML analysis report, if any
    fake: bool = False  # weights fake: no measured time
    # Skipped alternatives of its exclusive group shown in this cell: "tracer: reason"
    folded: tuple[str, ...] = ()

    @property
    def jobs(self) -> int:
        """Jobs this cell stands for: itself and the alternatives folded into it."""
        return 1 + len(self.folded)


@dataclass(frozen=True)
class GridRow:
    display: str
    page: str
    worst: str
    worst_rank: int
    cells: tuple[Cell | None, ...]
    variant: Variant = field(default_factory=Variant)
    slug: str = ""

    @property
    def jobs(self) -> int:
        return sum(c.jobs for c in self.cells if c is not None)

    @property
    def sort_variant(self) -> str:
        """Defaults first: eval before train, prefill before decode and generate."""
        v = self.variant
        return f"{int(v.mode != 'eval')}{int(v.phase != 'prefill')} {v.mode} {v.phase}"


@dataclass(frozen=True)
class Segment:
    name: str
    percent: float


@dataclass(frozen=True)
class PhaseBar:
    total: float
    segments: tuple[Segment, ...]
    title: str


def page_name(slug: str) -> str:
    """The model page's file name: the slug when it is a safe name, else a hashed one."""
    if _SAFE_PAGE.fullmatch(slug) and len(slug) <= 200:
        return f"{slug}.html"
    digest = hashlib.sha256(slug.encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9._-]+', '-', slug).strip('.-')[:80]}-{digest}.html"


def _job_href(jobs_base: str, job: Job) -> str:
    return f"{jobs_base}{quote(job.slug)}/{quote(job.column)}/"


def grid_rows(
    models: list[ModelRow], tracers: list[str], jobs_base: str, folded: dict[str, str]
) -> list[GridRow]:
    """One row per model variant (model, mode, phase), one column per tracer; skipped
    alternatives of an exclusive group sit in the cell of the member that ran."""
    into: dict[str, list[Job]] = {}
    for model in models:
        for job in model.jobs.values():
            if job.key in folded:
                into.setdefault(folded[job.key], []).append(job)
    rows = []
    for model in models:
        by_variant: dict[Variant, dict[str, Job]] = {}
        for job in model.jobs.values():
            if job.key not in folded:
                by_variant.setdefault(job.variant, {})[job.tracer] = job
        for variant in sorted(by_variant, key=lambda v: v.rank):
            jobs = by_variant[variant]
            cells = tuple(
                _cell(jobs.get(t), jobs_base, into.get(jobs[t].key, []) if t in jobs else [])
                for t in tracers
            )
            worst = _worst({j.status for j in jobs.values()})
            rows.append(
                GridRow(
                    model.display,
                    page_name(model.slug),
                    worst,
                    _STATUS_RANK.get(worst, 9),
                    cells,
                    variant,
                    model.slug,
                )
            )
    return rows


def _worst(states: set[str]) -> str:
    return min(states, key=lambda s: (_STATUS_RANK.get(s, 9), s)) if states else PENDING


def _cell(job: Job | None, jobs_base: str, folded: list[Job]) -> Cell | None:
    if job is None:
        return None
    rank = _STATUS_RANK.get(job.status, 9)
    sort = f"{rank * 1_000_000 + min(job.duration_s or 0.0, 999_999.0):.3f}"
    return Cell(
        column=job.column,
        status=job.status,
        duration=job.duration_s,
        rss=job.peak_rss_bytes,
        title=_tooltip(job, folded),
        sort=sort,
        files_href=_job_href(jobs_base, job) if job.has_dir else None,
        report_href=_report_href(job, jobs_base),
        fake=job.weights == "fake",
        folded=tuple(f"{f.tracer}: {f.status}" for f in folded),
    )


def _report_href(job: Job, jobs_base: str) -> str | None:
    for analysis in job.analyses:
        main = analysis.main_file
        if analysis.done and main is not None and main.endswith(".html"):
            return f"{_job_href(jobs_base, job)}{quote(analysis.rel_dir)}/{quote(main)}"
    return None


def _tooltip(job: Job, folded: list[Job] | None = None) -> str:
    # Duration and RSS are already in the cell; the _tooltip adds who and why.
    text = f"{job.model} · {job.tracer} · {job.variant.label}: {job.status}"
    if job.weights == "fake":
        text += " (weights fake: shapes and ops at full size, no measured time)"
    if job.reason:
        text += f"\n{job.reason}"
    for alt in folded or ():
        text += f"\nalternative {alt.tracer}: {alt.status} (not needed: {job.tracer} ran)"
    return text


def phase_bar(job: Job) -> PhaseBar:
    """Phase shares of the job's wall time; what no phase covers is spawn/import/teardown."""
    measured = sum(max(job.phases.get(p, 0.0), 0.0) for p in PHASES)
    total = max(job.duration_s or 0.0, measured)
    if total <= 0:
        return PhaseBar(0.0, (), "no time recorded")
    segments = [
        Segment(p, round(100 * max(job.phases.get(p, 0.0), 0.0) / total, 2)) for p in PHASES
    ]
    segments.append(Segment("other", round(max(100 - sum(s.percent for s in segments), 0.0), 2)))
    title = ", ".join(f"{s.name} {s.percent:.0f}%" for s in segments if s.percent > 0)
    return PhaseBar(total, tuple(s for s in segments if s.percent > 0), title)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 120:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def fmt_mib(n: int | None) -> str:
    if not n:
        return "–"
    mib = n / (1 << 20)
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def fmt_size(n: int | None) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB"):
        size /= 1024
        if size < 1024:
            return f"{size:.1f} {unit}"
    return f"{size / 1024:.1f} GiB"
