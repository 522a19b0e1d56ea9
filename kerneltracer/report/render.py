"""Render the report pages with jinja2 (autoescape on: model ids, reasons and op names are
untrusted text) into self-contained HTML: CSS and the one script are inlined, and a
Content-Security-Policy lets nothing else load or run."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from kerneltracer.core.templates import html_environment
from kerneltracer.report.collect import PHASES, ModelRow, RunData
from kerneltracer.report.coverage_view import CoverageView
from kerneltracer.report.ops_view import TOP as TOP_OPS
from kerneltracer.report.ops_view import OpsFleetView
from kerneltracer.report.pictures import ModelOps, model_op_charts, op_timeline, run_charts
from kerneltracer.report.ranks_view import RanksView
from kerneltracer.report.readiness_view import ReadinessView
from kerneltracer.report.views import (
    fmt_duration,
    fmt_mib,
    fmt_size,
    grid_rows,
    phase_bar,
)

_MAX_LISTED_FILES = 200
_GRID_PAGE_SIZE = 100  # rows per grid page: a 1,000-model run stays quick to draw and read


@dataclass(frozen=True)
class Assets:
    css: str
    js: str
    script_hash: str  # CSP source expression for the inline script


@cache
def assets() -> Assets:
    templates = resources.files("kerneltracer.report") / "templates"
    js = (templates / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
    return Assets(
        css=(templates / "report.css").read_text(encoding="utf-8"),
        js=js,
        script_hash=f"sha256-{digest}",
    )


@cache
def environment() -> jinja2.Environment:
    return html_environment(
        "kerneltracer.report",
        trim=True,
        filters={"dur": fmt_duration, "mib": fmt_mib, "size": fmt_size, "urlq": _urlq},
    )


def _urlq(value: str) -> str:
    return quote(str(value), safe="/")


def _page(template: str, root: str, **context: Any) -> str:
    # The script and CSS are our own files, marked safe so autoescape leaves them intact;
    # the CSP hash is computed over exactly this text.
    a = assets()
    safe = Assets(Markup(a.css), Markup(a.js), a.script_hash)
    return environment().get_template(template).render(assets=safe, root=root, **context)


def render_index(run: RunData, jobs_base: str, coverage_note: str | None) -> str:
    tracers = run.tracers
    rows = grid_rows(run.models, tracers, jobs_base, run.folded)
    return _page(
        "index.html.j2",
        "",
        run=run,
        rows=rows,
        tracers=tracers,
        coverage_note=coverage_note,
        charts=run_charts(run),
        page_size=_GRID_PAGE_SIZE,
    )


def render_model(run: RunData, model: ModelRow, jobs_base: str, ops: ModelOps | None = None) -> str:
    jobs = sorted(
        (model.jobs[c] for c in run.columns if c in model.jobs),
        key=lambda j: j.variant.rank,
    )
    return _page(
        "model.html.j2",
        "../",
        run=run,
        model=model,
        jobs=jobs,
        jobs_base=jobs_base,
        phase_names=PHASES,
        phase_bars={j.key: phase_bar(j) for j in jobs},
        max_listed=_MAX_LISTED_FILES,
        op_charts=model_op_charts(ops, model),
        op_timelines={j.key: op_timeline(run.run_dir, j) for j in jobs},
    )


def render_coverage(run: RunData, cov: CoverageView) -> str:
    return _page("coverage.html.j2", "", run=run, cov=cov)


def render_ops(run: RunData, view: OpsFleetView, fleet_csv: str) -> str:
    return _page("ops.html.j2", "", run=run, view=view, fleet_csv=fleet_csv, top=TOP_OPS)


def render_readiness(run: RunData, view: ReadinessView) -> str:
    return _page("readiness.html.j2", "", run=run, view=view)


def render_ranks(run: RunData, view: RanksView) -> str:
    return _page("ranks.html.j2", "", run=run, view=view)


def render_compile_health(run: RunData, body: Markup) -> str:
    """The compile-health page: its body comes rendered (and escaped) by compile_health."""
    return _page("compile_health.html.j2", "", run=run, body=body)
