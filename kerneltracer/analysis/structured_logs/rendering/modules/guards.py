"""Dynamo guards: one HTML table per ``dynamo_guards`` envelope."""

from __future__ import annotations

import orjson

from kerneltracer.analysis.structured_logs.rendering.base import (
    BY_COMPILE_ID,
    IntermediateFile,
    ModuleOutput,
    OutputModule,
    RenderContext,
    by_type,
)
from kerneltracer.analysis.structured_logs.rendering.html import render_page


class GuardsModule(OutputModule):
    name = "guards"
    description = "dynamo guards as HTML tables"

    def required_inputs(self) -> list[IntermediateFile]:
        return [BY_COMPILE_ID, by_type("dynamo_guards")]

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        out = ModuleOutput()
        for entry in ctx.iter_type("dynamo_guards"):
            arts = ctx.plan.files_for(entry["seq"], "dynamo_guards")
            if not arts:
                continue
            try:
                guards = orjson.loads(entry.get("payload") or "[]")
            except orjson.JSONDecodeError:
                continue
            rows = [g for g in guards if isinstance(g, dict)]
            page = render_page(
                "guards.html.j2", title="Guards", compile_id=entry["display_id"], guards=rows
            )
            out.files.extend(ctx.write(a.url, page) for a in arts)
        return out
