"""The ``ops.html`` page: per-op GPU time, roofline and kernels by op (self-contained)."""

from __future__ import annotations

from typing import Any

from kerneltracer.core.templates import html_environment


def render_ops_html(
    summary: dict[str, Any],
    rows: list[dict[str, Any]],
    kernels: list[dict[str, Any]],
    title: str = "",
) -> str:
    from kerneltracer.analysis.timeline.analyses.attribution import STATUS_TEXT

    env = html_environment("kerneltracer.analysis.timeline.render")
    return env.get_template("ops.html.j2").render(
        title=title,
        s=summary,
        rows=rows,
        kernels=kernels,
        total=summary["gpu_time_us"],
        reasons=STATUS_TEXT,
    )
