"""Inductor output code, syntax highlighted, one HTML page per ``inductor_output_code``."""

from __future__ import annotations

from typing import Any

from kerneltracer.analysis.structured_logs.rendering.base import ArtifactPages, RenderContext
from kerneltracer.analysis.structured_logs.rendering.highlight import CSS, highlight_python
from kerneltracer.analysis.structured_logs.rendering.html import render_page
from kerneltracer.analysis.structured_logs.rendering.plan import Artifact


class InductorCodeModule(ArtifactPages):
    name = "inductor_code"
    description = "inductor output code as highlighted HTML"
    envelope_types = ("inductor_output_code",)

    def page(self, ctx: RenderContext, etype: str, entry: dict[str, Any], art: Artifact) -> str:
        meta = entry.get("metadata") or {}
        return render_page(
            "code.html.j2",
            title=f"{entry['display_id']} {art.name.rsplit('/', 1)[-1]}",
            subtitle=str(meta.get("filename", "")) if isinstance(meta, dict) else "",
            css=CSS,
            code_html=highlight_python(entry.get("payload") or ""),
        )
