"""``build_report(run_dir)``: collect the run, write every page and export, atomically."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.core.layout import REPORT, RunPaths
from kerneltracer.core.oserrors import stops_run
from kerneltracer.jsonio import (
    atomic_write_json,
    atomic_write_text,
    outputs_all_or_none,
    remove_output,
)
from kerneltracer.report.collect import RunData, collect_run
from kerneltracer.report.coverage_view import CoverageView, build_coverage_view, unavailable
from kerneltracer.report.exports import jobs_csv, run_summary
from kerneltracer.report.ops_view import FLEET_CSV, build_ops_view, write_fleet_csv
from kerneltracer.report.pictures import ModelOps
from kerneltracer.report.ranks_view import RanksView, build_ranks_view
from kerneltracer.report.readiness_view import build_readiness_view
from kerneltracer.report.render import (
    render_compile_health,
    render_coverage,
    render_index,
    render_model,
    render_ops,
    render_ranks,
    render_readiness,
)
from kerneltracer.report.views import page_name

_MODELS_DIR = "models"


@dataclass
class ReportResult:
    out_dir: Path
    index: Path
    run: RunData
    pages: list[Path] = field(default_factory=list)
    data_files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def html_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.pages)


def build_report(run_dir: Path, out_dir: Path | None = None) -> ReportResult:
    """Every page and data file of the report, all or none (a full disk changes nothing)."""
    run = collect_run(run_dir)
    paths = RunPaths(run_dir)
    out_dir = out_dir if out_dir is not None else paths.report.dir
    with outputs_all_or_none(out_dir):
        return _build(run, run_dir, paths, out_dir)


def _build(run: RunData, run_dir: Path, paths: RunPaths, out_dir: Path) -> ReportResult:
    models_dir = out_dir / _MODELS_DIR
    models_dir.mkdir(parents=True, exist_ok=True)
    # Links are relative to each page, so the run dir can be copied or served anywhere.
    jobs_base = _rel_dir(paths.jobs, out_dir)
    result = ReportResult(out_dir, out_dir / "index.html", run)

    cov = _coverage(run_dir, out_dir, result)
    result.data_files += [out_dir / f for f in cov.files]
    note = None if cov.available else cov.note

    pages = {_MODELS_DIR + "/" + page_name(m.slug): m for m in run.models}
    ops_by_model = ModelOps.of(cov.coverage) if cov.coverage is not None else None
    for rel, model in pages.items():
        _write(result, out_dir / rel, render_model(run, model, "../" + jobs_base, ops_by_model))
    _remove_stale_pages(models_dir, {Path(rel).name for rel in pages})
    _write(result, out_dir / "coverage.html", render_coverage(run, cov))
    readiness = build_readiness_view(out_dir, cov.displays)
    _write(result, out_dir / "readiness.html", render_readiness(run, readiness))
    ops = build_ops_view(run)
    result.warnings += ops.problems
    result.data_files.append(write_fleet_csv(ops, out_dir / FLEET_CSV))
    _write(result, out_dir / "ops.html", render_ops(run, ops, FLEET_CSV))

    _compile_health(run, run_dir, out_dir, result)
    _write(result, out_dir / "ranks.html", render_ranks(run, _ranks(run_dir, result)))
    result.warnings += [f"jobs ran on {u}" for u in run.untested]
    atomic_write_json(out_dir / "run_summary.json", run_summary(run, note))
    atomic_write_text(out_dir / "jobs.csv", jobs_csv(run.jobs))
    result.data_files += [out_dir / "run_summary.json", out_dir / "jobs.csv"]
    # The index goes last: once it exists, everything it links to does too.
    _write(result, result.index, render_index(run, jobs_base, note))
    return result


def _coverage(run_dir: Path, out_dir: Path, result: ReportResult) -> CoverageView:
    try:
        return build_coverage_view(run_dir, out_dir)
    except Exception as exc:  # one broken input must not cost the whole report
        if isinstance(exc, OSError) and stops_run(exc):  # the report's own disk: it stops
            raise
        why = f"coverage could not be built: {type(exc).__name__}: {exc}"
        result.warnings.append(why)
        return unavailable(why)


def _ranks(run_dir: Path, result: ReportResult) -> RanksView:
    try:
        return build_ranks_view(run_dir)
    except Exception as exc:  # one broken input must not cost the whole report
        if isinstance(exc, OSError) and stops_run(exc):
            raise
        why = f"the per-rank page could not be built: {type(exc).__name__}: {exc}"
        result.warnings.append(why)
        return RanksView("", problems=[why])


def _compile_health(run: RunData, run_dir: Path, out_dir: Path, result: ReportResult) -> None:
    """compile_health.html and its data (compile_health/): jobs with a TORCH_TRACE log."""
    from kerneltracer.analysis.compile_health.export import write_fleet
    from kerneltracer.analysis.compile_health.fleet import FleetHealth, run_health
    from kerneltracer.analysis.compile_health.page import render_body

    try:
        fleet = run_health(run_dir)
        if fleet.jobs:
            result.data_files += write_fleet(fleet, out_dir / REPORT.compile_health)[:-1]
    except Exception as exc:  # one broken input must not cost the whole report
        if isinstance(exc, OSError) and stops_run(exc):  # the report's own disk: it stops
            raise
        result.warnings.append(f"compile health could not be built: {type(exc).__name__}: {exc}")
        fleet = FleetHealth(str(run_dir), problems=[str(exc)])
    body = render_body(fleet, data_prefix=f"{REPORT.compile_health}/")
    _write(result, out_dir / "compile_health.html", render_compile_health(run, body))


def _write(result: ReportResult, path: Path, html: str) -> None:
    atomic_write_text(path, html)
    result.pages.append(path)


def _rel_dir(target: Path, start: Path) -> str:
    rel = os.path.relpath(target.resolve(), start.resolve()).replace(os.sep, "/")
    return rel.rstrip("/") + "/"


def _remove_stale_pages(models_dir: Path, keep: set[str]) -> None:
    # Pages of models no longer in the run would link to job dirs that may be gone.
    for page in models_dir.glob("*.html"):
        if page.name not in keep:
            remove_output(page)
