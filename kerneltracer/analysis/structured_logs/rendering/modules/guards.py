"""Dynamo guards: one HTML table per ``dynamo_guards`` envelope."""

from __future__ import annotations

from typing import Any

import orjson

from kerneltracer.analysis.structured_logs.rendering.base import ArtifactPages, RenderContext
from kerneltracer.analysis.structured_logs.rendering.html import render_page
from kerneltracer.analysis.structured_logs.rendering.plan import Artifact


class GuardsModule(ArtifactPages):
    name = "guards"
    description = "dynamo guards as HTML tables"
    envelope_types = ("dynamo_guards",)

    def page(
        self, ctx: RenderContext, etype: str, entry: dict[str, Any], art: Artifact
    ) -> str | None:
        try:
            guards = orjson.loads(entry.get("payload") or "[]")
        except orjson.JSONDecodeError:
            return None
        rows = [g for g in guards if isinstance(g, dict)]
        return render_page(
            "guards.html.j2", title="Guards", compile_id=entry["display_id"], guards=rows
        )
