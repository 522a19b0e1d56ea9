"""Run the selected modules over one intermediate directory (one rank)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kerneltracer.analysis.structured_logs.rendering.base import (
    OutputModule,
    RenderConfig,
    RenderContext,
)
from kerneltracer.errors import MissingIntermediateError


@dataclass
class RenderReport:
    files: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def render_one(
    inter: Path, out: Path, modules: list[OutputModule], config: RenderConfig
) -> RenderReport:
    ctx = RenderContext(inter, out, config)
    try:
        return _run_modules(ctx, inter, modules)
    finally:
        ctx.flush()


def _run_modules(ctx: RenderContext, inter: Path, modules: list[OutputModule]) -> RenderReport:
    report = RenderReport()
    for module in modules:
        missing = [
            f for f in module.required_inputs() if f.kind != "by_type" and not f.exists(inter)
        ]
        if missing:
            raise MissingIntermediateError(
                f"render module {module.name} needs {', '.join(f.kind for f in missing)} in {inter}"
            )
        result = module.generate(ctx)
        ctx.links.extend(result.index_links)
        report.files.extend(result.files)
        report.modules.append(module.name)
    return report
