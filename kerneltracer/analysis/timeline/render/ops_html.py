"""The ``ops.html`` page: per-op GPU time, roofline and kernels by op (self-contained)."""

from __future__ import annotations

from typing import Any

import jinja2


def render_ops_html(
    summary: dict[str, Any],
    rows: list[dict[str, Any]],
    kernels: list[dict[str, Any]],
    title: str = "",
) -> str:
    from kerneltracer.analysis.timeline.analyses.attribution import STATUS_TEXT

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kerneltracer.analysis.timeline.render", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("ops.html.j2").render(
        title=title,
        s=summary,
        rows=rows,
        kernels=kernels,
        total=summary["gpu_time_us"],
        reasons=STATUS_TEXT,
    )
