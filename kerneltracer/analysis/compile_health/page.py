"""The compile-health page: one self-contained HTML file (no script, no external resource;
every model id, reason and frame is escaped by jinja2's autoescape)."""

from __future__ import annotations

from functools import cache

import jinja2

from kerneltracer.analysis.compile_health.fleet import FleetHealth
from kerneltracer.analysis.compile_health.records import PHASES

MAX_ROWS = 2000


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("kerneltracer.analysis.compile_health", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_page(fleet: FleetHealth, *, data_prefix: str = "", back_link: str | None = None) -> str:
    """``data_prefix`` is where the CSV/Parquet files are relative to the page."""
    summary = fleet.summary()
    return (
        _environment()
        .get_template("compile_health.html.j2")
        .render(
            fleet=fleet,
            summary=summary,
            jobs=fleet.jobs[:MAX_ROWS],
            truncated=max(len(fleet.jobs) - MAX_ROWS, 0),
            phases=PHASES,
            prefix=data_prefix,
            back_link=back_link,
        )
    )
