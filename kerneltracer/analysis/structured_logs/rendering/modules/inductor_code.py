"""Inductor output code, syntax highlighted, one HTML page per ``inductor_output_code``."""

from __future__ import annotations

from kerneltracer.analysis.structured_logs.rendering.base import (
    BY_COMPILE_ID,
    IntermediateFile,
    ModuleOutput,
    OutputModule,
    RenderContext,
    by_type,
)
from kerneltracer.analysis.structured_logs.rendering.highlight import CSS, highlight_python
from kerneltracer.analysis.structured_logs.rendering.html import render_page


class InductorCodeModule(OutputModule):
    name = "inductor_code"
    description = "inductor output code as highlighted HTML"

    def required_inputs(self) -> list[IntermediateFile]:
        return [BY_COMPILE_ID, by_type("inductor_output_code")]

    def generate(self, ctx: RenderContext) -> ModuleOutput:
        out = ModuleOutput()
        for entry in ctx.iter_type("inductor_output_code"):
            meta = entry.get("metadata") or {}
            for art in ctx.plan.files_for(entry["seq"], "inductor_output_code"):
                page = render_page(
                    "code.html.j2",
                    title=f"{entry['display_id']} {art.name.rsplit('/', 1)[-1]}",
                    subtitle=str(meta.get("filename", "")) if isinstance(meta, dict) else "",
                    css=CSS,
                    code_html=highlight_python(entry.get("payload") or ""),
                )
                out.files.append(ctx.write(art.url, page))
        return out
