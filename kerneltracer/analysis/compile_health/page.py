"""The compile-health page: its body (also embedded in the run report's page) and a
self-contained standalone page around it (no script, no external resource). Every model
id, reason and frame is escaped by jinja2's autoescape."""

from __future__ import annotations

from functools import cache

import jinja2
from markupsafe import Markup

from kerneltracer.analysis.compile_health.diff import CompileDiff
from kerneltracer.analysis.compile_health.fleet import FleetHealth
from kerneltracer.analysis.compile_health.records import PHASES
from kerneltracer.core.templates import html_environment

_MAX_ROWS = 2000
_MAX_COMPILE_IDS = 500  # per job on the page; compile_health.json has them all


@cache
def _environment() -> jinja2.Environment:
    return html_environment("kerneltracer.analysis.compile_health", trim=True)


def render_body(fleet: FleetHealth, *, data_prefix: str = "") -> Markup:
    """The page's content; ``data_prefix`` is where the data files are, from the page."""
    template = _environment().get_template("compile_health_body.html.j2")
    return Markup(
        template.render(
            summary=fleet.summary(),
            jobs=fleet.jobs[:_MAX_ROWS],
            truncated=max(len(fleet.jobs) - _MAX_ROWS, 0),
            phases=PHASES,
            prefix=data_prefix,
            max_compiles=_MAX_COMPILE_IDS,
        )
    )


def render_page(fleet: FleetHealth, *, data_prefix: str = "") -> str:
    template = _environment().get_template("compile_health.html.j2")
    return template.render(
        summary={"source": fleet.source}, body=render_body(fleet, data_prefix=data_prefix)
    )


def render_diff(diff: CompileDiff, run_a: str, run_b: str) -> str:
    template = _environment().get_template("compile_diff.html.j2")
    return template.render(diff=diff, run_a=run_a, run_b=run_b)
